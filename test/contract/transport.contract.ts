/**
 * One contract for every Transport adapter (bus spec T3, T14): the memory and Kafka adapters must
 * pass the same cases with the same exact counts and values.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isGatewayError } from '../../src/core/errors.js';
import { partitionForKey } from '../../src/transport/partitioner.js';
import type { Consumption, GroupSpec, OutboundRecord, RecordHeader, Transport, TransportRecord } from '../../src/transport/port.js';
import { redeliverAfter } from '../../src/transport/port.js';
import { waitFor } from '../helpers/wait.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const bytes = (s: string): Uint8Array => enc.encode(s);
const text = (b: Uint8Array | null): string | null => (b === null ? null : dec.decode(b));
const rec = (key: string | null, value: string | null, headers: RecordHeader[] = []): OutboundRecord => ({
  key: key === null ? null : bytes(key),
  value: value === null ? null : bytes(value),
  headers,
});
const unique = (prefix: string): string => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const values = (rs: readonly TransportRecord[]): (string | null)[] => rs.map((r) => text(r.value));
/** One key per partition 0..n-1 (murmur2), so a case can put records on chosen partitions. */
function keysFor(n: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < n; i++) {
    const k = `key-${i}`;
    if (partitionForKey(bytes(k), n) === keys.length) keys.push(k);
  }
  return keys;
}

export interface ContractOptions {
  /** Per-case timeout for the adapter (ms); a real broker needs longer for rebalances. */
  readonly timeoutMs?: number;
  /** The adapter's `kind` when it differs from the suite's name (both Kafka clients are kind 'kafka'). */
  readonly kind?: string;
}

export function transportContract(name: string, make: () => Promise<Transport>, opts: ContractOptions = {}): void {
  const timeout = opts.timeoutMs ?? 10_000;
  const waitMs = Math.max(5_000, timeout - 5_000);

  describe(`Transport contract: ${name}`, () => {
    let t: Transport;
    const running: Consumption[] = [];

    /** A fresh topic for one case. */
    async function topic(partitions: number): Promise<string> {
      const name = unique('contract');
      await t.ensureTopics([{ name, partitions, retentionMs: -1, cleanupPolicy: 'delete' }]);
      return name;
    }

    /** Starts a consumption that collects every record it handles. */
    async function collect(spec: GroupSpec, onRecord?: (r: TransportRecord) => Promise<void>): Promise<{ c: Consumption; got: TransportRecord[] }> {
      const got: TransportRecord[] = [];
      const c = await t.consume(spec, async (r) => {
        if (onRecord) await onRecord(r);
        got.push(r);
      });
      running.push(c);
      return { c, got };
    }

    const until = (what: string, check: () => boolean): Promise<true> => waitFor(what, () => check() || undefined, waitMs, 20);

    beforeEach(async () => {
      t = await make();
      running.length = 0;
    });

    afterEach(async () => {
      await Promise.all(running.map((c) => c.stop()));
      await t.close();
    });

    it('reports its kind and health', async () => {
      expect(t.kind).toBe(opts.kind ?? name);
      expect(await t.isHealthy()).toBe(true);
    });

    it('reads a topic’s max.message.bytes: the one it was created with, or the default; an unknown topic is CEG_INVALID_NAME', async () => {
      const limited = unique('contract-limit');
      await t.ensureTopics([{ name: limited, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete', maxMessageBytes: 50_000 }]);
      expect(await t.maxMessageBytes(limited)).toBe(50_000);
      expect(await t.maxMessageBytes(await topic(1))).toBeGreaterThanOrEqual(1_000_000); // Kafka's default is 1048588
      const err = await t.maxMessageBytes(unique('contract-missing')).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(err, 'CEG_INVALID_NAME')).toBe(true);
    });

    it('returns one position per record, in input order, with consecutive offsets per partition', async () => {
      const tp = await topic(3);
      const positions = await t.produce(tp, [0, 0, 1, 0, 2].map((partition, i) => ({ ...rec(null, `v${i}`), partition })));
      expect(positions.map((p) => [p.topic, p.partition, p.offset])).toEqual([
        [tp, 0, 0n], [tp, 0, 1n], [tp, 1, 0n], [tp, 0, 2n], [tp, 2, 0n],
      ]);
      const more = await t.produce(tp, [{ ...rec(null, 'v5'), partition: 0 }]);
      expect(more).toEqual([{ topic: tp, partition: 0, offset: 3n }]);
    }, timeout);

    it('places keyed records with the murmur2 partitioner', async () => {
      const tp = await topic(3);
      expect(await t.partitionCount(tp)).toBe(3);
      const keys = ['EUR-USD_H4', 'GBP-JPY_M15', 'ü-€-漢字', 'a', '', 'XAU-USD_D1', '😀'];
      const positions = await t.produce(tp, keys.map((k) => rec(k, k)));
      expect(positions.map((p) => p.partition)).toEqual(keys.map((k) => partitionForKey(bytes(k), 3)));
      // The expected placement is known independently of the adapter (kafka-clients 4.1.1 agrees).
      expect(positions[0]!.partition).toBe(partitionForKey(bytes('EUR-USD_H4'), 3));
    }, timeout);

    it('keeps one key on one partition in order, one record in flight per partition', async () => {
      const tp = await topic(3);
      const key = 'EUR-USD_H4';
      const expected = partitionForKey(bytes(key), 3);
      const first = await t.produce(tp, Array.from({ length: 6 }, (_, i) => rec(key, `m${i}`)));
      const second = await t.produce(tp, Array.from({ length: 4 }, (_, i) => rec(key, `m${i + 6}`)));
      const all = [...first, ...second];
      expect(new Set(all.map((p) => p.partition))).toEqual(new Set([expected]));
      expect(all.map((p) => p.offset)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));

      const inFlight = new Map<number, number>();
      let maxInFlight = 0;
      const { got } = await collect({ group: unique('g'), topics: [tp], startFrom: 'earliest' }, async (r) => {
        const n = (inFlight.get(r.partition) ?? 0) + 1;
        inFlight.set(r.partition, n);
        maxInFlight = Math.max(maxInFlight, n);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight.set(r.partition, n - 1);
      });
      await until('10 records', () => got.length >= 10);
      expect(values(got)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
      expect(got.map((r) => r.partition)).toEqual(Array(10).fill(expected));
      expect(got.map((r) => r.offset)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));
      expect(got.every((r) => r.topic === tp && text(r.key) === key)).toBe(true);
      expect(maxInFlight).toBe(1);
    }, timeout);

    it('round-trips a tombstone (null value) and a null key', async () => {
      const tp = await topic(1);
      await t.produce(tp, [rec('gone', null), rec(null, 'keyless')]);
      const { got } = await collect({ group: unique('g'), topics: [tp], startFrom: 'earliest' });
      await until('2 records', () => got.length >= 2);
      // Compared as bytes: an adapter may hand a Buffer (a Uint8Array) over the fetched bytes.
      expect(got.map((r) => [text(r.key), r.value === null ? null : new Uint8Array(r.value)])).toEqual([['gone', null], [null, bytes('keyless')]]);
      expect(got[0]!.value).toBeNull();
      expect(got[1]!.key).toBeNull();
    }, timeout);

    it('keeps header order, repeated names and binary values', async () => {
      const tp = await topic(1);
      const headers: RecordHeader[] = [
        ['ce_id', bytes('id-1')],
        ['ce_type', bytes('com.example.bar')],
        ['x-hop', bytes('first')],
        ['x-hop', bytes('second')],
        ['x-bin', Uint8Array.of(0, 255, 128, 10, 0)],
        ['x-empty', new Uint8Array(0)],
        ['x-ü', bytes('€')],
      ];
      const ts = 1_700_000_000_123;
      await t.produce(tp, [{ ...rec('k', 'v', headers), timestampMs: ts }]);
      const { got } = await collect({ group: unique('g'), topics: [tp], startFrom: 'earliest' });
      await until('1 record', () => got.length >= 1);
      const h = got[0]!.headers;
      expect(h.map(([n]) => n)).toEqual(['ce_id', 'ce_type', 'x-hop', 'x-hop', 'x-bin', 'x-empty', 'x-ü']);
      expect(h.map(([, v]) => Array.from(v))).toEqual(headers.map(([, v]) => Array.from(v)));
      expect(h.every(([, v]) => v instanceof Uint8Array)).toBe(true);
      expect(got[0]!.timestampMs).toBe(ts);
    }, timeout);

    it('resumes a group from its committed offset after stop (T4)', async () => {
      const tp = await topic(1);
      const group = unique('g');
      await t.produce(tp, [rec('k', 'a1'), rec('k', 'a2'), rec('k', 'a3')]);
      const first = await collect({ group, topics: [tp], startFrom: 'earliest' });
      await until('3 records', () => first.got.length >= 3);
      await first.c.stop();
      await first.c.done;
      expect(first.c.assignments()).toEqual([]);
      expect(values(first.got)).toEqual(['a1', 'a2', 'a3']);

      await t.produce(tp, [rec('k', 'b1'), rec('k', 'b2')]);
      const second = await collect({ group, topics: [tp], startFrom: 'earliest' });
      await t.produce(tp, [rec('k', 'end')]);
      await until('the sentinel', () => values(second.got).includes('end'));
      expect(values(second.got)).toEqual(['b1', 'b2', 'end']);
      expect(second.got.map((r) => r.offset)).toEqual([3n, 4n, 5n]);
    }, timeout);

    it('starts a new group at latest or earliest as told (T5)', async () => {
      const tp = await topic(2);
      await t.produce(tp, [rec('x', 'old1'), rec('y', 'old2')]);
      const latest = await collect({ group: unique('latest'), topics: [tp], startFrom: 'latest' });
      const earliest = await collect({ group: unique('earliest'), topics: [tp], startFrom: 'earliest' });
      const byDefault = await collect({ group: unique('default'), topics: [tp] });
      await t.produce(tp, [rec('x', 'new1'), rec('y', 'new2')]);
      await until('all three groups see both new records', () =>
        [latest, earliest, byDefault].every((g) => values(g.got).includes('new1') && values(g.got).includes('new2')));
      // Sentinel on each partition: once seen, nothing else can still be on its way.
      await t.produce(tp, [0, 1].map((partition) => ({ ...rec(null, `end${partition}`), partition })));
      await until('the sentinels', () => [latest, earliest, byDefault].every((g) => values(g.got).filter((v) => v?.startsWith('end')).length === 2));
      const sorted = (g: { got: TransportRecord[] }): (string | null)[] => values(g.got).sort();
      expect(sorted(latest)).toEqual(['end0', 'end1', 'new1', 'new2']);
      expect(sorted(byDefault)).toEqual(['end0', 'end1', 'new1', 'new2']);
      expect(sorted(earliest)).toEqual(['end0', 'end1', 'new1', 'new2', 'old1', 'old2']);
    }, timeout);

    it('splits partitions between two members of one group and rebalances when one leaves (T9)', async () => {
      const tp = await topic(3);
      const group = unique('g');
      const a = await collect({ group, topics: [tp], startFrom: 'earliest', instanceId: 'a' });
      const b = await collect({ group, topics: [tp], startFrom: 'earliest', instanceId: 'b' });
      await until('a 2+1 split', () => {
        const pa = a.c.assignments().map((x) => x.partition);
        const pb = b.c.assignments().map((x) => x.partition);
        return pa.length > 0 && pb.length > 0 && new Set([...pa, ...pb]).size === 3 && pa.length + pb.length === 3;
      });
      const ownedByA = new Set(a.c.assignments().map((x) => x.partition));
      const ownedByB = new Set(b.c.assignments().map((x) => x.partition));
      expect([ownedByA.size, ownedByB.size].sort()).toEqual([1, 2]);
      expect(a.c.assignments().every((x) => x.topic === tp)).toBe(true);

      const keys = Array.from({ length: 30 }, (_, i) => `key-${i}`);
      await t.produce(tp, keys.map((k) => rec(k, k)));
      await until('30 records between both', () => a.got.length + b.got.length >= 30);
      const handled = [...values(a.got), ...values(b.got)].sort();
      expect(handled).toEqual([...keys].sort());
      expect(a.got.every((r) => ownedByA.has(r.partition))).toBe(true);
      expect(b.got.every((r) => ownedByB.has(r.partition))).toBe(true);

      // b leaves (committing what it handled); a takes over every partition.
      await b.c.stop();
      await until('a owns all 3 partitions', () => a.c.assignments().length === 3);
      await t.produce(tp, [0, 1, 2].map((partition) => ({ ...rec(null, `after-${partition}`), partition })));
      await until('3 more at a', () => values(a.got).filter((v) => v!.startsWith('after-')).length === 3);
      const after = values(a.got).filter((v) => v!.startsWith('after-')).sort();
      expect(after).toEqual(['after-0', 'after-1', 'after-2']);
      // Nothing b had handled and committed came back to a.
      expect(a.got.length + b.got.length).toBe(33);
    }, timeout);

    it('gives every record to each of two groups (T10)', async () => {
      const tp = await topic(3);
      const g1 = await collect({ group: unique('g1'), topics: [tp], startFrom: 'earliest' });
      const g2 = await collect({ group: unique('g2'), topics: [tp], startFrom: 'earliest' });
      const sent = Array.from({ length: 12 }, (_, i) => `r${i}`);
      await t.produce(tp, sent.map((v, i) => rec(`k${i % 5}`, v)));
      await until('12 records in each group', () => g1.got.length >= 12 && g2.got.length >= 12);
      await t.produce(tp, [0, 1, 2].map((partition) => ({ ...rec(null, `end${partition}`), partition })));
      await until('the sentinels', () => [g1, g2].every((g) => g.got.length >= 15));
      const expected = [...sent, 'end0', 'end1', 'end2'].sort();
      expect(values(g1.got).sort()).toEqual(expected);
      expect(values(g2.got).sort()).toEqual(expected);
    }, timeout);

    it('stops on a handler rejection without committing the failed record', async () => {
      const tp = await topic(1);
      const group = unique('g');
      await t.produce(tp, [rec('k', 'ok'), rec('k', 'boom'), rec('k', 'after')]);
      const attempts: (string | null)[] = [];
      const failure = new Error('handler failed');
      const first = await collect({ group, topics: [tp], startFrom: 'earliest' }, (r) => {
        attempts.push(text(r.value));
        return text(r.value) === 'boom' ? Promise.reject(failure) : Promise.resolve();
      });
      await expect(first.c.done).rejects.toBe(failure);
      expect(attempts).toEqual(['ok', 'boom']);
      expect(values(first.got)).toEqual(['ok']);
      await first.c.stop(); // idempotent after a failure

      const second = await collect({ group, topics: [tp], startFrom: 'earliest' });
      await until('2 records', () => second.got.length >= 2);
      await t.produce(tp, [rec('k', 'end')]);
      await until('the sentinel', () => values(second.got).includes('end'));
      expect(values(second.got)).toEqual(['boom', 'after', 'end']);
      expect(second.got[0]!.offset).toBe(1n);
    }, timeout);

    it('advances end offsets by the produced count', async () => {
      const tp = await topic(3);
      const before = await t.endOffsets(tp);
      expect(before).toEqual([0, 1, 2].map((partition) => ({ partition, offset: 0n })));
      const positions = await t.produce(tp, ['a', 'b', 'c', 'd', 'e'].map((k) => rec(k, k)));
      const after = await t.endOffsets(tp);
      expect(after.map((o) => o.partition)).toEqual([0, 1, 2]);
      for (const { partition, offset } of after) {
        expect(offset).toBe(BigInt(positions.filter((p) => p.partition === partition).length));
      }
      expect(after.reduce((n, o) => n + o.offset, 0n)).toBe(5n);
    }, timeout);

    it('never auto-creates a topic', async () => {
      const missing = unique('missing');
      const err: unknown = await t.produce(missing, [rec('k', 'v')]).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(err, 'CEG_INVALID_NAME')).toBe(true);
      expect(isGatewayError(err) && err.retriable).toBe(false);
      const countErr: unknown = await t.partitionCount(missing).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(countErr, 'CEG_INVALID_NAME')).toBe(true);
      const again: unknown = await t.produce(missing, [rec('k', 'v')]).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(again, 'CEG_INVALID_NAME')).toBe(true);
    }, timeout);

    it("refuses a topic whose name differs from an existing one only in '.' against '_' (Kafka's collision rule) with CEG_CONFLICT, creating nothing", async () => {
      const stem = unique('collide').replaceAll('-', '');
      await t.ensureTopics([{ name: `${stem}.a_b.dlq`, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
      for (const other of [`${stem}_a.b.dlq`, `${stem}.a.b.dlq`, `${stem}_a_b_dlq`]) {
        const err: unknown = await t.ensureTopics([{ name: other, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]).then(() => undefined, (e: unknown) => e);
        expect(isGatewayError(err, 'CEG_CONFLICT'), `${other}: ${String(err)}`).toBe(true);
        expect(isGatewayError(err) && err.retriable).toBe(false);
        expect(isGatewayError(err) && err.details.topic).toBe(other);
      }
      // Refused again: an existing topic would be left as it is without a check, so nothing was created.
      const again: unknown = await t.ensureTopics([{ name: `${stem}_a.b.dlq`, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(again, 'CEG_CONFLICT')).toBe(true);
      // Two colliding names in one call: the first is created, the second refused.
      const pair = unique('pair').replaceAll('-', '');
      const both: unknown = await t.ensureTopics([{ name: `${pair}.x`, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }, { name: `${pair}_x`, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(both, 'CEG_CONFLICT')).toBe(true);
      // The existing name itself is fine.
      await t.ensureTopics([{ name: `${stem}.a_b.dlq`, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
    }, timeout);

    it('leaves an existing topic as it is', async () => {
      const tp = await topic(2);
      await t.ensureTopics([{ name: tp, partitions: 5, retentionMs: 1000, cleanupPolicy: 'compact' }]);
      expect(await t.partitionCount(tp)).toBe(2);
    }, timeout);

    it('replays from the earliest offset after resetOffsets, and from a given offset', async () => {
      const tp = await topic(1);
      const group = unique('g');
      await t.produce(tp, [rec('k', 'r0'), rec('k', 'r1'), rec('k', 'r2')]);
      const first = await collect({ group, topics: [tp], startFrom: 'earliest' });
      await until('3 records', () => first.got.length >= 3);
      const busy: unknown = await t.resetOffsets(group, tp, { kind: 'earliest' }).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(busy)).toBe(true);
      await first.c.stop();

      await t.resetOffsets(group, tp, { kind: 'earliest' });
      const replay = await collect({ group, topics: [tp], startFrom: 'latest' });
      await until('3 replayed records', () => replay.got.length >= 3);
      await replay.c.stop();
      expect(values(replay.got)).toEqual(['r0', 'r1', 'r2']);

      await t.resetOffsets(group, tp, { kind: 'offset', partition: 0, offset: 2n });
      const fromTwo = await collect({ group, topics: [tp], startFrom: 'latest' });
      await t.produce(tp, [rec('k', 'end')]);
      await until('the sentinel', () => values(fromTwo.got).includes('end'));
      expect(values(fromTwo.got)).toEqual(['r2', 'end']);
    }, timeout);

    it('a group whose offsets are set before it ever joins starts there: records written between the reset and the join are not skipped', async () => {
      const tp = await topic(2);
      const group = unique('g-new');
      await t.produce(tp, [rec('a', 'before-1'), rec('b', 'before-2')]);
      await t.resetOffsets(group, tp, { kind: 'latest' }); // a subscription created "at latest" (issue 8)
      await t.produce(tp, [rec('a', 'after-1'), rec('b', 'after-2')]);
      const c = await collect({ group, topics: [tp], startFrom: 'latest' });
      await until('the records after the reset', () => c.got.length >= 2);
      await t.produce(tp, [rec('a', 'end')]);
      await until('the sentinel', () => values(c.got).includes('end'));
      await c.c.stop();
      expect(values(c.got).sort()).toEqual(['after-1', 'after-2', 'end']);
    }, timeout);

    it('startAt: a group without a commit starts each listed partition at its offset, not at startFrom; unlisted partitions follow startFrom', async () => {
      const tp = await topic(3);
      await t.produce(tp, [0, 0, 0, 1, 1, 1, 2].map((partition, i) => ({ ...rec(null, `p${partition}-${i}`), partition })));
      const group = unique('g-start-at');
      const c = await collect({ group, topics: [tp], startFrom: 'latest', startAt: [{ topic: tp, partition: 0, offset: 1n }, { topic: tp, partition: 1, offset: 2n }] });
      await t.produce(tp, [0, 1, 2].map((partition) => ({ ...rec(null, `end${partition}`), partition })));
      await until('the sentinels', () => values(c.got).filter((v) => v?.startsWith('end')).length === 3);
      await c.c.stop();
      // Partition 0 from offset 1, partition 1 from offset 2 (neither from the end nor the start); partition 2 at latest.
      expect(c.got.filter((r) => r.partition === 0).map((r) => [text(r.value), r.offset])).toEqual([['p0-1', 1n], ['p0-2', 2n], ['end0', 3n]]);
      expect(c.got.filter((r) => r.partition === 1).map((r) => [text(r.value), r.offset])).toEqual([['p1-5', 2n], ['end1', 3n]]);
      expect(values(c.got.filter((r) => r.partition === 2))).toEqual(['end2']);
      expect(await t.committedOffsets(group, tp)).toEqual([{ partition: 0, offset: 4n }, { partition: 1, offset: 4n }, { partition: 2, offset: 2n }]);
    }, timeout);

    it('startAt: a partition with a committed offset keeps it, behind or ahead of the startAt offset', async () => {
      const tp = await topic(2);
      await t.produce(tp, [0, 0, 0, 1, 1, 1].map((partition, i) => ({ ...rec(null, `p${partition}-${i}`), partition })));
      const group = unique('g-start-at-committed');
      await t.commitOffsets(group, tp, [{ partition: 0, offset: 1n }, { partition: 1, offset: 2n }]);
      const c = await collect({ group, topics: [tp], startFrom: 'earliest', startAt: [{ topic: tp, partition: 0, offset: 2n }, { topic: tp, partition: 1, offset: 0n }] });
      await t.produce(tp, [0, 1].map((partition) => ({ ...rec(null, `end${partition}`), partition })));
      await until('the sentinels', () => values(c.got).filter((v) => v?.startsWith('end')).length === 2);
      await c.c.stop();
      expect(values(c.got.filter((r) => r.partition === 0))).toEqual(['p0-1', 'p0-2', 'end0']);
      expect(values(c.got.filter((r) => r.partition === 1))).toEqual(['p1-5', 'end1']);
    }, timeout);

    it('startAt: entries for topics the group does not read are ignored (nothing committed there, no error)', async () => {
      const tp = await topic(1);
      const other = await topic(1);
      await t.produce(tp, [rec('k', 'a0'), rec('k', 'a1')]);
      await t.produce(other, [rec('k', 'o0'), rec('k', 'o1')]);
      const group = unique('g-start-at-other');
      const c = await collect({ group, topics: [tp], startFrom: 'latest', startAt: [{ topic: other, partition: 0, offset: 0n }, { topic: unique('contract-missing'), partition: 0, offset: 0n }, { topic: tp, partition: 0, offset: 1n }] });
      await t.produce(tp, [rec('k', 'end')]);
      await until('the sentinel', () => values(c.got).includes('end'));
      await c.c.stop();
      expect(values(c.got)).toEqual(['a1', 'end']);
      expect(c.got.every((r) => r.topic === tp)).toBe(true);
      expect(await t.committedOffsets(group, other)).toEqual([{ partition: 0, offset: null }]);
    }, timeout);

    it.each([
      ['one record at a time', undefined],
      ['with lanes of 4', 4],
    ] as const)('startAt: a partition this member gets in a later rebalance, still without a commit, starts at its startAt offset (%s)', async (_how, inFlightPerPartition) => {
      // b stands for a member that holds partitions without having committed a start there (one of
      // another definition, or whose start commit at join failed); it stops with a record in hand,
      // so nothing is committed. a, already in the group, then takes b's partition: it must start
      // at a's startAt offset — not at 'latest' as of that rebalance, which skips b's record.
      const tp = await topic(2);
      const group = unique('g-start-at-later');
      let entered = 0;
      const lanes = inFlightPerPartition === undefined ? {} : { inFlightPerPartition };
      const b = await t.consume({ group, topics: [tp], startFrom: 'earliest', instanceId: 'b', stopTimeoutMs: 500, ...lanes }, () => {
        entered++;
        return new Promise<void>(() => undefined); // never settles: stop() leaves it uncommitted
      });
      running.push(b);
      const a = await collect({ group, topics: [tp], startFrom: 'latest', instanceId: 'a', ...lanes, startAt: [{ topic: tp, partition: 0, offset: 0n }, { topic: tp, partition: 1, offset: 0n }] });
      await until('a 1+1 split', () => a.c.assignments().length === 1 && b.assignments().length === 1);
      const bHolds = b.assignments()[0]!.partition;
      const aHolds = a.c.assignments()[0]!.partition;
      await t.produce(tp, [{ ...rec(null, `x${bHolds}`), partition: bHolds }, { ...rec(null, `x${aHolds}`), partition: aHolds }]);
      await until('b holds its record and a has its own', () => entered >= 1 && values(a.got).includes(`x${aHolds}`));
      await b.stop();
      await until('a owns both partitions', () => a.c.assignments().length === 2);
      await t.produce(tp, [0, 1].map((partition) => ({ ...rec(null, `end${partition}`), partition })));
      await until('the sentinels', () => values(a.got).filter((v) => v?.startsWith('end')).length === 2);
      expect(values(a.got.filter((r) => r.partition === bHolds))).toEqual([`x${bHolds}`, `end${bHolds}`]);
      expect(values(a.got.filter((r) => r.partition === aHolds))).toEqual([`x${aHolds}`, `end${aHolds}`]);
    }, timeout);

    it('rejects a produce whose signal is already aborted', async () => {
      const tp = await topic(1);
      const ac = new AbortController();
      ac.abort();
      const err: unknown = await t.produce(tp, [rec('k', 'v')], { signal: ac.signal }).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(err, 'CEG_DELIVERY_TIMEOUT')).toBe(true);
      expect(isGatewayError(err) && err.retriable).toBe(true);
    }, timeout);

    it('redeliver pauses only its own partition and hands the same record again after the wait', async () => {
      const tp = await topic(2);
      const [k0, k1] = keysFor(2);
      const group = unique('g');
      const seen: { v: string | null; at: number }[] = [];
      let asked = 0;
      const c = await t.consume({ group, topics: [tp], startFrom: 'earliest' }, (r) => {
        seen.push({ v: text(r.value), at: Date.now() });
        if (text(r.value) === 'slow' && asked++ === 0) return Promise.resolve(redeliverAfter(1500));
        return Promise.resolve();
      });
      running.push(c);
      const start = Date.now();
      await t.produce(tp, [rec(k0!, 'slow'), rec(k0!, 'after-slow'), rec(k1!, 'other-1')]);
      await until('the other partition', () => seen.some((s) => s.v === 'other-1'));
      await t.produce(tp, [rec(k1!, 'other-2')]);
      await until('everything', () => seen.some((s) => s.v === 'after-slow') && seen.some((s) => s.v === 'other-2'));
      const order = seen.map((s) => s.v);
      // Same partition: slow, slow again, then after-slow; the other partition did not wait for it.
      expect(order.filter((v) => v === 'slow' || v === 'after-slow')).toEqual(['slow', 'slow', 'after-slow']);
      const other2 = seen.find((s) => s.v === 'other-2')!.at;
      const slowAgain = seen.filter((s) => s.v === 'slow')[1]!.at;
      expect(other2).toBeLessThan(slowAgain);
      expect(slowAgain - start).toBeGreaterThanOrEqual(1400);
    }, timeout);

    it('commits handled offsets at stop even when the commit batch is not full', async () => {
      const tp = await topic(1);
      const group = unique('g');
      await t.produce(tp, [rec('k', 'a1'), rec('k', 'a2')]);
      const first = await collect({ group, topics: [tp], startFrom: 'earliest', commitEveryRecords: 10_000, commitIntervalMs: 600_000 });
      await until('2 records', () => first.got.length >= 2);
      await first.c.stop();
      await t.produce(tp, [rec('k', 'b1')]);
      const second = await collect({ group, topics: [tp], startFrom: 'earliest' });
      await until('b1', () => values(second.got).includes('b1'));
      expect(values(second.got)).toEqual(['b1']);
    }, timeout);

    // Without lanes (one record at a time) and with them (push subscriptions: several records in hand per partition).
    it.each([
      ['one record at a time', undefined],
      ['with lanes of 4', 4],
    ] as const)('stop() returns by its deadline while a handler ignores its abort signal, leaving that record uncommitted (%s)', async (_how, inFlightPerPartition) => {
      const tp = await topic(1);
      const group = unique('g');
      await t.produce(tp, [rec('k', 'stuck'), rec('j', 'stuck too')]);
      let aborted = 0;
      let entered = 0;
      const c = await t.consume({ group, topics: [tp], startFrom: 'earliest', stopTimeoutMs: 1000, ...(inFlightPerPartition === undefined ? {} : { inFlightPerPartition }) }, (_r, ctx) => {
        entered++;
        ctx.signal.addEventListener('abort', () => aborted++);
        return new Promise<void>(() => undefined); // never settles
      });
      // With lanes both records are in hand at once; one at a time, the first holds up the second.
      // The memory transport has no lanes (the port leaves them to the Kafka adapters): one at a time.
      const inHand = inFlightPerPartition === undefined || t.kind === 'memory' ? 1 : 2;
      await until('the handler holds the records', () => entered >= inHand);
      const t0 = Date.now();
      await c.stop();
      expect(Date.now() - t0).toBeLessThan(waitMs);
      expect(aborted).toBe(inHand);
      const again = await collect({ group, topics: [tp], startFrom: 'earliest' });
      await until('the records again', () => again.got.length >= 2);
      expect(values(again.got)).toEqual(['stuck', 'stuck too']);
    }, timeout);

    it('reads without a group: from earliest, bounded by the end offsets, nothing committed', async () => {
      const tp = await topic(2);
      await t.produce(tp, [rec('a', 'r1'), rec('b', 'r2'), rec('c', 'r3')]);
      const got: string[] = [];
      const read = await t.read({ topics: [tp], from: { kind: 'earliest' }, untilEnd: true }, (r) => Promise.resolve(void got.push(text(r.value)!)));
      await read.done;
      expect(got.sort()).toEqual(['r1', 'r2', 'r3']);
      // From a time before 1970 (before every record; -1 is "latest" to Kafka's ListOffsets): everything.
      const before1970: string[] = [];
      const old = await t.read({ topics: [tp], from: { kind: 'timestamp', timestampMs: -1 }, untilEnd: true }, (r) => Promise.resolve(void before1970.push(text(r.value)!)));
      await old.done;
      expect(before1970.sort()).toEqual(['r1', 'r2', 'r3']);
      // A bounded read of an empty topic ends at once.
      const empty = await topic(1);
      const r2 = await t.read({ topics: [empty], from: { kind: 'earliest' }, untilEnd: true }, () => Promise.resolve());
      await r2.done;
      // Following from latest sees only what comes after.
      const later: string[] = [];
      const follow = await t.read({ topics: [tp], from: { kind: 'latest' } }, (r) => Promise.resolve(void later.push(text(r.value)!)));
      await t.produce(tp, [rec('a', 'r4')]);
      await until('r4', () => later.includes('r4'));
      await follow.stop();
      expect(later).toEqual(['r4']);
    }, timeout);

    it('reads only the partitions a positions start lists, each from its offset', async () => {
      const tp = await topic(3);
      await t.produce(tp, [0, 0, 0, 1, 1, 2].map((partition, i) => ({ ...rec(null, `p${partition}-${i}`), partition })));
      const got: string[] = [];
      const read = await t.read({ topics: [tp], from: { kind: 'positions', positions: [{ topic: tp, partition: 0, offset: 1n }, { topic: tp, partition: 2, offset: 0n }] }, untilEnd: true }, (r) => Promise.resolve(void got.push(text(r.value)!)));
      await read.done;
      expect(got.sort()).toEqual(['p0-1', 'p0-2', 'p2-5']);
      // Following from the end offset of one partition sees only what is written after.
      const later: string[] = [];
      const follow = await t.read({ topics: [tp], from: { kind: 'positions', positions: [{ topic: tp, partition: 1, offset: 2n }] } }, (r) => Promise.resolve(void later.push(text(r.value)!)));
      await t.produce(tp, [{ ...rec(null, 'other'), partition: 0 }, { ...rec(null, 'mine'), partition: 1 }]);
      await until('the new record of partition 1', () => later.includes('mine'));
      await follow.stop();
      expect(later).toEqual(['mine']);
    }, timeout);

    it('looks up offsets by earliest, latest and time without changing anything', async () => {
      const tp = await topic(2);
      await t.produce(tp, [{ ...rec(null, 'a'), partition: 0 }, { ...rec(null, 'b'), partition: 0 }, { ...rec(null, 'c'), partition: 1 }]);
      const cut = Date.now() + 1;
      await new Promise((r) => setTimeout(r, 20));
      await t.produce(tp, [{ ...rec(null, 'd'), partition: 0 }]);
      expect(await t.offsetsAt(tp, { kind: 'earliest' })).toEqual([{ partition: 0, offset: 0n }, { partition: 1, offset: 0n }]);
      expect(await t.offsetsAt(tp, { kind: 'latest' })).toEqual([{ partition: 0, offset: 3n }, { partition: 1, offset: 1n }]);
      // At or after the time: partition 0's record d; partition 1 has none, so its end offset.
      expect(await t.offsetsAt(tp, { kind: 'timestamp', timestampMs: cut })).toEqual([{ partition: 0, offset: 2n }, { partition: 1, offset: 1n }]);
      // A time before 1970 is before every record: the earliest offsets. Kafka's ListOffsets reads
      // -1 as latest, -2 as earliest and -3 as max timestamp, and refuses other negative times.
      for (const before1970 of [-1, -2, -3, -4, -1_000, Date.UTC(1960, 0, 1), Date.UTC(1, 0, 1)]) {
        expect(await t.offsetsAt(tp, { kind: 'timestamp', timestampMs: before1970 }), String(before1970)).toEqual([{ partition: 0, offset: 0n }, { partition: 1, offset: 0n }]);
      }
      expect(await t.endOffsets(tp)).toEqual([{ partition: 0, offset: 3n }, { partition: 1, offset: 1n }]);
      const err = await t.offsetsAt(unique('contract-missing'), { kind: 'latest' }).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(err, 'CEG_INVALID_NAME')).toBe(true);
    }, timeout);

    it('commits offsets for a group without members, reads them back, and a member starts there', async () => {
      const tp = await topic(2);
      const group = unique('g-cursor');
      await t.produce(tp, [0, 0, 0, 1, 1].map((partition, i) => ({ ...rec(null, `v${i}`), partition })));
      expect(await t.committedOffsets(group, tp)).toEqual([{ partition: 0, offset: null }, { partition: 1, offset: null }]);
      await t.commitOffsets(group, tp, [{ partition: 0, offset: 2n }]);
      expect(await t.committedOffsets(group, tp)).toEqual([{ partition: 0, offset: 2n }, { partition: 1, offset: null }]);
      await t.commitOffsets(group, tp, [{ partition: 1, offset: 1n }]);
      expect(await t.committedOffsets(group, tp)).toEqual([{ partition: 0, offset: 2n }, { partition: 1, offset: 1n }]);
      const bad = await t.commitOffsets(group, tp, [{ partition: 5, offset: 0n }]).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(bad, 'CEG_INVALID_OPTIONS') && !bad.retriable).toBe(true);

      const member = await collect({ group, topics: [tp], startFrom: 'earliest' });
      await until('the records after the commits', () => member.got.length >= 2);
      expect(values(member.got).sort()).toEqual(['v2', 'v4']);
      // While the group has a member, a member-less commit is refused (retriable) and reading works.
      const busy = await t.commitOffsets(group, tp, [{ partition: 0, offset: 0n }]).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(busy, 'CEG_INVALID_OPTIONS') && busy.retriable).toBe(true);
      await member.c.stop();
      expect(await t.committedOffsets(group, tp)).toEqual([{ partition: 0, offset: 3n }, { partition: 1, offset: 2n }]);
    }, timeout);

    it('describes a group’s live members: none for an unknown or member-less group, Stable with one while a member consumes, none after it stops', async () => {
      const tp = await topic(2);
      const group = unique('g-members');
      expect(await t.groupMembers(group)).toBeUndefined(); // never used
      expect(await t.groupMembers('')).toBeUndefined();
      await t.commitOffsets(group, tp, [{ partition: 0, offset: 0n }]);
      expect(await t.groupMembers(group)).toBeUndefined(); // committed offsets, no member (Kafka's 'Empty')
      const member = await collect({ group, topics: [tp], startFrom: 'earliest' });
      // Right after a join the broker may still say 'CompletingRebalance' for a moment.
      const live = await waitFor('one member, Stable', async () => {
        const d = await t.groupMembers(group);
        return d?.state === 'Stable' && d.members === 1 ? d : undefined;
      }, waitMs, 100);
      expect(live).toEqual({ state: 'Stable', members: 1 });
      // Asking joins nothing: the member keeps both partitions and goes on consuming.
      await t.produce(tp, [0, 1].map((partition) => ({ ...rec(null, `m${partition}`), partition })));
      await until('both records', () => member.got.length >= 2);
      expect(member.c.assignments().map((a) => a.partition)).toEqual([0, 1]);
      await member.c.stop();
      await waitFor('no member', async () => (await t.groupMembers(group)) === undefined || undefined, waitMs, 100);
      await t.close();
      const closed: unknown = await t.groupMembers(group).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(closed, 'CEG_CLOSED')).toBe(true);
    }, timeout);

    it('refuses work after close', async () => {
      const tp = await topic(1);
      await t.close();
      const err: unknown = await t.produce(tp, [rec('k', 'v')]).then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(err, 'CEG_CLOSED')).toBe(true);
      expect(await t.isHealthy()).toBe(false);
      await t.close(); // idempotent
    }, timeout);
  });
}
