/**
 * Where the local stack lives and which ports it uses. Everything listens on 127.0.0.1 only.
 * Downloads are cached outside the checkout (Maven's local repository and ~/.cache/ce-gateway),
 * so a fresh clone reuses them; service data lives in the checkout's `.stack/` (ignored by git).
 *
 * The default ports lie below 32768, outside every common ephemeral port range (Linux
 * 32768–60999, macOS and Windows 49152–65535): inside it, any outgoing connection of any process
 * (a test suite opens tens of thousands) may hold the port as its local end when a service starts,
 * and the broker then fails with "Address already in use". The previous defaults (39092, 38081,
 * 35432) did so once in CI.
 */
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const KAFKA_VERSION = '4.1.1';
/** Apicurio Registry 3.0.x runs on Java 17; 3.1+ needs Java 21 (class file version 65). */
export const APICURIO_VERSION = '3.0.9';

export interface StackConfig {
  readonly repoDir: string;
  readonly stateDir: string;
  readonly cacheDir: string;
  /**
   * `saslPort`: a second listener, SASL_PLAINTEXT with SCRAM-SHA-512 only (issue 11: the clients'
   * SASL settings are tested against it); its user `saslUser` is created with Kafka's ConfigCommand
   * on the running broker, its password kept in `saslPasswordFile` (mode 0600).
   */
  readonly kafka: {
    readonly port: number;
    readonly controllerPort: number;
    readonly saslPort: number;
    /** An SSL listener (TLS, no SASL) with the stack CA's server certificate (issue 11; `tlsDir`). */
    readonly sslPort: number;
    /** SASL_SSL: SCRAM-SHA-512 (the same user as `saslPort`) over TLS with the same certificate. */
    readonly saslSslPort: number;
    readonly saslUser: string;
    readonly saslPasswordFile: string;
    readonly libsDir: string;
    readonly dir: string;
    readonly heapMb: number;
    /** More `server.properties` lines (`key=value`), e.g. a fault test's short producer-id expiry; none for the stack. */
    readonly extraProperties?: readonly string[];
  };
  /** `tlsPort`: HTTPS next to HTTP, with the stack CA's server certificate (issue 11; `tlsDir`). */
  readonly registry: { readonly port: number; readonly tlsPort: number; readonly appDir: string; readonly dir: string; readonly heapMb: number };
  /** The throw-away CA and server certificate of the stack's TLS listeners (tls.ts). */
  readonly tlsDir: string;
  readonly postgres: { readonly port: number; readonly dataDir: string; readonly dir: string; readonly user: string };
  readonly envFile: string;
}

/** The stack's port settings (environment), each with its default. */
export const STACK_PORT_DEFAULTS = Object.freeze({
  STACK_KAFKA_PORT: 19092,
  STACK_KAFKA_CONTROLLER_PORT: 19093,
  STACK_KAFKA_SASL_PORT: 19094,
  STACK_KAFKA_SSL_PORT: 19095,
  STACK_KAFKA_SASL_SSL_PORT: 19096,
  STACK_REGISTRY_PORT: 18081,
  STACK_REGISTRY_TLS_PORT: 18444,
  STACK_POSTGRES_PORT: 15432,
});

/**
 * Refuses a `STACK_…_PORT` setting the stack does not know (a misspelt one was ignored, and the
 * stack took the default port — another stack's — and failed with "Address already in use").
 * Errors: Error naming the unknown settings and the known ones.
 */
export function assertKnownPortSettings(env: NodeJS.ProcessEnv = process.env): void {
  const unknown = Object.keys(env).filter((k) => k.startsWith('STACK_') && k.endsWith('_PORT') && !(k in STACK_PORT_DEFAULTS));
  if (unknown.length > 0) throw new Error(`unknown stack setting ${unknown.join(', ')}: the port settings are ${Object.keys(STACK_PORT_DEFAULTS).join(', ')}`);
}

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`${name} must be a TCP port (1–65535), got "${raw}"`);
  return n;
}

export function stackConfig(): StackConfig {
  assertKnownPortSettings();
  const repoDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const stateDir = resolve(process.env.CE_GATEWAY_STACK_DIR ?? join(repoDir, '.stack'));
  const cacheDir = resolve(process.env.CE_GATEWAY_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'ce-gateway'));
  // PostgreSQL refuses to run as root: as root it runs as the `postgres` user, which cannot
  // enter /root or other private folders, so its data then lives in a folder of its own,
  // named after this stack's state folder so each checkout keeps its own database.
  const isRoot = process.getuid?.() === 0;
  const pgDataDir = isRoot
    ? join('/var/lib/ce-gateway', createHash('sha256').update(stateDir).digest('hex').slice(0, 12), 'pgdata')
    : join(stateDir, 'postgres', 'data');
  return {
    repoDir,
    stateDir,
    cacheDir,
    kafka: {
      port: int('STACK_KAFKA_PORT', STACK_PORT_DEFAULTS.STACK_KAFKA_PORT),
      controllerPort: int('STACK_KAFKA_CONTROLLER_PORT', STACK_PORT_DEFAULTS.STACK_KAFKA_CONTROLLER_PORT),
      saslPort: int('STACK_KAFKA_SASL_PORT', STACK_PORT_DEFAULTS.STACK_KAFKA_SASL_PORT),
      sslPort: int('STACK_KAFKA_SSL_PORT', STACK_PORT_DEFAULTS.STACK_KAFKA_SSL_PORT),
      saslSslPort: int('STACK_KAFKA_SASL_SSL_PORT', STACK_PORT_DEFAULTS.STACK_KAFKA_SASL_SSL_PORT),
      saslUser: 'ce-gateway-test',
      saslPasswordFile: join(stateDir, 'kafka', 'sasl-password'),
      libsDir: join(cacheDir, `kafka-${KAFKA_VERSION}`, 'libs'),
      dir: join(stateDir, 'kafka'),
      heapMb: 768,
    },
    registry: {
      port: int('STACK_REGISTRY_PORT', STACK_PORT_DEFAULTS.STACK_REGISTRY_PORT),
      tlsPort: int('STACK_REGISTRY_TLS_PORT', STACK_PORT_DEFAULTS.STACK_REGISTRY_TLS_PORT),
      appDir: join(cacheDir, `apicurio-registry-${APICURIO_VERSION}`),
      dir: join(stateDir, 'registry'),
      heapMb: 512,
    },
    postgres: { port: int('STACK_POSTGRES_PORT', STACK_PORT_DEFAULTS.STACK_POSTGRES_PORT), dataDir: pgDataDir, dir: join(stateDir, 'postgres'), user: 'cegw' },
    tlsDir: join(stateDir, 'tls'),
    envFile: join(stateDir, 'env'),
  };
}
