/**
 * Rows whose topic is not even a legal Kafka topic name (a row edited by hand, a topic renamed in a
 * bad catalog): each holds back only its own key, gets an attempt and a `last_error`, and every
 * other key is published in order. Each is reported as the illegal name it is (CEG_INVALID_NAME,
 * `invalid topic name …`), not as a topic that does not exist yet (until 2026-12-07 the relay took
 * any CEG_INVALID_NAME for a missing topic: CEG_UNKNOWN_TOPIC, `topic … does not exist`, waiting
 * for a topic no one can create); a missing topic is what the transport marks `details.topicMissing`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, readTopic, seqByKey, writeRowsRenamed } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
});
afterAll(async () => {
  await f?.close();
});

const BAD_TOPICS = ['', 'has space', 'x'.repeat(300), 'bad/slash', '..'];

describe('outbox relay and rows whose topic name is illegal', () => {
  it('holds back only their keys, records the failure, publishes the rest in order', async () => {
    await writeRowsRenamed(f, BAD_TOPICS.map((topic, b) => ({ key: `BAD${b}`, topic })), 50, 5);
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, batchSize: 10, pollIntervalMs: 100, publishTimeoutMs: 2000 });
    try {
      await waitFor('the good rows', () => relay.stats().published === 50, 30_000);
      await waitFor('every bad row to show an attempt and a last_error', async () => {
        const r = await f.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${f.writer.table.sql} WHERE partition_key LIKE 'BAD%' AND sent_at IS NULL AND attempts > 0 AND last_error IS NOT NULL`);
        return Number(r.rows[0]!.n) === BAD_TOPICS.length;
      }, 30_000);
      const errors = (await f.pool.query<{ topic: string; last_error: string }>(`SELECT topic, last_error FROM ${f.writer.table.sql} WHERE partition_key LIKE 'BAD%'`)).rows;
      for (const e of errors) {
        expect(e.last_error, e.topic.slice(0, 20)).toMatch(/^invalid topic name /);
        expect(e.last_error, e.topic.slice(0, 20)).not.toContain('does not exist');
      }
      expect(relay.stats().lastError?.code).toBe('CEG_INVALID_NAME');
    } finally {
      await relay.stop();
    }
    const byKey = seqByKey(await readTopic(f, f.topic, 50));
    for (let k = 0; k < 5; k++) expect(byKey.get(`K${k}_H4`)).toEqual(Array.from({ length: 10 }, (_, j) => j * 5 + (k === 0 ? 5 : k)));
  });
});
