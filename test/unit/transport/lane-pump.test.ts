/**
 * The lane pump (issue 8): records in hand over all lanes never exceed `maxInHand`; a place freed
 * by a finished record goes to the other lanes first (round robin), so with fewer places than
 * partitions every partition gets its turn; a lane added or removed between wakes is seen by the
 * next one (its array of lanes is rebuilt after the Map changes); `idle()` resolves only once no
 * record is in hand; a defect in the bookkeeping after a record goes to `fault` and the place is
 * still freed.
 */
import { describe, expect, it } from 'vitest';
import { PartitionLane } from '../../../src/transport/in-flight-window.js';
import { LanePump } from '../../../src/transport/lane-pump.js';

type Rec = { readonly offset: bigint; readonly partition: number };

/** A pump whose handler finishes only when the test says so; records every start. */
function harness(maxInHand: number, processed: () => void = () => undefined) {
  const started: Rec[] = [];
  const faults: unknown[] = [];
  const pending: (() => void)[] = [];
  let inFlight = 0;
  let most = 0;
  const pump: LanePump<Rec> = new LanePump<Rec>(maxInHand, {
    run: (r, lane, then) => {
      started.push(r);
      inFlight++;
      most = Math.max(most, inFlight);
      pending.push(() => {
        inFlight--;
        then({ kind: 'done' }, r, lane);
      });
    },
    fault: (err) => void faults.push(err),
    stopping: () => false,
    processed,
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
  return { pump, lane, started, finishOne, faults, most: () => most };
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

  it('idle() resolves once no record is in hand, not before', async () => {
    const h = harness(2);
    await h.pump.idle(); // nothing in hand: at once
    h.lane(0, 1);
    h.lane(1, 1);
    h.pump.wake();
    let idle = false;
    void h.pump.idle().then(() => (idle = true));
    await h.finishOne();
    expect(idle).toBe(false);
    await h.finishOne();
    expect(idle).toBe(true);
    expect(h.pump.inHand).toBe(0);
  });

  it('a defect after a record (a hook throwing) goes to fault (the adapter stops the consumption with it), and its place is freed', async () => {
    const h = harness(1, () => {
      throw new Error('bookkeeping defect');
    });
    h.lane(0, 2);
    h.pump.wake();
    await h.finishOne();
    expect(h.faults.map((e) => (e as Error).message)).toEqual(['bookkeeping defect']);
    expect(h.pump.inHand).toBe(0);
    await h.pump.idle();
  });
});
