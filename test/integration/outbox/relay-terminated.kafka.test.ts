/**
 * The relay's database connections killed by another session (pg_terminate_backend) while it
 * relays: the LISTEN connection comes back by itself (the relay then wakes on NOTIFY again, with
 * polling every 10 min), and killing its cycle connections mid-stream loses no row and keeps the
 * per-key order of first occurrences.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 2 });
});
afterAll(async () => {
  await f?.close();
});

async function kill(app: string, where: string): Promise<number> {
  const r = await f.pool.query<{ n: string }>(`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = $1 AND ${where}`, [app]);
  return Number(r.rows[0]!.n);
}

describe('outbox relay whose connections are terminated', () => {
  it('re-LISTENs after its LISTEN connection is killed and is woken by NOTIFY again', async () => {
    const app = `${f.run}-listen`;
    const pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 3, application_name: app });
    pool.on('error', () => undefined);
    const relay = await startOutboxRelay({ pool, transport: f.transport, table: f.table, pollIntervalMs: 600_000, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 50, factor: 2, maxDelayMs: 200, jitter: 0 }) });
    try {
      await writeCommitted(f, 'EUR/USD', 1);
      await waitFor('the first row', () => relay.stats().published === 1, 15_000);
      expect(relay.stats().listening).toBe(true);
      await waitFor('the LISTEN connection killed', async () => (await kill(app, `query LIKE 'LISTEN%'`)) > 0);
      await waitFor('listening again', () => relay.stats().listening && relay.stats().dbErrors > 0, 15_000, 20);
      await writeCommitted(f, 'EUR/USD', 2);
      await waitFor('the row after the reconnect, woken by NOTIFY', () => relay.stats().published === 2, 15_000);
    } finally {
      await relay.stop();
      await pool.end();
    }
  });

  it('loses no row and keeps per-key order when its cycle connections are killed mid-stream', async () => {
    const app = `${f.run}-cycle`;
    const pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 3, application_name: app });
    pool.on('error', () => undefined);
    const relay = await startOutboxRelay({ pool, transport: f.transport, table: f.table, pollIntervalMs: 20, batchSize: 5, listen: false });
    const keys = ['AAA/USD', 'BBB/USD', 'CCC/USD', 'DDD/USD'];
    const per = 40;
    let killed = 0;
    const firstId = (await f.pool.query<{ m: string | null }>(`SELECT max(id)::text AS m FROM ${f.table}`)).rows[0]!.m ?? '0';
    try {
      for (let i = 1; i <= per; i++) {
        for (const k of keys) await writeCommitted(f, k, i);
        if (i % 5 === 0) killed += await kill(app, `state <> 'idle'`);
      }
      await waitFor('every row sent', async () => {
        const r = await f.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${f.table} WHERE sent_at IS NULL`);
        return Number(r.rows[0]!.n) === 0;
      }, 30_000);
    } finally {
      await relay.stop();
      await pool.end();
    }
    const sent = await f.pool.query<{ partition_key: string; id: string; sent_partition: number; sent_offset: string }>(`SELECT partition_key, id, sent_partition, sent_offset FROM ${f.table} WHERE id > $1 ORDER BY id`, [firstId]);
    expect(sent.rows.length).toBe(keys.length * per);
    // Per key, offsets grow with id (same partition per key).
    const last = new Map<string, bigint>();
    for (const r of sent.rows) {
      const prev = last.get(r.partition_key);
      if (prev !== undefined) expect(BigInt(r.sent_offset) > prev).toBe(true);
      last.set(r.partition_key, BigInt(r.sent_offset));
    }
    // A killed connection that was in a cycle is a database failure, counted.
    if (killed > 0) expect(relay.stats().dbErrors).toBeGreaterThan(0);
  });
});
