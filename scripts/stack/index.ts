/**
 * The local stack: PostgreSQL, Apache Kafka and the schema registry on loopback, without Docker.
 * `stackUp()` is idempotent (running services are reused), awaits readiness by probing, and
 * writes the connection settings to `.stack/env` as KEY=value lines.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { StackConfig } from './config.js';
import { stackConfig } from './config.js';
import { fetchKafka, fetchRegistry } from './fetch.js';
import { kafkaPidFile, kafkaReady, startKafka, stopKafka } from './kafka.js';
import { databaseUrl, postgresRunning, startPostgres, stopPostgres } from './postgres.js';
import { preflight } from './preflight.js';
import { registryReady, registryTlsUrl, registryUrl, startRegistry, stopRegistry } from './registry.js';
import { ensureStackTls, tlsFiles } from './tls.js';

export type StackEnv = Readonly<
  Record<
    | 'KAFKA_BROKERS'
    | 'SCHEMA_REGISTRY_URL'
    | 'DATABASE_URL'
    | 'KAFKA_LIBS'
    | 'STACK_KAFKA_PID_FILE'
    | 'STACK_KAFKA_SASL_BROKERS'
    | 'STACK_KAFKA_SASL_USERNAME'
    | 'STACK_KAFKA_SASL_PASSWORD_FILE'
    | 'STACK_KAFKA_SSL_BROKERS'
    | 'STACK_KAFKA_SSL_CA_FILE'
    | 'STACK_KAFKA_SASL_SSL_BROKERS'
    | 'STACK_REGISTRY_TLS_URL'
    | 'STACK_REGISTRY_CA_FILE',
    string
  >
>;

function envOf(cfg: StackConfig): StackEnv {
  return {
    KAFKA_BROKERS: `127.0.0.1:${cfg.kafka.port}`,
    SCHEMA_REGISTRY_URL: registryUrl(cfg),
    DATABASE_URL: databaseUrl(cfg, 'cegw'),
    KAFKA_LIBS: cfg.kafka.libsDir,
    STACK_KAFKA_PID_FILE: kafkaPidFile(cfg),
    // The SASL_PLAINTEXT SCRAM-SHA-512 listener and its user (the password stays in its file).
    STACK_KAFKA_SASL_BROKERS: `127.0.0.1:${cfg.kafka.saslPort}`,
    STACK_KAFKA_SASL_USERNAME: cfg.kafka.saslUser,
    STACK_KAFKA_SASL_PASSWORD_FILE: cfg.kafka.saslPasswordFile,
    // The SSL listener and the registry's HTTPS port, both with the stack CA's certificate.
    STACK_KAFKA_SSL_BROKERS: `127.0.0.1:${cfg.kafka.sslPort}`,
    STACK_KAFKA_SSL_CA_FILE: tlsFiles(cfg.tlsDir).caFile,
    STACK_KAFKA_SASL_SSL_BROKERS: `127.0.0.1:${cfg.kafka.saslSslPort}`,
    STACK_REGISTRY_TLS_URL: registryTlsUrl(cfg),
    STACK_REGISTRY_CA_FILE: tlsFiles(cfg.tlsDir).caFile,
  };
}

export async function stackUp(log: (line: string) => void = () => {}): Promise<StackEnv> {
  const cfg = stackConfig();
  const tools = await preflight();
  mkdirSync(cfg.stateDir, { recursive: true });
  await Promise.all([fetchKafka(cfg, tools), fetchRegistry(cfg, tools)]);
  log('starting PostgreSQL');
  await startPostgres(cfg, tools);
  // Made here once, before the two services that use it start side by side.
  await ensureStackTls(cfg.tlsDir);
  log('starting Kafka and the schema registry');
  await Promise.all([startKafka(cfg, tools), startRegistry(cfg, tools)]);
  const env = envOf(cfg);
  writeFileSync(cfg.envFile, Object.entries(env).map(([k, v]) => `${k}=${v}\n`).join(''), { mode: 0o600 });
  return env;
}

export async function stackDown(): Promise<void> {
  const cfg = stackConfig();
  const tools = await preflight();
  // The registry first (it holds database connections), PostgreSQL last.
  await Promise.all([stopRegistry(cfg), stopKafka(cfg)]);
  await stopPostgres(cfg, tools);
  rmSync(cfg.envFile, { force: true });
}

/** What the stack keeps in its state folder; anything else there means the folder is not only the stack's. */
const STATE_ENTRIES = new Set(['env', 'kafka', 'registry', 'tls', 'postgres']);

/**
 * Deletes the stopped stack's state: its state folder (Kafka's topics, offsets and consumer groups,
 * the registry's files, the TLS files, `env`) and PostgreSQL's folder (the registry's schemas),
 * never the download cache. Returns the folders deleted.
 * Errors: refuses (throws, deleting nothing) when the state folder holds anything the stack does
 * not make: `CE_GATEWAY_STACK_DIR` may name any folder, and this deletes recursively.
 */
export function clearStackState(cfg: StackConfig = stackConfig()): string[] {
  if (existsSync(cfg.stateDir)) {
    const foreign = readdirSync(cfg.stateDir).filter((e) => !STATE_ENTRIES.has(e));
    if (foreign.length > 0) throw new Error(`${cfg.stateDir} holds ${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ', …' : ''}, which the stack did not make: not deleting it; stop the stack and delete what you mean to by hand`);
  }
  const folders = [cfg.stateDir, dirname(cfg.postgres.dataDir)];
  for (const f of folders) rmSync(f, { recursive: true, force: true });
  return folders;
}

/**
 * `npm run stack:reset`: stops the stack, deletes its state ({@link clearStackState}) and starts
 * it again: a broker without the topics and partitions that tests and benches leave behind (they
 * add up to thousands and slow the broker; BENCHMARKS.md), and a registry without schemas.
 */
export async function stackReset(log: (line: string) => void = () => {}): Promise<StackEnv> {
  await stackDown();
  for (const f of clearStackState()) log(`deleted ${f}`);
  return stackUp(log);
}

export interface StackStatus {
  readonly postgres: boolean;
  readonly kafka: boolean;
  readonly registry: boolean;
}

export async function stackStatus(): Promise<StackStatus> {
  const cfg = stackConfig();
  const tools = await preflight();
  const ok = (p: Promise<boolean>): Promise<boolean> => p.catch(() => false);
  const [postgres, kafka, registry] = await Promise.all([ok(postgresRunning(cfg, tools)), ok(kafkaReady(cfg)), ok(registryReady(cfg))]);
  return { postgres, kafka, registry };
}

/** The settings of a running stack from `.stack/env`, or undefined when none was written. */
export function readStackEnv(): StackEnv | undefined {
  const file = stackConfig().envFile;
  if (!existsSync(file)) return undefined;
  const entries = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.includes('='))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const);
  return Object.fromEntries(entries) as StackEnv;
}

export { stackConfig };
