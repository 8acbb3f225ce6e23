/**
 * The `outbox relay` command while its broker is SIGSTOPped (break report: /healthz stayed ok and
 * not degraded for the whole 90 s; for the first 30 s only oldest_row_age_seconds showed it). Now
 * /healthz says `broker: "down"`, `degraded: true` once the broker fails the probe the gateway's
 * /readyz uses (transport.isHealthy() within READINESS_TIMEOUT_MS), and `degraded: false` again
 * when it is back and the rows went out. A private broker (SIGSTOP must not touch the shared one),
 * the real command in a child process, the stack's PostgreSQL.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { startPrivateBroker } from '../../helpers/private-broker.js';
import type { PrivateBroker } from '../../helpers/private-broker.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, rowStates, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

let broker: PrivateBroker;
let f: OutboxFixture;
beforeAll(async () => {
  broker = await startPrivateBroker('outbox-broker-stop');
  f = await outboxFixture({ kafka: { brokers: [...broker.brokers] } });
}, 120_000);
afterAll(async () => {
  await f?.close();
  await broker?.stop();
}, 60_000);

describe('the outbox relay command while its broker is stopped', () => {
  it('says degraded (broker down) within the readiness bound, and recovers', async () => {
    const s = stackEnv();
    const port = await freePort();
    let child: ChildProcess | undefined;
    let stderr = '';
    const health = async (): Promise<Record<string, unknown>> => {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(3000) });
      expect(r.status).toBe(200); // an outage is waited out: never a restart
      return (await r.json()) as Record<string, unknown>;
    };
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: broker.brokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: s.databaseUrl, OUTBOX_TABLE: f.table, OUTBOX_POLL_INTERVAL_MS: '100', READINESS_TIMEOUT_MS: '1000', LOG_LEVEL: 'error', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: f.run.replace(/_/g, '-') },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      for (let i = 0; i < 3; i++) await writeCommitted(f, 'EUR/USD', i);
      await waitFor('the rows to be published', async () => (await rowStates(f)).unsent === 0, 60_000, 100).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay stderr: ${stderr}`);
      });
      const before = await health();
      expect(before).toMatchObject({ status: 'ok', degraded: false, database: 'up' });

      await broker.pause();
      const t0 = performance.now();
      for (let i = 3; i < 6; i++) await writeCommitted(f, 'EUR/USD', i);
      const down = await waitFor('/healthz to say degraded', async () => {
        const h = await health();
        return h.degraded === true ? h : undefined;
      }, 20_000, 200);
      // READINESS_TIMEOUT_MS (1 s) per probe, a probe every second: well inside 10 s (not 30 s or never).
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect(down).toMatchObject({ status: 'ok', broker: 'down', database: 'up' });
      expect(before.broker).toBe('up');
      // The rows written meanwhile: their produce call is stuck, and shows as a stall from its start.
      await waitFor('publishStalledMs to grow', async () => Number((await health()).publishStalledMs) > 1000, 20_000, 200);

      broker.signal('SIGCONT');
      await waitFor('the rows written meanwhile to be published', async () => (await rowStates(f)).unsent === 0, 90_000, 200);
      await waitFor('/healthz to say not degraded', async () => (await health()).degraded === false, 30_000, 200);
    } finally {
      if (broker.paused()) broker.signal('SIGCONT');
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }
    }
  }, 180_000);
});
