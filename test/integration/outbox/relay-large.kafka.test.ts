/**
 * The relay against a topic's max.message.bytes: a key's rows that together exceed it go out in
 * several produce calls, in order; a row too large even alone holds back only its own key.
 * The topic's limit is made small (4 KB) so that small events exercise it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, readTopic, recordCount, rowStates, seqByKey, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

const LIMIT = 4096;
let f: OutboxFixture;
let small: string;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
  small = `${f.run}.small`;
  await f.transport.ensureTopics([{ name: small, partitions: 3, retentionMs: 3_600_000, cleanupPolicy: 'delete', maxMessageBytes: LIMIT }]);
});
afterAll(async () => {
  await f?.close();
});

describe('outbox relay and max.message.bytes', () => {
  it('splits a key whose rows exceed the topic limit together into several calls, in order; a row too large alone holds only its key', async () => {
    // 40 rows of key A (about 400 bytes each: ~16 KB together, 4× the limit), 5 rows of each of B, C.
    for (let i = 1; i <= 40; i++) await writeCommitted(f, 'AAA', i);
    for (let i = 1; i <= 5; i++) {
      await writeCommitted(f, 'BBB', i);
      await writeCommitted(f, 'CCC', i);
    }
    // Row 2 of key C becomes too large for the topic even alone (as if the topic's limit were lowered after it was written).
    await f.pool.query(`UPDATE ${f.writer.table.sql} SET topic = $1`, [small]);
    await f.pool.query(`UPDATE ${f.writer.table.sql} SET value = value || decode(repeat('00', $1), 'hex') WHERE id = (SELECT id FROM ${f.writer.table.sql} WHERE partition_key = 'CCC_H4' ORDER BY id OFFSET 1 LIMIT 1)`, [LIMIT]);

    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 100, publishTimeoutMs: 10_000, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 30_000, factor: 1, maxDelayMs: 30_000, jitter: 0 }) });
    try {
      // Everything but C's rows 2–5.
      await waitFor('the rows that fit', () => relay.stats().published === 40 + 5 + 1, 30_000);
      await waitFor('the oversized row reported', () => relay.stats().tooLargeRows >= 1, 10_000);
      const s = relay.stats();
      expect(s.failedAttempts).toBe(0);
      expect(s.heldKeys).toBe(1);
      expect(s.lastError?.code).toBe('CEG_PAYLOAD_TOO_LARGE');
      const states = await rowStates(f);
      expect(states.unsent).toBe(4);
      const err = (await f.pool.query<{ last_error: string }>(`SELECT last_error FROM ${f.writer.table.sql} WHERE partition_key = 'CCC_H4' AND sent_at IS NULL ORDER BY id LIMIT 1`)).rows[0]!.last_error;
      expect(err).toMatch(/max\.message\.bytes/);
    } finally {
      await relay.stop();
    }
    // Exactly once each (no duplicates from a refused call), in order per key; C stops before its row 2.
    expect(await recordCount(f.transport, small)).toBe(46);
    const seen = await readTopic(f, small, 46);
    const byKey = seqByKey(seen);
    expect(byKey.get('AAA_H4')).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(byKey.get('BBB_H4')).toEqual([1, 2, 3, 4, 5]);
    expect(byKey.get('CCC_H4')).toEqual([1]);
  });
});
