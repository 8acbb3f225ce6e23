/**
 * The `outbox relay` command while its PostgreSQL hangs (break report: postmaster and backends
 * SIGSTOPped — /healthz said the database was up, every /metrics scrape hung, nothing was logged,
 * and SIGTERM ran SHUTDOWN_TIMEOUT_MS out, exit 1). With OUTBOX_QUERY_TIMEOUT_MS (pg's
 * connectionTimeoutMillis / query_timeout / statement_timeout): /healthz says `database: "down"`,
 * `degraded: true`; every scrape answers within its bound, without a backlog sample and with
 * `ce_gateway_outbox_database_up 0`; the incident is logged once; SIGTERM exits 0 within
 * SHUTDOWN_TIMEOUT_MS. The real command in a child process, the real database behind a proxy that
 * freezes, the relay's own backends SIGSTOPped (hung-database.ts); other sessions go on.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, rowStates, writeCommitted } from './fixture.js';
import { hungDatabase } from './hung-database.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const QUERY_TIMEOUT_MS = 1500;
const SHUTDOWN_MS = 6000;

const samplesOf = (text: string): Map<string, string> =>
  new Map(text.split('\n').filter((l) => l.startsWith('ce_gateway_outbox_')).map((l) => l.split(' ') as [string, string]));

describe('the outbox relay command while its database hangs', () => {
  it('reports the database down, answers every scrape within its bound, logs once, and stops in time', async () => {
    const s = stackEnv();
    const f = await outboxFixture();
    const app = `${f.run}-relay`;
    const db = await hungDatabase(s.databaseUrl, app, f.pool);
    const port = await freePort();
    let child: ChildProcess | undefined;
    let stderr = '';
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: db.url, OUTBOX_TABLE: f.table, OUTBOX_POLL_INTERVAL_MS: '100', OUTBOX_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS), SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_MS), LOG_LEVEL: 'info', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: f.run.replace(/_/g, '-') },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      // Traffic first: the relay publishes through the proxy.
      for (let i = 0; i < 5; i++) await writeCommitted(f, 'EUR/USD', i);
      await waitFor('the rows to be published', async () => (await rowStates(f)).unsent === 0 && (await rowStates(f)).total === 5, 60_000, 100).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay stderr: ${stderr}`);
      });
      const before = stderr.length;

      const pids = await db.freeze();
      expect(pids.length).toBeGreaterThan(0); // the relay's own backends, SIGSTOPped
      for (let i = 5; i < 10; i++) await writeCommitted(f, 'EUR/USD', i); // traffic while it hangs (other sessions work)

      const health = await waitFor('/healthz to say the database is down', async () => {
        const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(3000) });
        const body = (await r.json()) as Record<string, unknown>;
        return r.status === 200 && body.database === 'down' ? body : undefined;
      }, 20_000, 200);
      expect(health).toMatchObject({ status: 'ok', degraded: true, database: 'down' });
      expect(Number(health.consecutiveFailures)).toBeGreaterThan(0);

      // Scrapes answer within the bound (a connection plus a statement, 2 × the query timeout), all of them.
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        const r = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(4 * QUERY_TIMEOUT_MS) });
        const samples = samplesOf(await r.text());
        expect(performance.now() - t0).toBeLessThan(2 * QUERY_TIMEOUT_MS + 1000);
        expect(r.status).toBe(200);
        expect(samples.has('ce_gateway_outbox_backlog_rows')).toBe(false);
        expect(samples.get('ce_gateway_outbox_database_up')).toBe('0');
        expect(Number(samples.get('ce_gateway_outbox_database_errors_total'))).toBeGreaterThan(0);
      }
      // Logged once for the incident, however often the cycle failed meanwhile.
      const warned = stderr.slice(before).split('\n').filter((l) => l.includes('"level":40') && l.includes('database'));
      expect(warned).toHaveLength(1);

      // SIGTERM while it hangs: exit 0 within SHUTDOWN_TIMEOUT_MS (not the budget's exit 1).
      const t0 = performance.now();
      const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      const code = await exited;
      expect(code, stderr.slice(-2000)).toBe(0);
      expect(performance.now() - t0).toBeLessThan(SHUTDOWN_MS);
    } finally {
      db.thaw();
      if (child !== undefined && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }
      await db.close();
      await f.close();
    }
  }, 120_000);
});
