/**
 * The lane pump (issue 8): records in hand over all lanes never exceed `maxInHand`; a place freed
 * by a finished record goes to the other lanes first (round robin), so with fewer places than
 * partitions every partition gets its turn; a lane added or removed between wakes is seen by the
 * next one (its array of lanes is rebuilt after the Map changes).
 */
import { describe, expect, it } from 'vitest';
import { PartitionLane } from '../../../src/transport/in-flight-window.js';
import { LanePump } from '../../../src/transport/lane-pump.js';
import type { RecordDecision } from '../../../src/transport/port.js';

type Rec = { readonly offset: bigint; readonly partition: number };

/** A pump whose handler finishes only when the test says so; records every start. */
function harness(maxInHand: number) {
  const started: Rec[] = [];
  const pending: (() => void)[] = [];
  let inFlight = 0;
  let most = 0;
  const pump: LanePump<Rec> = new LanePump<Rec>(maxInHand, {
    run: (r) => {
      started.push(r);
      inFlight++;
      most = Math.max(most, inFlight);
      return new Promise<RecordDecision>((resolve) =>
        pending.push(() => {
          inFlight--;
          resolve({ kind: 'done' });
        }),
      );
    },
    track: () => undefined,
    stopping: () => false,
    processed: () => undefined,
    redeliver: () => undefined,
    unpause: () => undefined,
  });
  const lane = (partition: number, records: number): PartitionLane<Rec> => {
    const l = new PartitionLane<Rec>('t', partition, 1);
    for (let i = 0; i < records; i++) l.take({ offset: BigInt(i), partition });
    pump.lanes.set(`t:${partition}`, l);
    return l;
  };
  /** Finishes the oldest record in hand and lets its continuation run. */
  const finishOne = async (): Promise<void> => {
    pending.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { pump, lane, started, finishOne, most: () => most };
}

describe('LanePump', () => {
  it('with one place and three lanes, each freed place goes to the next lane in turn, never over the bound', async () => {
    const h = harness(1);
    h.lane(0, 3);
    h.lane(1, 3);
    h.lane(2, 3);
    h.pump.wake();
    for (let i = 0; i < 8; i++) await h.finishOne();
    expect(h.started.map((r) => r.partition)).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
    expect(h.most()).toBe(1);
  });

  it('a lane added between wakes gets its turn; a removed one gets none', async () => {
    const h = harness(1);
    h.lane(0, 4);
    h.lane(1, 4);
    h.pump.wake();
    await h.finishOne(); // 0 done → 1 starts
    h.lane(2, 4);
    h.pump.lanes.delete('t:0');
    await h.finishOne(); // 1 done → 2 (the new lane) starts, not 0
    await h.finishOne(); // 2 done → 1
    expect(h.started.map((r) => r.partition)).toEqual([0, 1, 2, 1]);
  });

  it('with room for all, every lane starts at once, up to its width', () => {
    const h = harness(10);
    h.lane(0, 5);
    h.lane(1, 5);
    h.pump.wake();
    expect(h.started.map((r) => r.partition)).toEqual([0, 1]);
    expect(h.pump.inHand).toBe(2);
  });
});
