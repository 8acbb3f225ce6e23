/**
 * The relay and a topic's `max.message.bytes` that an operator changes while it runs (kafka-configs;
 * here kafkajs's alterConfigs on the real broker):
 *  - a raised limit releases a held too-large row at its next attempt, also while other keys of the
 *    topic keep flowing (their cycles must not leave a stale limit for the held row's retry);
 *  - the limit is read again at most once per backoff of the topic, however many held keys come
 *    back, and each too-large row is logged once (further attempts only counted);
 *  - a lowered limit (the broker refuses a call the cached limit allowed) is read again, so the
 *    rows go out in calls cut by the new limit instead of failing until a restart.
 * The transport is the real Kafka transport, wrapped only to count its maxMessageBytes reads.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { kafkajs } from '../../../src/transport/kafka/kafkajs.js';
import type { Transport } from '../../../src/transport/index.js';
import { waitFor } from '../../helpers/wait.js';
import { rawKafka } from '../consumer/members.js';
import { KIND, inTransaction, outboxFixture, recordCount, seriesUpdate } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

const LIMIT = 4096;
let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
});
afterAll(async () => {
  await f?.close();
});

/** Sets a topic's max.message.bytes on the broker, and waits until the broker reports it. */
async function setLimit(topic: string, bytes: number): Promise<void> {
  const admin = rawKafka().admin();
  await admin.connect();
  try {
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: kafkajs().ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'max.message.bytes', value: String(bytes) }] }] });
  } finally {
    await admin.disconnect();
  }
  await waitFor(`${topic}'s max.message.bytes = ${bytes}`, async () => (await f.transport.maxMessageBytes(topic)) === bytes, 10_000);
}

/** The fixture's transport, its maxMessageBytes calls counted. */
function counting(t: Transport): { transport: Transport; reads: (topic: string) => number } {
  const n = new Map<string, number>();
  const transport = new Proxy(t, {
    get(target, prop, receiver) {
      if (prop === 'maxMessageBytes') {
        return (topic: string) => {
          n.set(topic, (n.get(topic) ?? 0) + 1);
          return target.maxMessageBytes(topic);
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { transport, reads: (topic) => n.get(topic) ?? 0 };
}

/** Writes rows of `instrument` (seq `from`..`to`) in one transaction, moved to `topic` before COMMIT. */
async function writeOn(topic: string, instrument: string, from: number, to: number): Promise<void> {
  await inTransaction(f, async (c) => {
    const ids: string[] = [];
    for (let i = from; i <= to; i++) ids.push((await f.writer.write(c, KIND, seriesUpdate(instrument, i)))!.rowId);
    await c.query(`UPDATE ${f.writer.table.sql} SET topic = $1 WHERE id = ANY($2::bigint[])`, [topic, ids]);
  });
}

/** Pads the oldest unsent row of the key `<instrument>_H4` on `topic` past LIMIT (too large for it). */
async function padOldest(topic: string, instrument: string): Promise<void> {
  await f.pool.query(`UPDATE ${f.writer.table.sql} SET value = value || decode(repeat('00', $1), 'hex') WHERE id = (SELECT id FROM ${f.writer.table.sql} WHERE sent_at IS NULL AND topic = $2 AND partition_key = $3 ORDER BY id LIMIT 1)`, [LIMIT, topic, `${instrument}_H4`]);
}

async function newTopic(name: string, maxMessageBytes: number): Promise<string> {
  const topic = `${f.run}.${name}`;
  await f.transport.ensureTopics([{ name: topic, partitions: 3, retentionMs: 3_600_000, cleanupPolicy: 'delete', maxMessageBytes }]);
  return topic;
}

describe('outbox relay and a topic limit changed while it runs', () => {
  it('a raised limit releases a too-large row at its next attempt, while other keys of the topic keep flowing', async () => {
    const topic = await newTopic('raised', LIMIT);
    await writeOn(topic, 'BIG', 1, 3);
    await padOldest(topic, 'BIG');
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 100, publishTimeoutMs: 10_000, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 2500, factor: 1, maxDelayMs: 2500, jitter: 0 }) });
    let flowing = true;
    let seq = 0;
    const flow = (async () => {
      while (flowing) {
        await writeOn(topic, 'FLOW', ++seq, seq);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      await waitFor('the oversized row met', () => relay.stats().tooLargeRows >= 1, 20_000);
      // Other keys of the topic went out after it (their cycles used the topic's limit) …
      const after = relay.stats().published;
      await waitFor('other keys of the topic published after it', () => relay.stats().published >= after + 2, 10_000);
      // … and only then the operator raises the limit.
      await setLimit(topic, LIMIT * 4);
      await waitFor('the held rows once the limit is raised', async () => (await f.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${f.writer.table.sql} WHERE partition_key = 'BIG_H4' AND sent_at IS NOT NULL`)).rows[0]!.n === 3, 20_000);
      // Met once only: its next attempt read the raised limit (not a limit cached by the FLOW cycles).
      expect(relay.stats().tooLargeRows).toBe(1);
    } finally {
      flowing = false;
      await flow;
      await relay.stop();
    }
  });

  it('reads the limit again at most once per backoff of the topic however many held keys come back, and logs each too-large row once', async () => {
    const topic = await newTopic('many', LIMIT);
    const keys = Array.from({ length: 12 }, (_, i) => `M${String.fromCharCode(65 + i)}`);
    for (const k of keys) {
      await writeOn(topic, k, 1, 1);
      await padOldest(topic, k);
    }
    const lines: { msg: string; level: number }[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; level: number }) });
    const { transport, reads } = counting(f.transport);
    // 1 s holds with 50 % jitter: the keys come back at different times, in different cycles.
    const backoffMs = 1000;
    const relay = await startOutboxRelay({ pool: f.pool, transport, table: f.table, pollIntervalMs: 50, publishTimeoutMs: 10_000, log, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: backoffMs, factor: 1, maxDelayMs: backoffMs, jitter: 0.5 }) });
    const startedMs = Date.now();
    try {
      await waitFor('each oversized row met about three times', () => relay.stats().tooLargeRows >= keys.length * 3, 30_000);
      const elapsedMs = Date.now() - startedMs;
      // The first read, then at most one per backoff (its shortest: 50 % jitter) of the topic.
      expect(reads(topic)).toBeLessThanOrEqual(1 + Math.ceil(elapsedMs / (backoffMs * 0.5)));
      expect(reads(topic)).toBeGreaterThanOrEqual(2); // read again at all
      expect(relay.stats().heldKeys).toBeGreaterThan(0);
    } finally {
      await relay.stop();
    }
    try {
      const tooLargeErrors = lines.filter((l) => l.level === 50 && /larger than the topic takes/.test(l.msg));
      expect(tooLargeErrors).toHaveLength(keys.length);
      expect(await recordCount(f.transport, topic)).toBe(0);
    } finally {
      await f.pool.query(`DELETE FROM ${f.writer.table.sql} WHERE topic = $1`, [topic]); // for the next test's relay
    }
  });

  it('a lowered limit the broker enforces is read again: the rows go out in calls cut by it', async () => {
    const topic = await newTopic('lowered', LIMIT * 4);
    const { transport, reads } = counting(f.transport);
    const relay = await startOutboxRelay({ pool: f.pool, transport, table: f.table, pollIntervalMs: 100, publishTimeoutMs: 10_000, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 300, factor: 1, maxDelayMs: 300, jitter: 0 }) });
    try {
      // The relay reads (and keeps) the topic's limit of 16 KB.
      await writeOn(topic, 'LOW', 1, 1);
      await waitFor('the first row', () => relay.stats().published === 1, 20_000);
      expect(reads(topic)).toBe(1);
      // The operator lowers it to 4 KB; then 20 rows of one key (about 8 KB together) come.
      await setLimit(topic, LIMIT);
      await writeOn(topic, 'LOW', 2, 21);
      await waitFor('all rows of the key', () => relay.stats().published === 21, 20_000);
      const s = relay.stats();
      expect(s.failedAttempts).toBeGreaterThanOrEqual(1); // the broker refused the call cut by the old limit
      expect(s.tooLargeRows).toBe(0);
    } finally {
      await relay.stop();
    }
    expect(await recordCount(f.transport, topic)).toBe(21);
    // In id order: increasing offsets on the key's one partition.
    const landed = (await f.pool.query<{ p: number; o: string }>(`SELECT sent_partition AS p, sent_offset::text AS o FROM ${f.writer.table.sql} WHERE topic = $1 ORDER BY id`, [topic])).rows;
    expect(new Set(landed.map((r) => r.p)).size).toBe(1);
    expect(landed.map((r) => BigInt(r.o)).every((o, i, all) => i === 0 || o > all[i - 1]!)).toBe(true);
  });
});
