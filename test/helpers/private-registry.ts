/**
 * An Apicurio Registry of one test's own (the stack's jar, in-memory storage, free loopback ports):
 * HTTPS with a certificate of a CA of its own, and HTTP basic auth required on its APIs. Basic auth
 * without an OIDC server: Apicurio 3.0.9 is built with Quarkus's embedded users realm enabled
 * (`quarkus.security.users.embedded.enabled=true` in its application.properties), so the users
 * (`quarkus.security.users.embedded.users.<name>`), `quarkus.http.auth.basic` and a path policy
 * (`quarkus.http.auth.permission.<n>.paths=/apis/*`, `policy=authenticated`) are set at start.
 * The shared stack's registry stays open: every other test uses it without credentials.
 * The password is on the JVM's command line (test only, random, loopback).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stackConfig } from '../../scripts/stack/config.js';
import { registryJar } from '../../scripts/stack/fetch.js';
import { preflight } from '../../scripts/stack/preflight.js';
import { awaitReady, startDetached, stopProcess } from '../../scripts/stack/process.js';
import { ensureStackTls } from '../../scripts/stack/tls.js';
import { freePort } from './ports.js';

export interface PrivateRegistry {
  /** `https://127.0.0.1:<port>/apis/ccompat/v7` */
  readonly httpsUrl: string;
  /** The CA that signed its certificate (PEM file). */
  readonly caFile: string;
  readonly username: string;
  readonly password: string;
  stop(): Promise<void>;
}

/** Starts it and waits until it answers an authenticated request (15–40 s). */
export async function startPrivateRegistry(prefix: string): Promise<PrivateRegistry> {
  const dir = mkdtempSync(join(tmpdir(), `ceg-${prefix}-`));
  const tools = await preflight();
  const tls = await ensureStackTls(join(dir, 'tls'));
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const username = 'ceg-registry-test';
  const password = randomBytes(12).toString('base64url');
  const pidFile = join(dir, 'pid');
  const logFile = join(dir, 'registry.log');
  const args = [
    '-Xmx384m',
    '-Dquarkus.http.host=127.0.0.1',
    `-Dquarkus.http.port=${httpPort}`,
    `-Dquarkus.http.ssl-port=${httpsPort}`,
    `-Dquarkus.http.ssl.certificate.files=${tls.certFile}`,
    `-Dquarkus.http.ssl.certificate.key-files=${tls.keyFile}`,
    '-Dquarkus.log.level=WARN',
    '-Dapicurio.rules.global.compatibility=BACKWARD',
    '-Dquarkus.http.auth.basic=true',
    '-Dquarkus.security.users.embedded.plain-text=true',
    `-Dquarkus.security.users.embedded.users.${username}=${password}`,
    '-Dquarkus.http.auth.permission.api.paths=/apis/*',
    '-Dquarkus.http.auth.permission.api.policy=authenticated',
    '-jar',
    registryJar(stackConfig()),
  ];
  const pid = startDetached(tools.java, args, { cwd: dir, logFile, pidFile });
  const authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  try {
    // Plain HTTP for the probe: the same server, so HTTPS is up too once this answers.
    await awaitReady('private schema registry', async () => (await fetch(`http://127.0.0.1:${httpPort}/apis/ccompat/v7/subjects`, { headers: { authorization }, signal: AbortSignal.timeout(2000) })).ok, { timeoutMs: 90_000, pid, logFile });
  } catch (err) {
    await stopProcess(pidFile, 10_000);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    httpsUrl: `https://127.0.0.1:${httpsPort}/apis/ccompat/v7`,
    caFile: tls.caFile,
    username,
    password,
    async stop() {
      await stopProcess(pidFile, 10_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
