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
import type { Tools } from './preflight.js';
import { foreignPortsMessage, portClashes, postmasterPid, stackPorts, takenPorts, takenPortsMessage } from './ports.js';
import type { StackPort, StackService, TakenPort } from './ports.js';
import { readPid } from './process.js';
import { registryPidFile, registryReady, registryTlsUrl, registryUrl, startRegistry, stopRegistry } from './registry.js';
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

/**
 * `npm run stack:up`: starts PostgreSQL, then Kafka and the registry, and writes the env file;
 * services already running from this state folder are kept. Before anything starts (or is
 * fetched), every port of the stack is checked: one that another process holds, or two settings
 * naming one port, stop it with each port, its setting and what holds it ({@link takenPortsMessage}).
 * A failure later (a port taken in between, a service that does not come up) stops the services
 * this run started before the error goes on, so no half stack is left behind.
 * Errors: Error with the reason (the CLI prints it and exits 2).
 */
/** This state folder's running services and their pids (from their pid files). */
function ownServices(cfg: StackConfig): { readonly ours: ReadonlySet<number>; readonly running: ReadonlySet<StackService> } {
  const pids = { kafka: readPid(kafkaPidFile(cfg)), registry: readPid(registryPidFile(cfg)), postgres: postmasterPid(cfg.postgres.dataDir) };
  const running = new Set<StackService>([
    ...(pids.kafka === undefined ? [] : (['Kafka'] as const)),
    ...(pids.registry === undefined ? [] : (['the schema registry'] as const)),
    ...(pids.postgres === undefined ? [] : (['PostgreSQL'] as const)),
  ]);
  const ours = new Set([pids.kafka, pids.registry, pids.postgres].filter((p): p is number => p !== undefined));
  return { ours, running };
}

/** The stack's ports that processes other than this state folder's services hold. Never throws. */
async function foreignPorts(cfg: StackConfig, ports: readonly StackPort[] = stackPorts(cfg)): Promise<TakenPort[]> {
  const { ours, running } = ownServices(cfg);
  return takenPorts(ports, ours, running);
}

/**
 * `stack:status`'s note on the ports of this stack that something else holds (another checkout's
 * stack, a process of its own), or undefined when there are none. The status lines probe Kafka and
 * the registry on their ports and PostgreSQL in this state folder, so from a checkout beside a
 * running stack they said `postgres: down`, `kafka: up`, `registry: up`: neither true of this
 * checkout nor of the stack that answers. Never throws.
 */
export async function stackStatusNote(): Promise<string | undefined> {
  const taken = await foreignPorts(stackConfig());
  return taken.length === 0 ? undefined : foreignPortsMessage(taken);
}

export async function stackUp(log: (line: string) => void = () => {}): Promise<StackEnv> {
  const cfg = stackConfig();
  const tools = await preflight();
  const ports = stackPorts(cfg);
  const clashes = portClashes(ports);
  if (clashes.length > 0) throw new Error(`not starting: ${clashes.join('; ')} (each service needs its own port); nothing was started`);
  const { ours, running } = ownServices(cfg);
  const taken = await takenPorts(ports, ours, running);
  if (taken.length > 0) throw new Error(takenPortsMessage(taken));
  mkdirSync(cfg.stateDir, { recursive: true });
  await Promise.all([fetchKafka(cfg, tools), fetchRegistry(cfg, tools)]);
  try {
    log('starting PostgreSQL');
    await startPostgres(cfg, tools);
    // Made here once, before the two services that use it start side by side.
    await ensureStackTls(cfg.tlsDir);
    log('starting Kafka and the schema registry');
    // allSettled: a failure of one must not leave the other starting unseen while this run stops.
    const started = await Promise.allSettled([startKafka(cfg, tools), startRegistry(cfg, tools)]);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  } catch (err) {
    const stopped = await stopStartedHere(cfg, tools, running);
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(stopped.length === 0 ? reason : `${reason}\nstopped what this run had started (${stopped.join(', ')}): no half stack is left running`, { cause: err });
  }
  const env = envOf(cfg);
  writeFileSync(cfg.envFile, Object.entries(env).map(([k, v]) => `${k}=${v}\n`).join(''), { mode: 0o600 });
  return env;
}

/**
 * Stops the services a failed `stack:up` started (those not in `wasRunning`), registry first,
 * PostgreSQL last, as `stack:down` does. Returns their names. Never throws: a stop that fails is
 * named as such, the start's error is the one reported.
 */
async function stopStartedHere(cfg: StackConfig, tools: Tools, wasRunning: ReadonlySet<StackService>): Promise<string[]> {
  const out: string[] = [];
  const stop = async (service: StackService, running: () => boolean | Promise<boolean>, fn: () => Promise<unknown>): Promise<void> => {
    if (wasRunning.has(service) || !(await running())) return;
    try {
      await fn();
      out.push(service);
    } catch (err) {
      out.push(`${service}: stop failed, ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  await Promise.all([
    stop('the schema registry', () => readPid(registryPidFile(cfg)) !== undefined, () => stopRegistry(cfg)),
    stop('Kafka', () => readPid(kafkaPidFile(cfg)) !== undefined, () => stopKafka(cfg)),
  ]);
  await stop('PostgreSQL', () => postgresRunning(cfg, tools), () => stopPostgres(cfg, tools));
  return out;
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
