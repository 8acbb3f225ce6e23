/**
 * SIGTERM to the `outbox relay` command during a broker outage (break report finding 5): the
 * relay's stop grace fits inside SHUTDOWN_TIMEOUT_MS, so the process exits 0 within it (it ran the
 * whole budget out and exited 1), and the rows stay unsent. The real command in a child process;
 * KAFKA_BROKERS a loopback port that accepts connections and never answers (a broker that refuses
 * them fails fast: the relay is then in backoff, not mid-cycle), the outbox on the real PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { Socket } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 1 });
});
afterAll(async () => {
  await f?.close();
});

describe('the outbox relay command stopped during a broker outage', () => {
  it('exits 0 within SHUTDOWN_TIMEOUT_MS, the rows unsent', async () => {
    const s = stackEnv();
    for (let i = 1; i <= 3; i++) await writeCommitted(f, 'OUTAGE', i);
    const port = await freePort();
    // A broker that does not answer: connections are accepted and left hanging.
    const held = new Set<Socket>();
    const silent = createServer((sock) => {
      held.add(sock);
      sock.on('error', () => undefined);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const deadBroker = (silent.address() as { port: number }).port;
    const shutdownMs = 6000;
    let child: ChildProcess | undefined;
    let stderr = '';
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: `127.0.0.1:${deadBroker}`, SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: s.databaseUrl, OUTBOX_TABLE: f.table, OUTBOX_POLL_INTERVAL_MS: '100', SHUTDOWN_TIMEOUT_MS: String(shutdownMs), LOG_LEVEL: 'info', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: f.run.replace(/_/g, '-') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      await waitFor('the relay to serve /healthz', async () => child!.exitCode === null && (await fetch(`${url}/healthz`).then((r) => r.status === 200, () => false)), 60_000, 200).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay output: ${stderr}`);
      });
      // A cycle is in flight, waiting on the broker that does not answer.
      await waitFor('the relay to reach the broker', () => held.size > 0, 30_000, 50);
      await new Promise((r) => setTimeout(r, 500));
      const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
      const t0 = Date.now();
      child.kill('SIGTERM');
      const code = await exited;
      const took = Date.now() - t0;
      expect(code, stderr).toBe(0);
      expect(stderr).not.toMatch(/did not finish within SHUTDOWN_TIMEOUT_MS/);
      expect(took).toBeLessThan(shutdownMs);
    } finally {
      if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
      for (const sock of held) sock.destroy();
      silent.close();
    }
    const unsent = await f.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${f.writer.table.sql} WHERE sent_at IS NULL`);
    expect(Number(unsent.rows[0]!.n)).toBe(3);
  });
});
