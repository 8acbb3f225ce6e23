/**
 * `createBus` start-up against a broker it cannot use (break report "library: createBus neither
 * resolves nor rejects"), on both Kafka clients, each run in a child library process
 * (test/fixtures/create-bus-child.mjs, on dist/ when it is up to date, else on src/ through tsx)
 * that never calls process.exit: it must end by itself, so createBus left no socket or timer behind.
 * - Settings the broker refuses (wrong SASL password on the stack's SCRAM listener, a SASL
 *   mechanism the listener does not offer, TLS without the stack's CA) reject at once with the
 *   non-retriable CEG_BROKER_UNAVAILABLE and `details.reason`.
 * - `serve` with a wrong SASL password exits 2 at once with `ce-gateway: cannot start: …`.
 * - `serve` with KAFKA_SSL=true against the plaintext listener retries, its warning's `hint`
 *   naming KAFKA_SSL and the port; without TLS or a SASL login against the TLS or SASL listener,
 *   its `hint` naming KAFKA_SSL and KAFKA_SASL_MECHANISM.
 * - A closed loopback port is retried until `startTimeoutMs`, then rejects with the retriable
 *   CEG_BROKER_UNAVAILABLE naming the broker; an aborted `signal` does the same without a timeout;
 *   a closed registry port rejects with CEG_REGISTRY_UNAVAILABLE naming the registry.
 * Needs the stack's SASL and TLS listeners (STACK_KAFKA_SASL_* / STACK_KAFKA_SSL_BROKERS from the
 * environment or `.stack/env`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readStackEnv } from '../../scripts/stack/index.js';
import { freePort } from '../helpers/ports.js';
import { runProcess } from '../helpers/spawn-node.js';
import { stackEnv } from '../helpers/stack.js';
import { CLI_ENTRY, CLI_FROM_DIST } from '../helpers/cli-entry.js';

const stack = stackEnv();
const file = readStackEnv();
const saslBrokers = process.env.STACK_KAFKA_SASL_BROKERS ?? file?.STACK_KAFKA_SASL_BROKERS ?? '';
const saslUser = process.env.STACK_KAFKA_SASL_USERNAME ?? file?.STACK_KAFKA_SASL_USERNAME ?? '';
const saslPasswordFile = process.env.STACK_KAFKA_SASL_PASSWORD_FILE ?? file?.STACK_KAFKA_SASL_PASSWORD_FILE ?? '';
const sslBrokers = process.env.STACK_KAFKA_SSL_BROKERS ?? file?.STACK_KAFKA_SSL_BROKERS ?? '';

interface Outcome {
  readonly resolved?: boolean;
  readonly rejected?: boolean;
  readonly ms: number;
  readonly code?: string;
  readonly retriable?: boolean;
  readonly reason?: string;
  readonly unreachable?: string;
  readonly aborted?: boolean;
  readonly message?: string;
}

/**
 * How long the child may take to end after createBus settled, ms: on the bound or an abort the
 * clients close behind the rejection, a kafkajs client still connecting once its connect retries
 * end (about 10 s); process start-up and exit under load on top.
 */
const EXIT_AFTER_SETTLED_MS = 16_000;

/** The child's node arguments: the compiled package when dist is up to date (no tsx loader: a second of CPU less per child). */
const CHILD_ARGS = [...(CLI_FROM_DIST ? [] : ['--import', 'tsx']), fileURLToPath(new URL('../fixtures/create-bus-child.mjs', import.meta.url))];

/**
 * Runs the child with these variables (over the stack's, without its SASL/TLS settings); resolves
 * with its outcome line, having checked that it ended by itself with exit code 0 soon after.
 */
async function startInChild(vars: Record<string, string>, killAfterMs: number): Promise<Outcome> {
  const env: NodeJS.ProcessEnv = { ...process.env, SCHEMA_REGISTRY_URL: stack.schemaRegistryUrl, LOG_LEVEL: 'warn', ...vars };
  const t0 = performance.now();
  const r = await runProcess(process.execPath, CHILD_ARGS, { cwd: process.cwd(), env: { ...env, CHILD_MODULES: CLI_FROM_DIST ? 'dist' : 'src' }, timeoutMs: killAfterMs });
  const wallMs = performance.now() - t0;
  const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
  expect(line, `no outcome line; stderr: ${r.stderr.slice(-2000)}`).toBeDefined();
  const outcome = JSON.parse(line!) as Outcome;
  // Ended by itself (a SIGKILL from runProcess's timeout would be signal SIGKILL, code null).
  expect({ code: r.code, signal: r.signal }, `stderr: ${r.stderr.slice(-2000)}`).toEqual({ code: 0, signal: null });
  expect(wallMs - outcome.ms, 'the process took too long to end after createBus settled (a handle left open?)').toBeLessThan(EXIT_AFTER_SETTLED_MS);
  return outcome;
}

describe.each(['kafkajs', 'platformatic'])('createBus start-up on %s', { timeout: 90_000 }, (client) => {
  it('a wrong SASL password rejects at once: CEG_BROKER_UNAVAILABLE, not retriable, reason authentication', async () => {
    expect(saslBrokers, 'STACK_KAFKA_SASL_BROKERS').not.toBe('');
    const wrong = join(mkdtempSync(join(tmpdir(), 'ceg-bus-start-')), 'password');
    writeFileSync(wrong, 'not-the-password');
    const o = await startInChild({ KAFKA_CLIENT: client, KAFKA_BROKERS: saslBrokers, KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: saslUser, KAFKA_SASL_PASSWORD_FILE: wrong }, 60_000);
    expect(o).toMatchObject({ rejected: true, code: 'CEG_BROKER_UNAVAILABLE', retriable: false, reason: 'authentication' });
    expect(o.message).toMatch(/SASL login.*KAFKA_SASL_PASSWORD/);
    expect(o.message).not.toContain('not-the-password');
    // Well before the default 60 s bound: the first attempt's own retries only.
    expect(o.ms).toBeLessThan(15_000);
  });

  it('serve with a wrong SASL password exits 2 at once, saying which settings to check', async () => {
    const wrong = join(mkdtempSync(join(tmpdir(), 'ceg-serve-start-')), 'password');
    writeFileSync(wrong, 'not-the-password');
    const env: NodeJS.ProcessEnv = { ...process.env, SCHEMA_REGISTRY_URL: stack.schemaRegistryUrl, LOG_LEVEL: 'warn', PORT: '0', HOST: '127.0.0.1', KAFKA_CLIENT: client, KAFKA_BROKERS: saslBrokers, KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: saslUser, KAFKA_SASL_PASSWORD_FILE: wrong };
    const t0 = performance.now();
    const r = await runProcess(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: process.cwd(), env, timeoutMs: 45_000 });
    expect({ code: r.code, signal: r.signal }, r.stderr.slice(-2000)).toEqual({ code: 2, signal: null });
    expect(r.stderr).toMatch(/ce-gateway: cannot start: .*the broker refused the SASL login.*KAFKA_SASL_PASSWORD\(_FILE\)/);
    expect(r.stderr + r.stdout).not.toContain('not-the-password');
    expect(performance.now() - t0).toBeLessThan(25_000);
  });

  /** `serve` with `vars` keeps retrying; its first log line with a `hint` (undefined when none came within 60 s). */
  async function firstHint(vars: NodeJS.ProcessEnv): Promise<{ hinted: Record<string, unknown> | undefined; out: string; running: boolean }> {
    const env: NodeJS.ProcessEnv = { ...process.env, SCHEMA_REGISTRY_URL: stack.schemaRegistryUrl, LOG_LEVEL: 'warn', PORT: '0', HOST: '127.0.0.1', KAFKA_CLIENT: client, ...vars };
    const child = spawn(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: process.cwd(), env, stdio: ['ignore', 'ignore', 'pipe'] });
    let out = '';
    try {
      // Retried (a restarting broker drops a handshake too): the warning says what to check; ended by the test.
      const hinted = await new Promise<Record<string, unknown> | undefined>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), 60_000);
        // The log goes to standard error (standard output is the CLI's own).
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          out += chunk;
          const line = out.split('\n').find((l) => l.includes('"hint"'));
          if (line !== undefined) {
            clearTimeout(timer);
            resolve(JSON.parse(line) as Record<string, unknown>);
          }
        });
        child.on('exit', () => resolve(undefined));
      });
      return { hinted, out, running: child.exitCode === null };
    } finally {
      child.kill('SIGKILL');
    }
  }

  // This test and the next run at once (and the next one's two serve processes too): each waits for
  // a warning of serve processes of its own, for up to a minute, and asserts no time. The other tests
  // stay one at a time: they bound how soon createBus settles and its process ends, which children
  // starting beside them would slow (five at once under load broke those bounds).
  it('serve with KAFKA_SSL=true against a listener without TLS keeps retrying, its warning naming KAFKA_SSL and the port', { concurrent: true }, async () => {
    const { hinted, out, running } = await firstHint({ KAFKA_BROKERS: stack.kafkaBrokers.join(','), KAFKA_SSL: 'true' });
    expect(hinted, out.slice(-2000)).toBeDefined();
    expect(String(hinted!.hint)).toMatch(/with KAFKA_SSL=true, is this a TLS listener\? Check KAFKA_SSL and the port/);
    expect(String(hinted!.msg)).toMatch(/bootstrap failed|broker unreachable/);
    expect(running, 'serve ended instead of retrying').toBe(true);
  });

  it('serve without KAFKA_SSL against the TLS listener, or without a SASL login against the SASL one, keeps retrying, its warning naming what the listener may want', { timeout: 150_000, concurrent: true }, async () => {
    expect(sslBrokers, 'STACK_KAFKA_SSL_BROKERS').not.toBe('');
    // The two listeners at once: a serve process each, neither waits for the other.
    const seen = await Promise.all([sslBrokers, saslBrokers].map((brokers) => firstHint({ KAFKA_BROKERS: brokers })));
    for (const { hinted, out, running } of seen) {
      // Until 2026-12-07 only "Closed connection" / "Connection closed", retried for ever.
      expect(hinted, out.slice(-2000)).toBeDefined();
      expect(String(hinted!.hint)).toMatch(/is this a TLS or SASL listener\? It drops a client without KAFKA_SSL=true or KAFKA_SASL_MECHANISM/);
      expect(running, 'serve ended instead of retrying').toBe(true);
    }
  });

  it('a SASL mechanism the listener does not offer rejects at once: reason sasl-mechanism', async () => {
    const o = await startInChild({ KAFKA_CLIENT: client, KAFKA_BROKERS: saslBrokers, KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: saslUser, KAFKA_SASL_PASSWORD_FILE: saslPasswordFile }, 60_000);
    expect(o).toMatchObject({ rejected: true, code: 'CEG_BROKER_UNAVAILABLE', retriable: false, reason: 'sasl-mechanism' });
    expect(o.ms).toBeLessThan(15_000);
  });

  it('a broker certificate the client does not trust rejects at once: reason tls', async () => {
    expect(sslBrokers, 'STACK_KAFKA_SSL_BROKERS').not.toBe('');
    const o = await startInChild({ KAFKA_CLIENT: client, KAFKA_BROKERS: sslBrokers, KAFKA_SSL: 'true' }, 60_000);
    expect(o).toMatchObject({ rejected: true, code: 'CEG_BROKER_UNAVAILABLE', retriable: false, reason: 'tls' });
    expect(o.ms).toBeLessThan(15_000);
  });

  it('a closed loopback port is retried until startTimeoutMs, then rejects retriable, naming the broker, and the process ends by itself', async () => {
    const port = await freePort();
    const o = await startInChild({ KAFKA_CLIENT: client, KAFKA_BROKERS: `127.0.0.1:${port}`, CHILD_START_TIMEOUT_MS: '4000' }, 60_000);
    expect(o).toMatchObject({ rejected: true, code: 'CEG_BROKER_UNAVAILABLE', retriable: true, unreachable: 'broker', aborted: false });
    expect(o.message).toContain(`127.0.0.1:${port}`);
    expect(o.message).toContain('startTimeoutMs = 4000 ms');
    expect(o.ms).toBeGreaterThanOrEqual(3_900);
    // The wrong behaviour is no end at all (retried for ever): a wide margin for a loaded machine.
    expect(o.ms).toBeLessThan(4_000 + 5_000);
  });

  it('an aborted signal ends the wait at once (no timeout set), retriable, and the process ends by itself', async () => {
    const port = await freePort();
    const o = await startInChild({ KAFKA_CLIENT: client, KAFKA_BROKERS: `127.0.0.1:${port}`, CHILD_START_TIMEOUT_MS: 'Infinity', CHILD_ABORT_AFTER_MS: '1500' }, 60_000);
    expect(o).toMatchObject({ rejected: true, code: 'CEG_BROKER_UNAVAILABLE', retriable: true, unreachable: 'broker', aborted: true });
    expect(o.ms).toBeGreaterThanOrEqual(1_400);
    // The wrong behaviour is no end at all (no timeout set): a wide margin for a loaded machine.
    expect(o.ms).toBeLessThan(1_500 + 5_000);
  });
});

describe('createBus start-up with the registry unreachable', { timeout: 90_000 }, () => {
  it('rejects after startTimeoutMs with the retriable CEG_REGISTRY_UNAVAILABLE naming the registry', async () => {
    const port = await freePort();
    const o = await startInChild({ KAFKA_BROKERS: stack.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: `http://127.0.0.1:${port}/apis/ccompat/v7`, CHILD_START_TIMEOUT_MS: '5000' }, 60_000);
    expect(o).toMatchObject({ rejected: true, code: 'CEG_REGISTRY_UNAVAILABLE', retriable: true, unreachable: 'registry', aborted: false });
    expect(o.message).toContain(`http://127.0.0.1:${port}/apis/ccompat/v7`);
  });
});
