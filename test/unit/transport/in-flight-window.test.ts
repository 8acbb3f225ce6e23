/**
 * The per-partition lane (issue 8, "ordering none" in-flight window): whatever order the handlers
 * finish in, the offset to commit never passes a record not finished, at most `width` records are
 * in hand and they start in offset order, and a redelivered record restarts the lane at itself
 * without handling again what finished after it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PartitionLane } from '../../../src/transport/in-flight-window.js';

const rec = (offset: bigint): { offset: bigint } => ({ offset });

describe('PartitionLane', () => {
  it('starts in offset order, keeps at most width in hand, commits only up to the lowest unfinished record, for any finishing order (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        // Offsets with gaps (compaction), taken in chunks (fetches), and a finishing order as seeds.
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 1, maxLength: 10 }),
        fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
        (width, gaps, chunks, picks) => {
          const offsets: bigint[] = [];
          let o = 100n;
          for (const g of gaps) offsets.push((o += BigInt(g)));
          const lane = new PartitionLane('t', 0, width);
          const inHand: bigint[] = [];
          const started: bigint[] = [];
          const finished = new Set<bigint>();
          let taken = 0;
          let step = 0;
          while (finished.size < offsets.length) {
            // A fetch brings the next chunk; the lane starts what its window allows.
            const upTo = Math.min(offsets.length, taken + chunks[step % chunks.length]!);
            for (; taken < upTo; taken++) {
              expect(lane.classify(offsets[taken]!)).toBe('take');
              lane.take(rec(offsets[taken]!));
            }
            for (let r = lane.start(); r !== undefined; r = lane.start()) {
              inHand.push(r.offset);
              started.push(r.offset);
            }
            expect(lane.inHand).toBe(inHand.length);
            expect(lane.inHand).toBeLessThanOrEqual(width);
            if (inHand.length === 0) continue;
            const i = picks[step++ % picks.length]! % inHand.length;
            const [off] = inHand.splice(i, 1);
            expect(lane.finish(off!, { kind: 'done' })).toBeUndefined();
            finished.add(off!);
            const commit = lane.commitOffset()!;
            const lowestUnfinished = offsets.slice(0, taken).find((t) => !finished.has(t));
            expect(commit).toBe(lowestUnfinished ?? offsets[taken - 1]! + 1n);
          }
          expect(started).toEqual(offsets);
          expect(lane.commitOffset()).toBe(offsets.at(-1)! + 1n);
        },
      ),
    );
  });

  it('a redelivered record halts the lane; once nothing is in hand it restarts at that record, drops what waits and skips what finished after it', () => {
    const lane = new PartitionLane('t', 0, 4);
    for (const o of [10n, 11n, 12n, 13n, 14n]) lane.take(rec(o));
    expect([lane.start(), lane.start(), lane.start(), lane.start(), lane.start()].map((r) => r?.offset)).toEqual([10n, 11n, 12n, 13n, undefined]);
    expect(lane.waiting).toBe(1);
    expect(lane.finish(12n, { kind: 'done' })).toBeUndefined();
    expect(lane.finish(11n, { kind: 'redeliver', afterMs: 500 })).toBeUndefined(); // 10 and 13 still in hand
    expect(lane.halted).toBe(true);
    expect(lane.start()).toBeUndefined();
    expect(lane.finish(13n, { kind: 'done' })).toBeUndefined();
    expect(lane.finish(10n, { kind: 'done' })).toEqual({ offset: 11n, afterMs: 500 });
    expect(lane.waiting).toBe(0);
    expect(lane.commitOffset()).toBe(11n);
    lane.resume();
    expect(lane.halted).toBe(false);
    // Fetched again from 11: 11 and 14 are taken again, 12 and 13 are known finished.
    for (const o of [11n, 12n, 13n, 14n]) {
      const what = lane.classify(o);
      expect(what).toBe(o === 12n || o === 13n ? 'finished' : 'take');
      lane.take(rec(o), what === 'finished');
    }
    expect([lane.start(), lane.start(), lane.start()].map((r) => r?.offset)).toEqual([11n, 14n, undefined]);
    expect(lane.commitOffset()).toBe(11n);
    lane.finish(14n, { kind: 'done' });
    expect(lane.commitOffset()).toBe(11n);
    lane.finish(11n, { kind: 'done' });
    expect(lane.commitOffset()).toBe(15n);
  });

  it('width 1: strictly one after the other', () => {
    const lane = new PartitionLane('t', 0, 1);
    lane.take(rec(1n));
    lane.take(rec(2n));
    expect(lane.start()?.offset).toBe(1n);
    expect(lane.start()).toBeUndefined();
    lane.finish(1n, { kind: 'done' });
    expect(lane.start()?.offset).toBe(2n);
  });

  it('skips records taken already (a fetch after a rejoin starts at the committed offset)', () => {
    const lane = new PartitionLane('t', 0, 2);
    lane.take(rec(5n));
    lane.take(rec(6n));
    lane.start();
    lane.start();
    lane.finish(6n, { kind: 'done' });
    expect(lane.commitOffset()).toBe(5n);
    expect(lane.classify(5n)).toBe('skip');
    expect(lane.classify(6n)).toBe('skip');
    expect(lane.classify(7n)).toBe('take');
  });

  it('pendingCommit reports a changed offset once, and nothing for a revoked lane', () => {
    const lane = new PartitionLane('t', 0, 2);
    expect(lane.pendingCommit()).toBeUndefined();
    lane.take(rec(1n));
    lane.start();
    lane.finish(1n, { kind: 'done' });
    expect(lane.pendingCommit()).toBe(2n);
    lane.committed(2n);
    expect(lane.pendingCommit()).toBeUndefined();
    lane.take(rec(2n));
    lane.start();
    lane.finish(2n, { kind: 'done' });
    lane.revoke();
    expect(lane.pendingCommit()).toBeUndefined();
    expect(lane.halted).toBe(true);
  });
});
