/**
 * A row naming a topic outside the relay's `topics` (a row inserted by hand naming another
 * existing topic: the gateway's definitions topic, a dead-letter topic, another system's) is never
 * produced: the relay publishes with its own Kafka credentials whatever topic a row names, so the
 * table would otherwise be a way to write to any topic. The row's key is held with an attempt and a
 * `last_error` saying why (CEG_FORBIDDEN), every other key is published in order, and the foreign
 * topic stays empty. (The `outbox relay` command does not restrict topics yet: docs/outbox.md.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, readTopic, recordCount, seqByKey, writeRowsRenamed } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
let foreign: string;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
  foreign = `${f.run}.foreign`;
  await f.transport.ensureTopics([{ ...f.catalog.topics[0]!, name: foreign }]);
});
afterAll(async () => {
  await f?.close();
});

describe('outbox relay and rows naming a topic outside its topics', () => {
  it('holds back only their keys with the reason, publishes the rest in order, writes nothing to the foreign topic', async () => {
    await writeRowsRenamed(f, [0, 1, 2].map((b) => ({ key: `FOREIGN${b}`, topic: foreign })), 30, 3);
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, batchSize: 10, pollIntervalMs: 100, publishTimeoutMs: 2000, topics: f.catalog.topics.map((t) => t.name) });
    try {
      await waitFor('the good rows', () => relay.stats().published === 30, 30_000);
      await waitFor('every foreign row to show an attempt and a last_error', async () => {
        const r = await f.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${f.writer.table.sql} WHERE partition_key LIKE 'FOREIGN%' AND sent_at IS NULL AND attempts > 0 AND last_error IS NOT NULL`);
        return Number(r.rows[0]!.n) === 3;
      }, 30_000);
      const errors = (await f.pool.query<{ last_error: string }>(`SELECT last_error FROM ${f.writer.table.sql} WHERE partition_key LIKE 'FOREIGN%'`)).rows;
      for (const e of errors) expect(e.last_error).toMatch(/publishes only to its given topics/);
      expect(relay.stats().lastError).toMatchObject({ code: 'CEG_FORBIDDEN', message: expect.stringContaining(foreign) as unknown });
      // A further cycle or two: the foreign rows are retried (held with backoff), never produced.
      await new Promise((r) => setTimeout(r, 500));
      expect(await recordCount(f.transport, foreign)).toBe(0);
      expect((await f.pool.query(`SELECT 1 FROM ${f.writer.table.sql} WHERE partition_key LIKE 'FOREIGN%' AND sent_at IS NOT NULL`)).rowCount).toBe(0);
    } finally {
      await relay.stop();
    }
    const byKey = seqByKey(await readTopic(f, f.topic, 30));
    for (let k = 0; k < 3; k++) expect(byKey.get(`K${k}_H4`)).toEqual(Array.from({ length: 10 }, (_, j) => j * 3 + (k === 0 ? 3 : k)));
  });

  it('refuses topics that are not a list of names', async () => {
    await expect(startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, topics: [''] })).rejects.toMatchObject({ code: 'CEG_INVALID_OPTIONS', message: expect.stringContaining('topics: an array of topic names') as unknown });
  });
});
