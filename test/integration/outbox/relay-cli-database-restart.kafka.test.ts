/**
 * The `outbox relay` command while ITS database — a private PostgreSQL of this test's own — is
 * restarted mid-stream (`pg_ctl restart -m fast`, then `-m immediate`, a crash with recovery) and
 * then stopped for 30 s and started again, while an application writes rows continuously from its
 * own transactions. Every committed row is published (duplicates are allowed by docs/outbox.md:
 * at most a batch per crash), the first occurrences per key are in id order, the relay process
 * keeps running and recovers without a restart, /healthz says `database: "down"` during the
 * outage and `"up"` after it, and the outage is logged once per incident, not once per attempt.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxWriter, ensureOutboxSchema } from '../../../src/bus/outbox/index.js';
import { freePort } from '../../helpers/ports.js';
import { startPrivatePostgres } from '../../helpers/private-postgres.js';
import type { PrivatePostgres } from '../../helpers/private-postgres.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { IDENTITY, KIND, outboxFixture, readTopic, seriesUpdate } from './fixture.js';
import type { OutboxFixture } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

let f: OutboxFixture;
let db: PrivatePostgres | undefined;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
  db = await startPrivatePostgres('restart');
});
afterAll(async () => {
  await db?.stop();
  await f?.close();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('the outbox relay command while its database restarts', () => {
  it('publishes every committed row, in order per key, across restarts and a 30 s outage', async () => {
    const s = stackEnv();
    const pool = new pg.Pool({ connectionString: db!.url, max: 4, connectionTimeoutMillis: 2000 });
    pool.on('error', () => undefined);
    const c0 = await pool.connect();
    await ensureOutboxSchema(c0, { table: f.table });
    c0.release();
    const writer = new OutboxWriter({ codec: f.codec, identity: IDENTITY, table: f.table });
    const keys = ['AAA/USD', 'BBB/USD', 'CCC/USD', 'DDD/USD'];
    const committed = new Set<string>();
    let writing = true;
    let writeErrors = 0;
    // The application: one event a transaction, continuously; a failed transaction is retried later.
    const writeLoop = async (): Promise<void> => {
      let i = 0;
      while (writing) {
        const key = keys[i % keys.length]!;
        let lost: Error | undefined;
        const c = await pool.connect().catch(() => undefined);
        if (c === undefined) {
          writeErrors++;
          await sleep(100);
          continue;
        }
        const onLost = (err: Error): void => {
          lost = err;
        };
        c.on('error', onLost);
        try {
          await c.query('BEGIN');
          const r = await writer.write(c, KIND, seriesUpdate(key, i));
          await c.query('COMMIT');
          committed.add(r!.id);
          i++;
        } catch {
          writeErrors++;
          await c.query('ROLLBACK').catch(() => undefined);
          lost ??= new Error('transaction failed');
        } finally {
          c.off('error', onLost);
          c.release(lost);
        }
        await sleep(lost === undefined ? 10 : 100);
      }
    };

    const port = await freePort();
    let out = '';
    let child: ChildProcess | undefined;
    const url = `http://127.0.0.1:${port}`;
    const health = async (): Promise<Record<string, unknown> | undefined> => {
      if (child!.exitCode !== null) throw new Error(`relay exited ${String(child!.exitCode)}: ${out.slice(-3000)}`);
      const r = await fetch(`${url}/healthz`).catch(() => undefined);
      return r === undefined ? undefined : ((await r.json()) as Record<string, unknown>);
    };
    const sentCount = async (): Promise<number> => {
      const r = await pool.query<{ n: string }>(`SELECT count(*) FILTER (WHERE sent_at IS NOT NULL) AS n FROM ${f.table}`);
      return Number(r.rows[0]!.n);
    };
    /** Waits until rows are being relayed again (a sent row count that grows). */
    const relaying = async (what: string): Promise<void> => {
      const before = await waitFor(`${what}: the table readable`, () => sentCount(), 60_000, 200);
      await waitFor(`${what}: rows relayed again`, async () => (await health(), (await sentCount()) > before), 60_000, 200);
    };
    const writes = writeLoop();
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: db!.url, OUTBOX_TABLE: f.table, OUTBOX_BATCH_SIZE: '20', OUTBOX_POLL_INTERVAL_MS: '200', OUTBOX_QUERY_TIMEOUT_MS: '5000', LOG_LEVEL: 'info', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: `${f.run}-relay` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      await relaying('start');

      await db!.restart('fast');
      await relaying('after restart -m fast');

      await db!.restart('immediate');
      await relaying('after restart -m immediate');

      await db!.halt();
      const down = await waitFor('/healthz to say the database is down', async () => {
        const h = await health();
        return h?.database === 'down' ? h : undefined;
      }, 20_000, 200);
      expect(down).toMatchObject({ status: 'ok', degraded: true, database: 'down' });
      const warnsBefore = warnLines(out).length;
      await sleep(30_000);
      // Still alive, still saying so, and not one warning per retry during the 30 s.
      expect(await health()).toMatchObject({ database: 'down', degraded: true });
      const during = warnLines(out).slice(warnsBefore);
      expect(during, during.join('\n')).toHaveLength(0);
      await db!.start();
      await relaying('after the 30 s outage');
      await waitFor('/healthz to say the database is up', async () => (await health())?.database === 'up', 30_000, 200);
    } finally {
      writing = false;
      await writes;
    }
    try {
      await waitFor('every row sent', async () => {
        await health();
        const r = await pool.query<{ n: string }>(`SELECT count(*) FILTER (WHERE sent_at IS NULL) AS n FROM ${f.table}`);
        return Number(r.rows[0]!.n) === 0;
      }, 60_000, 200);
    } finally {
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
    expect(child.exitCode).toBe(0);
    const rows = (await pool.query<{ event_id: string; partition_key: string }>(`SELECT event_id, partition_key FROM ${f.table} ORDER BY id`)).rows;
    await pool.end();
    // Every committed transaction's row is in the table (the table may hold more: a COMMIT whose answer was lost).
    const inTable = new Set(rows.map((r) => r.event_id));
    for (const id of committed) expect(inTable.has(id)).toBe(true);
    expect(writeErrors).toBeGreaterThan(0); // the restarts did hit the application
    const seen = await readTopic(f, f.topic, rows.length, 60_000);
    const firstByKey = new Map<string, string[]>();
    const ids = new Set<string>();
    for (const e of seen) {
      if (ids.has(e.id)) continue;
      ids.add(e.id);
      firstByKey.set(e.key, [...(firstByKey.get(e.key) ?? []), e.id]);
    }
    expect(ids.size).toBe(rows.length);
    const tableKeys = [...new Set(rows.map((r) => r.partition_key))];
    expect(tableKeys).toHaveLength(keys.length);
    for (const k of tableKeys) {
      expect(firstByKey.get(k), k).toEqual(rows.filter((r) => r.partition_key === k).map((r) => r.event_id));
    }
    // Duplicates: at most a batch (20) per database incident (3).
    expect(seen.length - ids.size).toBeLessThanOrEqual(60);
    // The relay's log, per incident: a warning when it begins, never one per retry.
    const warns = warnLines(out);
    expect(warns.length, warns.join('\n')).toBeLessThanOrEqual(3 * 3);
  }, 240_000);
});

/** The relay's warning-or-worse log lines (pino JSON: level ≥ 40). */
function warnLines(out: string): string[] {
  return out.split('\n').filter((l) => {
    try {
      return (JSON.parse(l) as { level?: number }).level! >= 40;
    } catch {
      return false;
    }
  });
}
