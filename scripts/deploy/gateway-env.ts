/**
 * `ce-gateway config check` on a deployment's environment (the rendered chart's, compose's): the
 * same checks `serve` runs when it starts (src/cli/commands/config.ts checkConfiguration: the
 * configuration, the catalog, the connectors, the partners file, TLS, the no-authentication-beyond-
 * loopback rule), so that a deployment whose pods would exit 2 fails here instead. Secret values
 * are not in the files: a secret variable gets a well-formed stand-in, a secret file or mounted
 * file a stand-in of its kind (the development partners file, a self-signed certificate).
 * Also the rules `config check` cannot see because the gateway starts anyway: subscriptions need
 * SUBSCRIPTION_SECRETS_KEY with Kafka beyond loopback (else push subscriptions are refused with 503).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConfiguration } from '../../src/cli/commands/config.js';
import { SECRET_KEYS } from '../../src/config/index.js';
import { isLoopbackHost } from '../../src/core/loopback.js';
import { report } from './report.js';
import type { Report } from './report.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/** A well-formed stand-in for a secret variable's value. */
export function standIn(name: string): string {
  if (name.endsWith('DATABASE_URL')) return 'postgres://user:password@postgres.example:5432/db';
  if (name === 'SUBSCRIPTION_SECRETS_KEY') return '0'.repeat(64);
  return 'stand-in';
}

/** Variables whose value is a path the gateway reads at start (beside `<SECRET>_FILE`). */
export const FILE_VARIABLES = ['PARTNERS_FILE', 'TLS_CERT_FILE', 'TLS_KEY_FILE', 'KAFKA_SSL_CA_FILE', 'SCHEMA_REGISTRY_CA_FILE', 'OIDC_JWKS_FILE'] as const;

/**
 * Checks `env` (what the container's process would see; paths already mapped to files on this
 * machine where the caller could, see `standInFiles`) as `config check` does. `where` names the
 * deployment in messages.
 */
export function checkGatewayEnvironment(env: Record<string, string | undefined>, where: string): Report {
  const r = report();
  const cwd = mkdtempSync(join(tmpdir(), 'ceg-env-'));
  try {
    const res = checkConfiguration({ ...env, CE_GATEWAY_ENV_FILE: undefined }, cwd);
    if (res.ok) r.ok(`${where}: \`config check\` passes on the container's environment (serve's start-up checks included)`);
    for (const p of res.problems) r.fail(`${where}: \`config check\` refuses it (the gateway would exit 2): ${p.variable}: ${p.message}`);
    const kafka = Boolean(env.KAFKA_BROKERS);
    const host = env.HOST ?? '127.0.0.1';
    const key = Boolean(env.SUBSCRIPTION_SECRETS_KEY || env.SUBSCRIPTION_SECRETS_KEY_FILE);
    if (kafka && !isLoopbackHost(host)) {
      r.check(key, `${where}: SUBSCRIPTION_SECRETS_KEY is set (Kafka, HOST ${host}: subscriptions need it)`, `${where}: KAFKA_BROKERS with HOST ${host} and no SUBSCRIPTION_SECRETS_KEY[_FILE]: push subscriptions are refused (503) and pull cursors hold only within one process run (another replica or a restart refuses them)`);
    }
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
  return r;
}

let certDir: string | undefined;
/** A self-signed certificate and its key (openssl), made once per run. */
function certificate(): { cert: string; key: string } {
  if (certDir === undefined) {
    certDir = mkdtempSync(join(tmpdir(), 'ceg-cert-'));
    process.on('exit', () => rmSync(certDir!, { recursive: true, force: true }));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=ce-gateway.test', '-keyout', join(certDir, 'key.pem'), '-out', join(certDir, 'cert.pem')], { stdio: 'ignore' });
  }
  return { cert: join(certDir, 'cert.pem'), key: join(certDir, 'key.pem') };
}

let standInBase: string | undefined;

/**
 * One temporary directory per process for every call's stand-in files, removed at exit by one
 * listener: a directory and an `exit` listener per call left hundreds of `ceg-files-*` behind a
 * test run (its workers end without 'exit') and warned of more than 10 `exit` listeners.
 */
function standInRoot(): string {
  if (standInBase === undefined) {
    const base = mkdtempSync(join(tmpdir(), 'ceg-files-'));
    standInBase = base;
    process.once('exit', () => rmSync(base, { recursive: true, force: true }));
  }
  return standInBase;
}

/**
 * Replaces the value of each file variable (FILE_VARIABLES and `<SECRET>_FILE`) whose path lies in
 * a mount the caller vouches for (`mounted(path)`: a read-only mount of a Secret or ConfigMap the
 * deployment names) with a local stand-in file of its kind; a path `mounted` does not vouch for is
 * left as it is, so that `config check` reports it missing. `resolve(path)` may give a real local
 * file instead (compose's bind mounts).
 */
export function standInFiles(env: Record<string, string | undefined>, mounted: (path: string) => boolean, resolve: (path: string) => string | undefined = () => undefined): Record<string, string | undefined> {
  const out = { ...env };
  const dir = mkdtempSync(join(standInRoot(), 'files-'));
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const secret = name.endsWith('_FILE') && SECRET_KEYS.includes(name.slice(0, -5));
    if (!secret && !(FILE_VARIABLES as readonly string[]).includes(name)) continue;
    const local = resolve(value);
    if (local !== undefined && existsSync(local)) {
      out[name] = local;
      continue;
    }
    if (!mounted(value)) continue;
    if (secret) {
      const f = join(dir, name);
      writeFileSync(f, standIn(name.slice(0, -5)));
      out[name] = f;
    } else if (name === 'PARTNERS_FILE') out[name] = join(ROOT, 'deploy/partners.dev.yaml');
    else if (name === 'TLS_KEY_FILE') out[name] = certificate().key;
    else if (name === 'OIDC_JWKS_FILE') {
      const f = join(dir, 'jwks.json');
      writeFileSync(f, JSON.stringify({ keys: [{ kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: 'stand-in' }] }));
      out[name] = f;
    } else out[name] = certificate().cert;
  }
  return out;
}
