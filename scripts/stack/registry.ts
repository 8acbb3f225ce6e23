/**
 * Apicurio Registry (Confluent-compatible API under /apis/ccompat/v7), with SQL storage in a
 * database of its own on the stack's PostgreSQL, so schema ids live as long as Kafka's data.
 * Its global compatibility rule is set at start: without it Apicurio answers GET /config/{subject}
 * with a default that makes the Confluent client's first register() fail (DESIGN.md).
 * HTTPS is served next to HTTP on `tlsPort` with the stack CA's server certificate (Quarkus
 * `quarkus.http.ssl-port`, `quarkus.http.ssl.certificate.files`/`key-files`; issue 11). A running
 * registry started with other arguments (an older stack) is restarted, so `stack:up` upgrades it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StackConfig } from './config.js';
import { registryJar } from './fetch.js';
import type { Tools } from './preflight.js';
import { awaitReady, readPid, startDetached, stopProcess } from './process.js';
import { ensureStackTls } from './tls.js';

export function registryUrl(cfg: StackConfig): string {
  return `http://127.0.0.1:${cfg.registry.port}/apis/ccompat/v7`;
}

/** The same API over HTTPS (trust `<tlsDir>/ca.pem`). */
export function registryTlsUrl(cfg: StackConfig): string {
  return `https://127.0.0.1:${cfg.registry.tlsPort}/apis/ccompat/v7`;
}

export async function registryReady(cfg: StackConfig): Promise<boolean> {
  const res = await fetch(`${registryUrl(cfg)}/subjects`, { signal: AbortSignal.timeout(2000) });
  return res.ok;
}

/** The registry's pid file (process.ts `readPid`). */
export function registryPidFile(cfg: StackConfig): string {
  return join(cfg.registry.dir, 'pid');
}

export async function startRegistry(cfg: StackConfig, tools: Tools): Promise<void> {
  mkdirSync(cfg.registry.dir, { recursive: true });
  const pidFile = registryPidFile(cfg);
  const logFile = join(cfg.registry.dir, 'registry.log');
  const argsFile = join(cfg.registry.dir, 'args');
  const tls = await ensureStackTls(cfg.tlsDir);
  const args = [
      `-Xmx${cfg.registry.heapMb}m`,
      `-Dquarkus.http.host=127.0.0.1`,
      `-Dquarkus.http.port=${cfg.registry.port}`,
      `-Dquarkus.http.ssl-port=${cfg.registry.tlsPort}`,
      `-Dquarkus.http.ssl.certificate.files=${tls.certFile}`,
      `-Dquarkus.http.ssl.certificate.key-files=${tls.keyFile}`,
      // HTTP stays served next to HTTPS (the default registry URL of the stack).
      '-Dquarkus.http.insecure-requests=enabled',
      '-Dquarkus.log.level=WARN',
      '-Dapicurio.storage.kind=sql',
      '-Dapicurio.storage.sql.kind=postgresql',
      `-Dapicurio.datasource.url=jdbc:postgresql://127.0.0.1:${cfg.postgres.port}/registry`,
      `-Dapicurio.datasource.username=${cfg.postgres.user}`,
      '-Dapicurio.datasource.jdbc.initial-size=2',
      '-Dapicurio.datasource.jdbc.min-size=2',
      '-Dapicurio.datasource.jdbc.max-size=10',
      '-Dapicurio.rules.global.compatibility=BACKWARD',
      '-jar',
      registryJar(cfg),
    ];
  let pid = readPid(pidFile);
  // Arguments hold no secret (the database password goes by environment): kept to spot a change.
  if (pid !== undefined && (!existsSync(argsFile) || readFileSync(argsFile, 'utf8') !== args.join('\n'))) {
    await stopRegistry(cfg);
    pid = undefined;
  }
  if (pid === undefined) {
    const password = readFileSync(join(cfg.postgres.dataDir, '..', 'password'), 'utf8').trim();
    writeFileSync(argsFile, args.join('\n'));
    // The password goes by environment, not the command line that `ps` shows.
    pid = startDetached(tools.java, args, { cwd: cfg.registry.dir, logFile, pidFile, env: { ...process.env, APICURIO_DATASOURCE_PASSWORD: password } });
  }
  await awaitReady('Schema registry', () => registryReady(cfg), { timeoutMs: 120_000, pid, logFile });
}

export async function stopRegistry(cfg: StackConfig): Promise<void> {
  await stopProcess(registryPidFile(cfg), 30_000);
}
