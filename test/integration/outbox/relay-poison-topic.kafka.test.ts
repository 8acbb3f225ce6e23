/**
 * Rows that can never be produced (their topic does not exist) hold back only their own key: the
 * other keys' rows go at full speed, even when the bad rows fill the whole claim window.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
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

describe('outbox relay and a row whose topic is missing', () => {
  it('holds back only the bad key: 4 × batchSize bad rows first, then 200 good rows of 10 keys, all good rows published in order', async () => {
    const batchSize = 20;
    const c = await f.pool.connect();
    try {
      await c.query('BEGIN');
      for (let i = 1; i <= 4 * batchSize; i++) await f.writer.write(c, KIND, seriesUpdate('BAD/KEY', i));
      // As if the topic had been deleted after the rows were written.
      await c.query(`UPDATE ${f.writer.table.sql} SET topic = $1`, [`${f.run}.no-such-topic`]);
      for (let i = 1; i <= 200; i++) await f.writer.write(c, KIND, seriesUpdate(`K${i % 10}`, i));
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, batchSize, pollIntervalMs: 100, publishTimeoutMs: 2000 });
    try {
      await waitFor('the good rows', () => relay.stats().published === 200, 30_000);
      // The missing topic is looked up off the cycle path, so the good rows may be out before that
      // look-up has failed: wait for the failure to be counted and written to the bad rows.
      await waitFor('the missing topic to be tried', () => relay.stats().failedAttempts > 0, 30_000);
      const bad = await waitFor('the bad rows to show an attempt', async () => {
        const r = await f.pool.query<{ unsent: string; attempted: string }>(`SELECT count(*) FILTER (WHERE sent_at IS NULL) AS unsent, count(*) FILTER (WHERE attempts > 0) AS attempted FROM ${f.writer.table.sql} WHERE partition_key = 'BAD-KEY_H4'`);
        return Number(r.rows[0]!.attempted) > 0 ? r : undefined;
      }, 30_000);
      expect(Number(bad.rows[0]!.unsent)).toBe(4 * batchSize);
    } finally {
      await relay.stop();
    }
    const byKey = seqByKey(await readTopic(f, f.topic, 200));
    for (let k = 0; k < 10; k++) expect(byKey.get(`K${k}_H4`)).toEqual(Array.from({ length: 20 }, (_, j) => j * 10 + (k === 0 ? 10 : k)));
  });
});
