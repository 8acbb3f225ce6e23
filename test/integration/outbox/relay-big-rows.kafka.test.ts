/**
 * Rows of 100 KB with the largest batch (10,000 rows): a cycle's rows together are many times the
 * topic's max.message.bytes (1 MB by default), so they go out in several produce calls per cycle,
 * none refused by the broker as too large; every row exactly once, offsets growing with id per key.
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

describe('outbox relay with large rows and the largest batch', () => {
  it('cuts each cycle into produce calls the broker takes: every row once, in order per key', async () => {
    const keys = ['AAA', 'BBB', 'CCC'];
    for (const k of keys) await writeCommitted(f, k, 1);
    // 100 more rows per key, interleaved, each a copy of the key's first row padded to about 100 KB.
    const t = f.writer.table.sql;
    await f.pool.query(
      `INSERT INTO ${t} (topic, partition_key, record_key, header_names, header_values, value, timestamp_ms, event_id, event_source, event_type)
       SELECT o.topic, o.partition_key, o.record_key, o.header_names, o.header_values, o.value || decode(repeat('00', 100 * 1024), 'hex'), o.timestamp_ms, o.event_id || '-' || g, o.event_source, o.event_type
       FROM generate_series(1, 100) AS g CROSS JOIN ${t} AS o ORDER BY g, o.id`,
    );
    const total = keys.length * 101;
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, batchSize: 10_000, pollIntervalMs: 50 });
    try {
      await waitFor('every row sent', async () => (await rowStates(f)).unsent === 0, 120_000, 200);
    } finally {
      await relay.stop();
    }
    expect(relay.stats()).toMatchObject({ failedAttempts: 0, tooLargeRows: 0 });
    expect(await recordCount(f.transport, f.topic)).toBe(total);
    const sent = (await f.pool.query<{ partition_key: string; sent_partition: number; sent_offset: string }>(`SELECT partition_key, sent_partition, sent_offset FROM ${t} ORDER BY id`)).rows;
    const last = new Map<string, { p: number; o: bigint }>();
    for (const r of sent) {
      const prev = last.get(r.partition_key);
      if (prev !== undefined) {
        expect(r.sent_partition).toBe(prev.p);
        expect(BigInt(r.sent_offset) > prev.o).toBe(true);
      }
      last.set(r.partition_key, { p: r.sent_partition, o: BigInt(r.sent_offset) });
    }
  }, 180_000);
});
