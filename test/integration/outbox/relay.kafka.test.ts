/**
 * The outbox relay on real Kafka and PostgreSQL: the row holds the encoded record, NOTIFY wakes
 * the relay, a late-committing smaller id is not skipped, two relays keep per-key order.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureOutboxSchema, startOutboxRelay } from '../../../src/bus/outbox/index.js';
import type { OutboxRelay } from '../../../src/bus/outbox/index.js';
import { isGatewayError } from '../../../src/core/errors.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { IDENTITY, KIND, outboxFixture, readTopic, recordCount, rowStates, seqByKey, seriesUpdate, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
const relays: OutboxRelay[] = [];
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
});
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop()));
});
afterAll(async () => {
  await f?.close();
});

async function clearTable(): Promise<void> {
  await f.pool.query(`TRUNCATE ${f.writer.table.sql}`);
}

describe('outbox writer and relay', () => {
  it('writes the encoded event in the caller transaction; NOTIFY (not polling) wakes the relay; the row is marked with where it landed', async () => {
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 600_000 });
    relays.push(relay);
    expect(relay.stats().listening).toBe(true);
    await waitFor('the first (empty) cycle', () => relay.stats().cycles >= 1);
    const before = await recordCount(f.transport, f.topic);

    const c = await f.pool.connect();
    let receipt;
    try {
      await c.query('BEGIN');
      receipt = (await f.writer.write(c, KIND, seriesUpdate('EUR/USD', 1), { subject: 'EUR-USD_H4__22031513', correlationid: '3f1a1d7e-6f53-4b8a-9a7e-3f3f8d2f0a11' }))!;
      // Written but not committed: invisible to the relay, nothing published.
      await new Promise((r) => setTimeout(r, 300));
      expect(await recordCount(f.transport, f.topic)).toBe(before);
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    expect(receipt.topic).toBe(f.topic);
    expect(receipt.partitionkey).toBe('EUR-USD_H4');
    expect(receipt.source).toBe(`urn:${IDENTITY.service}:${IDENTITY.instance}`);

    // Poll interval is 10 minutes: only the NOTIFY sent at commit can make this fast.
    await waitFor('the row to be published', () => relay.stats().published === 1, 10_000);
    const seen = await readTopic(f, f.topic, before + 1);
    const mine = seen.filter((s) => s.id === receipt.id);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ key: 'EUR-USD_H4', seq: 1, source: receipt.source });

    const row = (await f.pool.query<{ sent_partition: number; sent_offset: string; attempts: number; event_id: string }>(`SELECT sent_partition, sent_offset::text, attempts, event_id FROM ${f.writer.table.sql} WHERE id = $1`, [receipt.rowId])).rows[0]!;
    expect(row).toEqual({ sent_partition: mine[0]!.partition, sent_offset: mine[0]!.offset.toString(), attempts: 1, event_id: receipt.id });

    // The record carries the full envelope, decoded with the registry schema.
    const records: { correlationid: unknown; subject: unknown; eventname: unknown; type: unknown; data: unknown }[] = [];
    const cons = await f.transport.consume({ group: `${f.run}-env`, topics: [f.topic], startFrom: 'earliest' }, async (rec) => {
      const env = await f.codec.fromRecord(rec);
      if (env.attributes.id === receipt.id) records.push({ correlationid: env.attributes.correlationid, subject: env.attributes.subject, eventname: env.attributes.eventname, type: env.attributes.type, data: env.data?.kind === 'json' ? env.data.value : undefined });
    });
    await waitFor('the envelope', () => records.length === 1);
    await cons.stop();
    expect(records[0]).toMatchObject({
      correlationid: '3f1a1d7e-6f53-4b8a-9a7e-3f3f8d2f0a11',
      subject: 'EUR-USD_H4__22031513',
      eventname: 'SeriesUpdateCompleted',
      type: 'd6b5e2f6-5144-43bb-a2ec-5317301b7208',
      data: { instrument: 'EUR/USD', timeframe: 'H4', barsAppended: 1, seriesLength: 1001, barKey: 'EUR-USD_H4__22031513' },
    });
  });

  it('a bad event fails in the caller transaction before anything is written', async () => {
    await clearTable();
    const c = await f.pool.connect();
    try {
      await c.query('BEGIN');
      // @ts-expect-error barsAppended is an int: refused by the types and, at run time, by the codec
      const err = await f.writer.write(c, KIND, { ...seriesUpdate('EUR/USD', 1), barsAppended: 'many' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isGatewayError(err, 'CEG_INVALID_DATA')).toBe(true);
      await c.query('ROLLBACK');
    } finally {
      c.release();
    }
    expect((await rowStates(f)).total).toBe(0);
  });

  it('a transaction that commits a smaller row id after a larger one was published is delivered too', async () => {
    await clearTable();
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 200 });
    relays.push(relay);
    const before = await recordCount(f.transport, f.topic);
    const slow = await f.pool.connect();
    const fast = await f.pool.connect();
    try {
      await slow.query('BEGIN');
      const small = (await f.writer.write(slow, KIND, seriesUpdate('GBP/USD', 1)))!;
      await fast.query('BEGIN');
      const large = (await f.writer.write(fast, KIND, seriesUpdate('GBP/USD', 2)))!;
      expect(BigInt(small.rowId)).toBeLessThan(BigInt(large.rowId));
      await fast.query('COMMIT');
      // The larger id is relayed while the smaller one is still uncommitted.
      await waitFor('the larger id to be sent', async () => (await f.pool.query(`SELECT 1 FROM ${f.writer.table.sql} WHERE id = $1 AND sent_at IS NOT NULL`, [large.rowId])).rowCount === 1, 10_000);
      expect((await rowStates(f)).unsent).toBe(0); // the open transaction's row is invisible
      await slow.query('COMMIT');
      await waitFor('the smaller id to be sent', async () => (await rowStates(f)).unsent === 0 && relay.stats().published === 2, 10_000);
      const seen = (await readTopic(f, f.topic, before + 2)).filter((s) => s.id === small.id || s.id === large.id);
      // Both delivered exactly once; the key's order on the topic is the commit order.
      expect(seen.map((s) => s.id)).toEqual([large.id, small.id]);
    } finally {
      slow.release();
      fast.release();
    }
  });

  it('two relays on one table: every row exactly once, per-key order kept across 24 keys', async () => {
    await clearTable();
    const topicBefore = await recordCount(f.transport, f.topic);
    const a = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, batchSize: 7, pollIntervalMs: 100, name: 'relay-a' });
    const b = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, batchSize: 7, pollIntervalMs: 100, name: 'relay-b' });
    relays.push(a, b);
    const keys = Array.from({ length: 24 }, (_, i) => `K${String(i).padStart(2, '0')}/USD`);
    const perKey = 15;
    // Each key is written by its own sequential producer; the keys run concurrently.
    const written = await Promise.all(
      keys.map(async (k) => {
        const ids: string[] = [];
        for (let seq = 1; seq <= perKey; seq++) ids.push((await writeCommitted(f, k, seq)).id);
        return ids;
      }),
    );
    const total = keys.length * perKey;
    await waitFor('every row to be sent', async () => (await rowStates(f)).unsent === 0, 30_000);
    const seen = await readTopic(f, f.topic, topicBefore + total);
    const mine = seen.filter((s) => s.source === `urn:${IDENTITY.service}:${IDENTITY.instance}` && s.key.startsWith('K'));
    expect(mine).toHaveLength(total);
    expect(new Set(mine.map((s) => s.id))).toEqual(new Set(written.flat()));
    const bySeq = seqByKey(mine);
    expect(bySeq.size).toBe(keys.length);
    for (const [, seqs] of bySeq) expect(seqs).toEqual(Array.from({ length: perKey }, (_, i) => i + 1));
    expect(a.stats().published + b.stats().published).toBe(total);
    // Both relays did part of the work.
    expect(a.stats().published).toBeGreaterThan(0);
    expect(b.stats().published).toBeGreaterThan(0);
  });

  it('keepSentMs 0 deletes rows once the broker acknowledged them', async () => {
    await clearTable();
    const relay = await startOutboxRelay({ connectionString: stackEnv().databaseUrl, transport: f.transport, table: f.table, keepSentMs: 0, pollIntervalMs: 100 });
    relays.push(relay);
    await writeCommitted(f, 'AUD/USD', 1);
    await writeCommitted(f, 'AUD/USD', 2);
    await waitFor('both rows published', () => relay.stats().published === 2, 10_000);
    expect((await rowStates(f)).total).toBe(0);
  });

  it('ensureOutboxSchema is idempotent when several processes run it at once', async () => {
    const table = `${f.schema}.again`;
    const clients = await Promise.all([f.pool.connect(), f.pool.connect(), f.pool.connect()]);
    try {
      const results = await Promise.all(clients.map((c) => ensureOutboxSchema(c, { table })));
      expect(results.map((t) => t.sql)).toEqual(Array(3).fill(`"${f.schema}"."again"`));
      await ensureOutboxSchema(clients[0], { table });
    } finally {
      clients.forEach((c) => c.release());
    }
    const idx = await f.pool.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'again' ORDER BY indexname`, [f.schema]);
    expect(idx.rows.map((r) => r.indexname)).toEqual(['again_key_unsent_idx', 'again_pkey', 'again_sent_at_idx', 'again_unsent_idx']);
  });
});
