import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../../src/core/errors.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type { Consumption, OutboundRecord, TransportRecord } from '../../../src/transport/index.js';
import { waitFor } from '../../helpers/wait.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | null): string => new TextDecoder().decode(b ?? new Uint8Array(0));
const rec = (key: string | null, value: string, partition?: number): OutboundRecord => ({
  key: key === null ? null : bytes(key), value: bytes(value), headers: [], ...(partition === undefined ? {} : { partition }),
});
const spec = (name: string, partitions: number) => ({ name, partitions, retentionMs: -1, cleanupPolicy: 'delete' as const });
const into = (out: TransportRecord[]) => (r: TransportRecord): Promise<void> => {
  out.push(r);
  return Promise.resolve();
};
const intoText = (out: string[]) => (r: TransportRecord): Promise<void> => {
  out.push(text(r.value));
  return Promise.resolve();
};
const errorOf = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e);

describe('memory transport specifics', () => {
  it('never runs a handler inside produce()', async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([spec('sync', 1)]);
    const seen: string[] = [];
    const c = await t.consume({ group: 'g', topics: ['sync'], startFrom: 'earliest' }, (r) => {
      seen.push(text(r.value));
      return Promise.resolve();
    });
    await t.produce('sync', [rec('k', 'a')]);
    expect(seen).toEqual([]);
    await waitFor('delivery', () => seen.length === 1);
    expect(seen).toEqual(['a']);
    await c.stop();
    await t.close();
  });

  it('spreads null keys round-robin and stamps the clock time', async () => {
    const t = createMemoryTransport({ now: () => 1234 });
    await t.ensureTopics([spec('rr', 3)]);
    const p = await t.produce('rr', [rec(null, 'a'), rec(null, 'b'), rec(null, 'c'), rec(null, 'd')]);
    expect(p.map((x) => x.partition)).toEqual([0, 1, 2, 0]);
    const got: TransportRecord[] = [];
    const c = await t.consume({ group: 'g', topics: ['rr'], startFrom: 'earliest' }, into(got));
    await waitFor('4 records', () => got.length === 4);
    expect(got.map((r) => r.timestampMs)).toEqual([1234, 1234, 1234, 1234]);
    await c.stop();
  });

  it('copies bytes on produce, so later changes by the caller do not reach the log', async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([spec('copy', 1)]);
    const value = bytes('before');
    await t.produce('copy', [{ key: null, value, headers: [['h', value]] }]);
    value.fill(0);
    const got: TransportRecord[] = [];
    await t.consume({ group: 'g', topics: ['copy'], startFrom: 'earliest' }, into(got));
    await waitFor('1 record', () => got.length === 1);
    expect([text(got[0]!.value), text(got[0]!.headers[0]![1])]).toEqual(['before', 'before']);
    expect(Object.isFrozen(got[0])).toBe(true);
    await t.close();
  });

  it('rejects a whole produce call when one record is invalid, writing nothing', async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([{ ...spec('small', 2), maxMessageBytes: 10 }]);
    const tooLarge = await errorOf(t.produce('small', [rec('k', 'ok'), rec('k', 'x'.repeat(20))]));
    expect(isGatewayError(tooLarge, 'CEG_PAYLOAD_TOO_LARGE')).toBe(true);
    const badPartition = await errorOf(t.produce('small', [rec('k', 'ok'), rec(null, 'v', 2)]));
    expect(isGatewayError(badPartition, 'CEG_INVALID_OPTIONS')).toBe(true);
    expect(await t.endOffsets('small')).toEqual([{ partition: 0, offset: 0n }, { partition: 1, offset: 0n }]);
  });

  it('validates topic specs and names', async () => {
    const t = createMemoryTransport();
    const badName = await errorOf(t.ensureTopics([spec('bad/name', 1)]));
    expect(isGatewayError(badName, 'CEG_INVALID_NAME')).toBe(true);
    const badSpec = await errorOf(t.ensureTopics([{ name: 'ok', partitions: 0, retentionMs: -2, cleanupPolicy: 'delete' }]));
    expect(isGatewayError(badSpec, 'CEG_INVALID_OPTIONS') && badSpec.details.problems).toEqual(['partitions: integer ≥ 1', 'retentionMs: integer ms ≥ −1']);
    const unknown = await errorOf(t.consume({ group: 'g', topics: ['nope'] }, () => Promise.resolve()));
    expect(isGatewayError(unknown, 'CEG_INVALID_NAME')).toBe(true);
  });

  it('rebalances three members over four partitions, and again as they leave', async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([spec('four', 4)]);
    const handler = (): Promise<void> => Promise.resolve();
    const members: Consumption[] = [];
    for (let i = 0; i < 3; i++) members.push(await t.consume({ group: 'g', topics: ['four'] }, handler));
    const parts = (c: Consumption): number[] => c.assignments().map((a) => a.partition);
    expect(members.map(parts)).toEqual([[0, 1], [2], [3]]);
    await members[0]!.stop();
    expect(members.map(parts)).toEqual([[], [0, 1], [2, 3]]);
    await members[1]!.stop();
    expect(parts(members[2]!)).toEqual([0, 1, 2, 3]);
    await t.close();
    await members[2]!.done;
  });

  it('lets the record in flight finish and commit before a partition moves', async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([spec('move', 1)]);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const handledByA: string[] = [];
    let started = 0;
    const a = await t.consume({ group: 'g', topics: ['move'], startFrom: 'earliest' }, async (r) => {
      started += 1;
      await gate;
      handledByA.push(text(r.value));
    });
    await t.produce('move', [rec('k', 'first'), rec('k', 'second')]);
    await waitFor('a to start the first record', () => started === 1);
    const stopping = a.stop();
    let stopped = false;
    void stopping.then(() => (stopped = true));
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false); // still waiting for the record in flight
    release();
    await stopping;
    expect(handledByA).toEqual(['first']);
    const handledByB: string[] = [];
    const b = await t.consume({ group: 'g', topics: ['move'], startFrom: 'earliest' }, intoText(handledByB));
    await waitFor('b to handle the rest', () => handledByB.length === 1);
    expect(handledByB).toEqual(['second']);
    await b.stop();
  });

  it('resets to a timestamp: the first record at or after it', async () => {
    let now = 100;
    const t = createMemoryTransport({ now: () => now });
    await t.ensureTopics([spec('time', 1)]);
    for (const v of ['t100', 't200', 't300']) {
      await t.produce('time', [rec('k', v)]);
      now += 100;
    }
    await t.resetOffsets('g', 'time', { kind: 'timestamp', timestampMs: 150 });
    const got: string[] = [];
    const c = await t.consume({ group: 'g', topics: ['time'] }, intoText(got));
    await waitFor('2 records', () => got.length === 2);
    expect(got).toEqual(['t200', 't300']);
    await c.stop();
    await t.resetOffsets('g', 'time', { kind: 'timestamp', timestampMs: 10_000 });
    await t.resetOffsets('g', 'time', { kind: 'latest' });
    expect(await t.endOffsets('time')).toEqual([{ partition: 0, offset: 3n }]);
  });
});
