/**
 * The relay's byte bound on a cycle (`maxBatchBytes`): with a bound of about two rows, rows of
 * three keys written interleaved — one of them larger than the bound alone — all go out, each
 * exactly once, in id order per key (offsets by id, read from the rows: the padded row's value is
 * not decodable Avro any more), over many cycles (the cut is a prefix in id order, and a
 * row larger than the bound still goes, alone).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, recordCount, rowStates, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
});
afterAll(async () => {
  await f?.close();
});

describe('outbox relay with a byte bound per cycle', () => {
  it('publishes every row once, in order per key, in cycles of a few rows', async () => {
    const keys = ['AAA', 'BBB', 'CCC'];
    const per = 12;
    for (let i = 1; i <= per; i++) for (const k of keys) await writeCommitted(f, k, i);
    // One row of BBB is made larger than the bound alone (padding after the Avro value: not decoded by the relay).
    await f.pool.query(`UPDATE ${f.writer.table.sql} SET value = value || decode(repeat('00', 4000), 'hex') WHERE id = (SELECT id FROM ${f.writer.table.sql} WHERE partition_key = 'BBB_H4' ORDER BY id OFFSET 4 LIMIT 1)`);
    const size = (await f.pool.query<{ n: number }>(`SELECT max(octet_length(value))::int AS n FROM ${f.writer.table.sql} WHERE octet_length(value) < 1000`)).rows[0]!.n;
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, batchSize: 100, maxBatchBytes: 2 * (size + 200), pollIntervalMs: 50 });
    try {
      await waitFor('every row sent', async () => (await rowStates(f)).unsent === 0, 30_000);
    } finally {
      await relay.stop();
    }
    // Many cycles: each claimed a few rows only.
    expect(relay.stats().cycles).toBeGreaterThanOrEqual((keys.length * per) / 3);
    // Exactly once each (the topic holds as many records as rows), and per key the offsets grow with id.
    expect(await recordCount(f.transport, f.topic)).toBe(keys.length * per);
    const sent = (await f.pool.query<{ partition_key: string; sent_partition: number; sent_offset: string }>(`SELECT partition_key, sent_partition, sent_offset FROM ${f.writer.table.sql} ORDER BY id`)).rows;
    const last = new Map<string, { p: number; o: bigint }>();
    for (const r of sent) {
      const prev = last.get(r.partition_key);
      if (prev !== undefined) {
        expect(r.sent_partition).toBe(prev.p);
        expect(BigInt(r.sent_offset) > prev.o).toBe(true);
      }
      last.set(r.partition_key, { p: r.sent_partition, o: BigInt(r.sent_offset) });
    }
    expect(last.size).toBe(keys.length);
  });
});
