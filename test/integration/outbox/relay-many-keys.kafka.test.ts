/**
 * The largest batch (10,000 rows) over a backlog of 10,000 distinct partition keys, on a private
 * PostgreSQL with the default lock settings (max_locks_per_transaction 64, max_connections 100):
 * a cycle takes one transaction-scoped advisory lock per key it relays, up to batchSize of them;
 * the lock table must hold them (an "out of shared memory", SQLSTATE 53200, would read as the
 * database being down and nothing would ever be published). Every row goes, no database error.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxWriter, ensureOutboxSchema, startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { startPrivatePostgres } from '../../helpers/private-postgres.js';
import type { PrivatePostgres } from '../../helpers/private-postgres.js';
import { waitFor } from '../../helpers/wait.js';
import { IDENTITY, KIND, outboxFixture, recordCount, seriesUpdate } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
let db: PrivatePostgres | undefined;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
  db = await startPrivatePostgres('manykeys');
});
afterAll(async () => {
  await db?.stop();
  await f?.close();
});

describe('outbox relay with 10,000-row batches over 10,000 keys', () => {
  it('publishes every row without running out of the lock table', async () => {
    const pool = new pg.Pool({ connectionString: db!.url, max: 4 });
    pool.on('error', () => undefined);
    const c = await pool.connect();
    try {
      await ensureOutboxSchema(c, { table: f.table });
      await c.query('BEGIN');
      await new OutboxWriter({ codec: f.codec, identity: IDENTITY, table: f.table }).write(c, KIND, seriesUpdate('TEMPLATE', 1));
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    const t = f.writer.table.sql;
    // 9,999 copies of the row, each of a key of its own.
    await pool.query(
      `INSERT INTO ${t} (topic, partition_key, record_key, header_names, header_values, value, timestamp_ms, event_id, event_source, event_type)
       SELECT o.topic, 'K' || g, convert_to('K' || g, 'UTF8'), o.header_names, o.header_values, o.value, o.timestamp_ms, o.event_id || '-' || g, o.event_source, o.event_type
       FROM generate_series(1, 9999) AS g CROSS JOIN ${t} AS o`,
    );
    const relay = await startOutboxRelay({ pool, transport: f.transport, table: f.table, batchSize: 10_000, pollIntervalMs: 50 });
    try {
      await waitFor('every row sent', async () => {
        const r = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${t} WHERE sent_at IS NULL`);
        return Number(r.rows[0]!.n) === 0;
      }, 120_000, 500).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay: ${JSON.stringify(relay.stats())}`);
      });
    } finally {
      await relay.stop();
      await pool.end();
    }
    expect(relay.stats().dbErrors).toBe(0);
    expect(await recordCount(f.transport, f.topic)).toBe(10_000);
  }, 180_000);
});
