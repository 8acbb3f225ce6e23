/**
 * Rows that cannot be made a Kafka record at all (a NULL element in header_names or header_values,
 * arrays of different lengths, a negative timestamp_ms — possible in a table created before the
 * DDL's checks, or edited by hand) hold back only their own key: each gets an attempt and a
 * last_error naming the problem, is counted in invalidRows, and every other key is published, in
 * order (break report finding 1: one such row stopped all publishing).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { waitFor } from '../../helpers/wait.js';
import { KIND, outboxFixture, readTopic, seqByKey, seriesUpdate } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
});
afterAll(async () => {
  await f?.close();
});

describe('outbox relay and rows that cannot be made a record', () => {
  it('a table made by ensureOutboxSchema refuses NULL header elements and arrays of different lengths', async () => {
    const t = f.writer.table.sql;
    const c = await f.pool.connect();
    try {
      await c.query('BEGIN');
      await f.writer.write(c, KIND, seriesUpdate('DDL', 1));
      for (const set of ['header_names[1] = NULL', 'header_values[1] = NULL', 'header_values = header_values[1:1]']) {
        await c.query('SAVEPOINT s');
        await expect(c.query(`UPDATE ${t} SET ${set} WHERE partition_key = 'DDL_H4'`)).rejects.toMatchObject({ code: '23514' });
        await c.query('ROLLBACK TO SAVEPOINT s');
      }
    } finally {
      await c.query('ROLLBACK');
      c.release();
    }
  });

  it('holds back only the bad rows\' keys, names the problem in last_error, publishes the other keys in order', async () => {
    const t = f.writer.table.sql;
    // As a table created before the element checks: drop its CHECK constraints.
    const checks = await f.pool.query<{ conname: string }>(`SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c'`, [t]);
    for (const { conname } of checks.rows) await f.pool.query(`ALTER TABLE ${t} DROP CONSTRAINT "${conname}"`);
    const c = await f.pool.connect();
    try {
      await c.query('BEGIN');
      // The bad keys' rows come first (oldest ids), each key with a second, good row behind.
      for (const key of ['NULLNAME', 'NULLVALUE', 'SHORT', 'BADTIME']) for (let i = 1; i <= 2; i++) await f.writer.write(c, KIND, seriesUpdate(key, i));
      for (let i = 1; i <= 30; i++) await f.writer.write(c, KIND, seriesUpdate(`K${i % 3}`, i));
      const first = (key: string): string => `id = (SELECT min(id) FROM ${t} WHERE partition_key = '${key}_H4')`;
      await c.query(`UPDATE ${t} SET header_names[2] = NULL WHERE ${first('NULLNAME')}`);
      await c.query(`UPDATE ${t} SET header_values[1] = NULL WHERE ${first('NULLVALUE')}`);
      await c.query(`UPDATE ${t} SET header_values = header_values[1:1] WHERE ${first('SHORT')}`);
      await c.query(`UPDATE ${t} SET timestamp_ms = -5 WHERE ${first('BADTIME')}`);
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, batchSize: 20, pollIntervalMs: 100, publishTimeoutMs: 5000, retry: retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 100, factor: 2, maxDelayMs: 1000, jitter: 0 }) });
    try {
      await waitFor('the good keys\' rows', () => relay.stats().published === 30, 30_000);
      await waitFor('the bad rows met again', () => relay.stats().invalidRows >= 8, 30_000);
      const s = relay.stats();
      expect(s.dbErrors).toBe(0);
      expect(s.heldKeys).toBe(4);
      expect(s.lastError?.code).toBe('CEG_INVALID_EVENT');
      const rows = await f.pool.query<{ partition_key: string; sent: boolean; attempts: number; last_error: string | null }>(
        `SELECT partition_key, sent_at IS NOT NULL AS sent, attempts, last_error FROM ${t} WHERE partition_key NOT LIKE 'K%' ORDER BY id`,
      );
      const byKey = new Map<string, typeof rows.rows>();
      for (const r of rows.rows) byKey.set(r.partition_key, [...(byKey.get(r.partition_key) ?? []), r]);
      const problems: Record<string, RegExp> = {
        NULLNAME_H4: /header_names\[2\] is NULL/,
        NULLVALUE_H4: /header_values\[1\] .* is NULL/,
        SHORT_H4: /header_names has \d+ elements but header_values 1/,
        BADTIME_H4: /timestamp_ms -5 /,
      };
      for (const [key, problem] of Object.entries(problems)) {
        const [bad, behind] = byKey.get(key)!;
        expect(bad).toMatchObject({ sent: false });
        expect(bad!.attempts).toBeGreaterThanOrEqual(1);
        expect(bad!.last_error).toMatch(/cannot be made a Kafka record/);
        expect(bad!.last_error).toMatch(problem);
        // The key's order is kept: its next row waits, untouched.
        expect(behind).toMatchObject({ sent: false, attempts: 0, last_error: null });
      }
    } finally {
      await relay.stop();
    }
    const byKey = seqByKey(await readTopic(f, f.topic, 30));
    expect([...byKey.keys()].sort()).toEqual(['K0_H4', 'K1_H4', 'K2_H4']);
    for (let k = 0; k < 3; k++) expect(byKey.get(`K${k}_H4`)).toEqual(Array.from({ length: 10 }, (_, j) => j * 3 + (k === 0 ? 3 : k)));
  });
});
