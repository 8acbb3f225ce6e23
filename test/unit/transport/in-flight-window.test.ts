/**
 * The per-partition lane (issue 8, "ordering none" in-flight window): whatever order the handlers
 * finish in, the offset to commit never passes a record not finished, at most `width` records are
 * in hand and they start in offset order, and a redelivered record restarts the lane at itself
 * without handling again what finished after it. With `key` order (ordering key, issue 8): records
 * of one key never overlap and are processed in offset order, other keys run alongside, and the
 * commit still never passes an unfinished record — also across redeliveries (property).
 */
import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PartitionLane } from '../../../src/transport/in-flight-window.js';

const rec = (offset: bigint): { offset: bigint } => ({ offset });

describe('PartitionLane', () => {
  it('its revoked signal takes a listener from every record of a wide window without a leak warning (each removes its own when done)', async () => {
    const lane = new PartitionLane('t', 0, 1000);
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const listeners = Array.from({ length: 50 }, () => (): void => undefined);
      for (const l of listeners) lane.revokedSignal.addEventListener('abort', l, { once: true });
      expect(getEventListeners(lane.revokedSignal, 'abort')).toHaveLength(50);
      await new Promise((resolve) => setImmediate(resolve)); // Node emits its warning on a later tick
      for (const l of listeners) lane.revokedSignal.removeEventListener('abort', l);
      expect(getEventListeners(lane.revokedSignal, 'abort')).toHaveLength(0);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });

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

  it('key order: same-key records never overlap and are processed in offset order, keys run alongside, commits never pass an unfinished record, redeliveries handle nothing twice (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        // Per record: a gap before its offset and a key (index 0 = no key; keys may be empty bytes).
        fc.array(fc.record({ gap: fc.integer({ min: 1, max: 3 }), key: fc.integer({ min: 0, max: 4 }) }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 1, maxLength: 10 }),
        // Per step: which record in hand finishes, and whether it asks for a redelivery.
        fc.array(fc.record({ pick: fc.nat(), redeliver: fc.boolean() }), { minLength: 40, maxLength: 40 }),
        (width, specs, chunks, steps) => {
          const keys: (Uint8Array | null)[] = [null, new Uint8Array([]), new Uint8Array([65]), new Uint8Array([66]), new Uint8Array([65, 0])];
          const offsets: bigint[] = [];
          const keyAt = new Map<bigint, number>();
          let o = 100n;
          for (const s of specs) {
            offsets.push((o += BigInt(s.gap)));
            keyAt.set(o, s.key);
          }
          const lane = new PartitionLane<{ offset: bigint; key: Uint8Array | null }>('t', 0, width, 'key');
          const inHand: bigint[] = [];
          const processed: bigint[] = [];
          const processedSet = new Set<bigint>();
          let fetchFrom = 0;
          let step = 0;
          let redeliveries = 0;
          let sawConcurrentKeys = false;
          // Until every record is processed and fetched (records that finished ahead of a redelivery come again as 'finished').
          while (processedSet.size < offsets.length || fetchFrom < offsets.length) {
            const upTo = Math.min(offsets.length, fetchFrom + chunks[step % chunks.length]!);
            for (; fetchFrom < upTo; fetchFrom++) {
              const off = offsets[fetchFrom]!;
              const what = lane.classify(off);
              if (what !== 'skip') lane.take({ offset: off, key: keys[keyAt.get(off)!]! }, what === 'finished');
            }
            for (let r = lane.start(); r !== undefined; r = lane.start()) {
              // Never two records of one key in hand; never a record before an earlier one of its key was processed.
              expect(inHand.map((x) => keyAt.get(x))).not.toContain(keyAt.get(r.offset));
              for (const earlier of offsets) if (earlier < r.offset && keyAt.get(earlier) === keyAt.get(r.offset)) expect(processedSet.has(earlier)).toBe(true);
              expect(processedSet.has(r.offset)).toBe(false);
              inHand.push(r.offset);
            }
            if (new Set(inHand.map((x) => keyAt.get(x))).size > 1) sawConcurrentKeys = true;
            expect(lane.inHand).toBe(inHand.length);
            expect(lane.inHand).toBeLessThanOrEqual(width);
            const committed = lane.commitOffset();
            if (committed !== undefined) for (const x of offsets) if (x < committed) expect(processedSet.has(x)).toBe(true);
            if (inHand.length === 0) {
              // Nothing in hand and nothing startable: only because everything fetched is processed.
              expect(lane.halted).toBe(false);
              if (fetchFrom >= offsets.length) expect(processedSet.size).toBe(offsets.length);
              step++;
              continue;
            }
            const s = steps[step++ % steps.length]!;
            const [off] = inHand.splice(s.pick % inHand.length, 1);
            // A bounded number of redeliveries, so the run ends.
            if (s.redeliver && redeliveries < 5) {
              redeliveries++;
              const again = lane.finish(off!, { kind: 'redeliver', afterMs: 10 });
              expect(lane.halted).toBe(true);
              if (again !== undefined) {
                expect(inHand).toEqual([]);
                // Restarts at its lowest unfinished record, never past the redelivered one.
                expect(again.offset <= off!).toBe(true);
                expect(offsets.filter((x) => x < again.offset).every((x) => processedSet.has(x))).toBe(true);
                lane.resume();
                fetchFrom = offsets.indexOf(again.offset);
              }
              continue;
            }
            const again = lane.finish(off!, { kind: 'done' });
            processed.push(off!);
            processedSet.add(off!);
            if (again !== undefined) {
              lane.resume();
              fetchFrom = offsets.indexOf(again.offset);
            }
          }
          // Each record processed exactly once; per key in offset order.
          expect(processed.length).toBe(offsets.length);
          for (let k = 0; k < keys.length; k++) {
            const ofKey = processed.filter((x) => keyAt.get(x) === k);
            expect(ofKey).toEqual([...ofKey].sort((a, b) => (a < b ? -1 : 1)));
          }
          expect(lane.commitOffset()).toBe(offsets.at(-1)! + 1n);
          // With room for two and two keys waiting, two keys run at once (not per-partition serial).
          if (width >= 2 && redeliveries === 0 && specs.length >= 2 && specs[0]!.key !== specs[1]!.key) expect(sawConcurrentKeys || chunks[0] === 1).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('key order: a slow record of key A holds a later A but not B; records without a key count as one key', () => {
    const enc = (s: string | null): Uint8Array | null => (s === null ? null : new TextEncoder().encode(s));
    const lane = new PartitionLane<{ offset: bigint; key: Uint8Array | null }>('t', 0, 4, 'key');
    const put = (offset: bigint, key: string | null): void => lane.take({ offset, key: enc(key) });
    put(1n, 'A');
    put(2n, 'B');
    put(3n, 'A');
    put(4n, 'B');
    put(5n, null);
    put(6n, null);
    put(7n, 'C');
    expect([lane.start(), lane.start(), lane.start(), lane.start(), lane.start()].map((r) => r?.offset)).toEqual([1n, 2n, 5n, 7n, undefined]);
    lane.finish(2n, { kind: 'done' });
    expect(lane.start()?.offset).toBe(4n); // the next B; 3 (A) waits for 1, 6 (no key) for 5
    lane.finish(4n, { kind: 'done' });
    lane.finish(7n, { kind: 'done' });
    expect(lane.start()).toBeUndefined();
    expect(lane.waiting).toBe(2);
    expect(lane.commitOffset()).toBe(1n);
    lane.finish(5n, { kind: 'done' });
    expect(lane.start()?.offset).toBe(6n);
    lane.finish(1n, { kind: 'done' });
    expect(lane.start()?.offset).toBe(3n);
    expect(lane.commitOffset()).toBe(3n);
  });

  it('key order: a redelivery restarts at the lowest unfinished record, which may be a waiting record of another key below it', () => {
    const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
    const lane = new PartitionLane<{ offset: bigint; key: Uint8Array | null }>('t', 0, 4, 'key');
    lane.take({ offset: 1n, key: enc('A') });
    lane.take({ offset: 2n, key: enc('A') });
    lane.take({ offset: 3n, key: enc('B') });
    expect([lane.start(), lane.start(), lane.start()].map((r) => r?.offset)).toEqual([1n, 3n, undefined]);
    expect(lane.finish(3n, { kind: 'redeliver', afterMs: 7 })).toBeUndefined();
    // 1 finishes: 2 (A) could start, but the lane is halted; it restarts at 2, not 3.
    expect(lane.finish(1n, { kind: 'done' })).toEqual({ offset: 2n, afterMs: 7 });
    expect(lane.commitOffset()).toBe(2n);
    expect(lane.classify(1n)).toBe('skip');
    expect(lane.classify(2n)).toBe('take');
  });
});
