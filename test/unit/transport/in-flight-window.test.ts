/**
 * The per-partition in-flight window (issue 8, "ordering none"): whatever order the handlers
 * finish in, the offset to commit never passes a record not finished, at most `width` records are
 * in hand, and a redelivered record restarts the lane at itself without handling again what
 * finished after it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PartitionLane } from '../../../src/transport/in-flight-window.js';

describe('PartitionLane', () => {
  it('commits only up to the lowest unfinished record, for any finishing order (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        // Offsets with gaps (compaction), and a finishing order as a permutation seed.
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
        (width, gaps, picks) => {
          const offsets: bigint[] = [];
          let o = 100n;
          for (const g of gaps) offsets.push((o += BigInt(g)));
          const lane = new PartitionLane('t', 0, width);
          const inHand: bigint[] = [];
          const finished = new Set<bigint>();
          let next = 0;
          let step = 0;
          while (finished.size < offsets.length) {
            // Take as many as the window allows, then finish one chosen by the seed.
            while (next < offsets.length && lane.inHand < width) {
              expect(lane.classify(offsets[next]!)).toBe('take');
              lane.take(offsets[next]!);
              inHand.push(offsets[next]!);
              next++;
            }
            expect(lane.inHand).toBeLessThanOrEqual(width);
            const i = picks[step++ % picks.length]! % inHand.length;
            const [off] = inHand.splice(i, 1);
            expect(lane.finish(off!, { kind: 'done' })).toBeUndefined();
            finished.add(off!);
            const commit = lane.commitOffset()!;
            // Every taken record below the commit offset is finished; the commit is at an unfinished record or after the last taken.
            for (const t of offsets.slice(0, next)) if (t < commit) expect(finished.has(t)).toBe(true);
            const lowestUnfinished = offsets.slice(0, next).find((t) => !finished.has(t));
            expect(commit).toBe(lowestUnfinished ?? offsets[next - 1]! + 1n);
          }
          expect(lane.commitOffset()).toBe(offsets.at(-1)! + 1n);
        },
      ),
    );
  });

  it('a redelivered record halts the lane; once nothing is in hand it restarts at that record and skips what finished after it', () => {
    const lane = new PartitionLane('t', 0, 4);
    for (const o of [10n, 11n, 12n, 13n]) lane.take(o);
    expect(lane.finish(12n, { kind: 'done' })).toBeUndefined();
    expect(lane.finish(11n, { kind: 'redeliver', afterMs: 500 })).toBeUndefined(); // 10 and 13 still in hand
    expect(lane.halted).toBe(true);
    expect(lane.finish(13n, { kind: 'done' })).toBeUndefined();
    expect(lane.finish(10n, { kind: 'done' })).toEqual({ offset: 11n, afterMs: 500 });
    expect(lane.commitOffset()).toBe(11n);
    lane.resume();
    expect(lane.halted).toBe(false);
    // Fetched again from 11: 11 is taken again, 12 and 13 are known finished.
    expect(lane.classify(11n)).toBe('take');
    lane.take(11n);
    expect(lane.classify(12n)).toBe('finished');
    lane.take(12n, true);
    expect(lane.classify(13n)).toBe('finished');
    lane.take(13n, true);
    expect(lane.commitOffset()).toBe(11n);
    lane.finish(11n, { kind: 'done' });
    expect(lane.commitOffset()).toBe(14n);
  });

  it('skips records taken already (a fetch after a rejoin starts at the committed offset)', () => {
    const lane = new PartitionLane('t', 0, 2);
    lane.take(5n);
    lane.take(6n);
    lane.finish(6n, { kind: 'done' });
    expect(lane.commitOffset()).toBe(5n);
    expect(lane.classify(5n)).toBe('skip');
    expect(lane.classify(6n)).toBe('skip');
    expect(lane.classify(7n)).toBe('take');
  });

  it('pendingCommit reports a changed offset once, and nothing for a revoked lane', () => {
    const lane = new PartitionLane('t', 0, 2);
    expect(lane.pendingCommit()).toBeUndefined();
    lane.take(1n);
    lane.finish(1n, { kind: 'done' });
    expect(lane.pendingCommit()).toBe(2n);
    lane.committed(2n);
    expect(lane.pendingCommit()).toBeUndefined();
    lane.take(2n);
    lane.finish(2n, { kind: 'done' });
    lane.revoke();
    expect(lane.pendingCommit()).toBeUndefined();
    expect(lane.halted).toBe(true);
  });

  it('slot() waits while the window is full and frees when a record finishes', async () => {
    const lane = new PartitionLane('t', 0, 1);
    lane.take(1n);
    let free = false;
    const p = lane.slot().then(() => (free = true));
    await Promise.resolve();
    expect(free).toBe(false);
    lane.finish(1n, { kind: 'done' });
    await p;
    expect(free).toBe(true);
  });
});
