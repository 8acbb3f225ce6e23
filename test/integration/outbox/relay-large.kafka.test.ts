/**
 * The relay against a topic's max.message.bytes: a key's rows that together exceed it go out in
 * several produce calls, in order; a row too large even alone holds back only its own key, on its
 * own topic (the same key and keyless rows on another topic go on); it is logged once; a limit the
 * operator raises (kafka-configs; here kafkajs's alterConfigs) releases it without a restart.
 * The topic's limit is made small (4 KB) so that small events exercise it.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawKafka } from '../consumer/members.js';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { kafkajs } from '../../../src/transport/kafka/kafkajs.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { waitFor } from '../../helpers/wait.js';
import { KIND, outboxFixture, readTopic, recordCount, rowStates, seqByKey, seriesUpdate, writeCommitted } from './fixture.js';
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

  /** Moves the unsent rows of `key` ('' = keyless rows) to `topic`; `oversizedFirst` pads the oldest past LIMIT. */
  async function moveRows(where: string, topic: string, oversizedFirst: boolean): Promise<void> {
    await f.pool.query(`UPDATE ${f.writer.table.sql} SET topic = $1 WHERE sent_at IS NULL AND topic = $2 AND ${where}`, [topic, f.topic]);
    if (oversizedFirst) {
      await f.pool.query(`UPDATE ${f.writer.table.sql} SET value = value || decode(repeat('00', $1), 'hex') WHERE id = (SELECT id FROM ${f.writer.table.sql} WHERE sent_at IS NULL AND topic = $2 AND ${where} ORDER BY id LIMIT 1)`, [LIMIT, topic]);
    }
  }

  it('holds a too-large row\'s key on its topic only (the same key and keyless rows go on elsewhere), logs it once, and lets it go once the topic\'s limit is raised', async () => {
    await f.pool.query(`DELETE FROM ${f.writer.table.sql} WHERE sent_at IS NULL`); // the test above leaves key C held
    const tight = `${f.run}.tight`;
    await f.transport.ensureTopics([{ name: tight, partitions: 3, retentionMs: 3_600_000, cleanupPolicy: 'delete', maxMessageBytes: LIMIT }]);
    // On `tight`: key DDD (its first row too large) and keyless rows (the first too large).
    for (let i = 1; i <= 3; i++) await writeCommitted(f, 'DDD', i);
    await moveRows(`partition_key = 'DDD_H4'`, tight, true);
    for (let i = 1; i <= 2; i++) await writeCommitted(f, 'KKK', i);
    await f.pool.query(`UPDATE ${f.writer.table.sql} SET partition_key = '' WHERE partition_key = 'KKK_H4'`);
    await moveRows(`partition_key = ''`, tight, true);

    // Holds of 60 s: the rows written below for f.topic can only go out while both are held.
    const first = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 100, publishTimeoutMs: 10_000, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 60_000, factor: 1, maxDelayMs: 60_000, jitter: 0 }) });
    try {
      await waitFor('both oversized rows met', () => first.stats().tooLargeRows >= 2, 20_000);
      expect(first.stats().heldKeys).toBe(2);
      // The same key, and keyless rows, on the fixture's own topic (one transaction: they are
      // keyless from the start): not held there.
      const onOther = await recordCount(f.transport, f.topic);
      const c = await f.pool.connect();
      try {
        await c.query('BEGIN');
        for (let i = 4; i <= 6; i++) await f.writer.write(c, KIND, seriesUpdate('DDD', i));
        for (let i = 3; i <= 4; i++) await f.writer.write(c, KIND, seriesUpdate('KKK', i));
        await c.query(`UPDATE ${f.writer.table.sql} SET partition_key = '' WHERE partition_key = 'KKK_H4' AND sent_at IS NULL`);
        await c.query('COMMIT');
      } finally {
        c.release();
      }
      await waitFor('the other topic\'s rows of the held key and keyless rows', async () => (await recordCount(f.transport, f.topic)) === onOther + 5, 30_000);
      expect(first.stats().heldKeys).toBe(2);
    } finally {
      await first.stop();
    }

    // Another relay, holding for 300 ms: it meets the rows again and again, and logs each once.
    const lines: { msg: string; level: number }[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; level: number }) });
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 100, publishTimeoutMs: 10_000, log, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 300, factor: 1, maxDelayMs: 300, jitter: 0 }) });
    try {
      await waitFor('each oversized row met three times', () => relay.stats().tooLargeRows >= 6, 30_000);
      expect(lines.filter((l) => l.level === 50 && /larger than the topic takes/.test(l.msg))).toHaveLength(2);
      expect(await recordCount(f.transport, tight)).toBe(0);
      // The operator raises the topic's limit: the held rows go, in order, without a restart.
      const admin = rawKafka().admin();
      await admin.connect();
      try {
        await admin.alterConfigs({ validateOnly: false, resources: [{ type: kafkajs().ConfigResourceTypes.TOPIC, name: tight, configEntries: [{ name: 'max.message.bytes', value: String(LIMIT * 4) }] }] });
      } finally {
        await admin.disconnect();
      }
      await waitFor('the held rows once the limit is raised', async () => (await recordCount(f.transport, tight)) === 5, 30_000);
    } finally {
      await relay.stop();
    }
    // In order: key DDD's rows landed on one partition at increasing offsets, in id order (the
    // padded rows do not decode, so the order is read from where the relay recorded them).
    const landed = (await f.pool.query<{ p: number; o: string }>(`SELECT sent_partition AS p, sent_offset::text AS o FROM ${f.writer.table.sql} WHERE topic = $1 AND partition_key = 'DDD_H4' ORDER BY id`, [tight])).rows;
    expect(landed).toHaveLength(3);
    expect(new Set(landed.map((r) => r.p)).size).toBe(1);
    expect(landed.map((r) => BigInt(r.o)).every((o, i, all) => i === 0 || o > all[i - 1]!)).toBe(true);
  });
});
