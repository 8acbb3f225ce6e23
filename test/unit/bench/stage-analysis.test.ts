import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gatewaySplits, rawSplits, report, spread } from '../../../bench/lib/stage-analysis.js';
import type { StageSamples } from '../../../bench/lib/stage-recorder.js';

const empty: StageSamples = { startedAt: 0, endedAt: 100, ingress: [], publisher: [], sender: [], gc: [], arrivalLag: [], loopDelayMs: { p50: 0, p99: 0, max: 0 } };

/** One request's stage times as gaps ≥ 0 between its instants. */
const gaps = fc.array(fc.double({ min: 0, max: 50, noNaN: true }), { minLength: 7, maxLength: 7 });

describe('bench stage analysis (latency probe)', () => {
  it('splits a gateway request into stages that add up to its time, whatever the gaps', () => {
    fc.assert(
      fc.property(gaps, ([g0, g1, g2, g3, g4, g5, g6]) => {
        const arrivedAt = 10;
        const bodyAt = arrivedAt + g0!;
        const preparedAt = bodyAt + g1!;
        const calledAt = preparedAt + g2!;
        const sentAt = calledAt + g3!;
        const answered = sentAt + g4!;
        const ackedAt = answered + g5!;
        const answeredAt = ackedAt + g6!;
        const s: StageSamples = {
          ...empty,
          ingress: [{ events: 1, arrivedAt, bodyAt, preparedAt, ackedAt, answeredAt }],
          publisher: [{ records: 1, oldestQueuedAt: preparedAt, calledAt, answeredAt: ackedAt, ok: true }],
          sender: [{ records: 1, queuedAt: [calledAt], sentAt, answeredAt: answered, ok: true }],
        };
        const [x] = gatewaySplits(s);
        const sum = x!.body + x!.prepare + x!.publisherWait + x!.senderWait + x!.broker + x!.settle + x!.answer;
        expect(sum).toBeCloseTo(x!.total, 6);
        expect(x!.broker).toBeCloseTo(g4!, 6);
        expect(x!.publisherWait).toBeCloseTo(g2!, 6);
      }),
    );
  });

  it('charges a raw call its wait behind the request in flight, and counts GC pauses inside a request only', () => {
    const s: StageSamples = { ...empty, sender: [{ records: 2, queuedAt: [1, 3], sentAt: 5, answeredAt: 9, ok: true }], gc: [{ at: 4, ms: 2, kind: 'minor' }, { at: 50, ms: 5, kind: 'minor' }] };
    const splits = rawSplits(s);
    expect(splits.map((x) => [x.total, x.senderWait, x.broker, x.gc])).toEqual([
      [8, 4, 4, 2],
      [6, 2, 4, 2],
    ]);
    const r = report(s, splits);
    expect(r.gc).toEqual({ minor: { count: 2, totalMs: 7, maxMs: 5 } });
    expect(r.tail.total).toBe(8);
  });

  it('reads percentiles as the value at or above that share of the samples', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(spread(xs)).toEqual({ n: 100, p50: 50, p99: 99, max: 100 });
    expect(spread([])).toEqual({ n: 0, p50: 0, p99: 0, max: 0 });
  });
});
