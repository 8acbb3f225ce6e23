/**
 * How a consumption fetches next (issue 8: a batched push subscription reading a backlog spent
 * half its time idle in 1 s long polls of its empty retry and redrive partitions, because a lane
 * paused for backpressure could not be fetched until the long poll ended).
 * - @platformatic/kafka: `fetchPlan` long-polls only when no partition will want a fetch soon:
 *   none without a lane is still handling records, and no lane is paused for backpressure. Then a
 *   fetch does not wait, and quiet partitions alone are polled at most once per interval
 *   (BACKLOG_QUIET_POLL_MS while a lane is backlogged), by a sleep that a wake-up cuts short.
 *   A long poll never outlasts the wait of a partition paused for a redelivery, and lasts at most
 *   IN_HAND_MAX_WAIT_MS while a lane has records in hand or waiting (one may yet ask for a
 *   redelivery): an unordered subscription's retry with a 200 ms backoff waited for the 1 s long
 *   poll of the other partitions (test/integration/subscriptions/retry-backoff-timing.kafka.test.ts).
 * - kafkajs: the fetch wait of every consumption is cut to KAFKAJS_MAX_WAIT_MS (kafkajs cannot cut
 *   its long poll, or its sleep when every partition is paused, short on resume(); an ordered
 *   subscriber without lanes retrying in place waited a whole long poll too).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BACKLOG_QUIET_POLL_MS, IN_HAND_MAX_WAIT_MS, LINGER_BELOW_RECORDS, LINGER_MIN_BYTES, fetchPlan } from '../../../src/transport/platformatic/fetch-plan.js';
import type { PlannedPartition } from '../../../src/transport/platformatic/fetch-plan.js';
import { LANE_HIGH } from '../../../src/transport/lane-pump.js';
import { KAFKAJS_MAX_WAIT_MS, kafkajsMaxWaitMs } from '../../../src/transport/kafka/consumption.js';

const MAX_WAIT = 1000;
const quiet: PlannedPartition = { revoked: false, busy: false, idle: true, lane: { paused: false, halted: false, inHand: 0, waiting: 0 } };
const backlogged: PlannedPartition = { revoked: false, busy: false, idle: false, lane: { paused: true, halted: false, inHand: 0, waiting: LANE_HIGH } };
const flowing: PlannedPartition = { revoked: false, busy: false, idle: false, lane: { paused: false, halted: false, inHand: 0, waiting: 0 } };
/** A lane with a record in hand (a delivery under way, or a retry-topic record being checked). */
const delivering: PlannedPartition = { revoked: false, busy: false, idle: true, lane: { paused: false, halted: false, inHand: 1, waiting: 0 } };

describe('fetchPlan (@platformatic/kafka consumption)', () => {
  it('long-polls when nothing will want a fetch soon: lanes flowing or quiet, nothing handled without a lane', () => {
    expect(fetchPlan([quiet, flowing], [quiet, flowing], MAX_WAIT, 5)).toEqual({ maxWaitTimeMs: MAX_WAIT });
    expect(fetchPlan([quiet], [quiet], MAX_WAIT, 5)).toEqual({ maxWaitTimeMs: MAX_WAIT });
  });

  it('with a lane paused for backpressure, quiet partitions are not long-polled: a short sleep, then a fetch that does not wait', () => {
    // The backlogged lane is not wanted now (paused); its unpause wakes the loop.
    expect(fetchPlan([backlogged, quiet], [quiet], MAX_WAIT, 0)).toEqual({ sleepMs: BACKLOG_QUIET_POLL_MS });
    expect(fetchPlan([backlogged, quiet], [quiet], MAX_WAIT, BACKLOG_QUIET_POLL_MS - 10)).toEqual({ sleepMs: 10 });
    expect(fetchPlan([backlogged, quiet], [quiet], MAX_WAIT, BACKLOG_QUIET_POLL_MS)).toEqual({ maxWaitTimeMs: 0 });
    // A wanted partition with records to fetch: at once, without waiting.
    expect(fetchPlan([backlogged, flowing, quiet], [flowing, quiet], MAX_WAIT, 0)).toEqual({ maxWaitTimeMs: 0 });
  });

  it('a lane halted (a redelivery wait) or revoked is not a backlog: the quiet ones are long-polled', () => {
    const waitingRetry: PlannedPartition = { ...backlogged, lane: { paused: true, halted: true, inHand: 0, waiting: 0 } };
    const gone: PlannedPartition = { ...backlogged, revoked: true };
    expect(fetchPlan([waitingRetry, gone, quiet], [quiet], MAX_WAIT, 0)).toEqual({ maxWaitTimeMs: MAX_WAIT });
  });

  it('a partition without a lane still handling: quiet partitions polled once per maxWaitTimeMs, others at once', () => {
    const handling: PlannedPartition = { revoked: false, busy: true, idle: false, lane: undefined };
    const idlePlain: PlannedPartition = { revoked: false, busy: false, idle: true, lane: undefined };
    expect(fetchPlan([handling, idlePlain], [idlePlain], MAX_WAIT, 200)).toEqual({ sleepMs: 800 });
    expect(fetchPlan([handling, idlePlain], [idlePlain], MAX_WAIT, MAX_WAIT)).toEqual({ maxWaitTimeMs: 0 });
    expect(fetchPlan([handling, idlePlain], [handling, idlePlain], MAX_WAIT, 0)).toEqual({ maxWaitTimeMs: 0 });
  });

  it('with a fetch linger: after a trickle the long poll becomes a linger for more bytes; after an empty or a full fetch it stays', () => {
    const linger = (lastFetchRecords: number) => ({ ms: 5, lastFetchRecords });
    expect(fetchPlan([flowing], [flowing], MAX_WAIT, 0, linger(1))).toEqual({ maxWaitTimeMs: 5, minBytes: LINGER_MIN_BYTES });
    expect(fetchPlan([flowing], [flowing], MAX_WAIT, 0, linger(LINGER_BELOW_RECORDS - 1))).toEqual({ maxWaitTimeMs: 5, minBytes: LINGER_MIN_BYTES });
    // The first record after a quiet spell is not delayed; a backlog is fetched at once.
    expect(fetchPlan([flowing], [flowing], MAX_WAIT, 0, linger(0))).toEqual({ maxWaitTimeMs: MAX_WAIT });
    expect(fetchPlan([flowing], [flowing], MAX_WAIT, 0, linger(LINGER_BELOW_RECORDS))).toEqual({ maxWaitTimeMs: MAX_WAIT });
    // No linger configured: as before.
    expect(fetchPlan([flowing], [flowing], MAX_WAIT, 0, { ms: 0, lastFetchRecords: 3 })).toEqual({ maxWaitTimeMs: MAX_WAIT });
    // A linger never replaces the quick polls of a backlogged lane.
    expect(fetchPlan([backlogged, flowing], [flowing], MAX_WAIT, 0, linger(3))).toEqual({ maxWaitTimeMs: 0 });
  });

  it('a partition paused for a redelivery: the long poll (or linger) ends by the time it resumes, never below 1 ms', () => {
    expect(fetchPlan([quiet], [quiet], MAX_WAIT, 0, undefined, 183.2)).toEqual({ maxWaitTimeMs: 184 });
    expect(fetchPlan([quiet], [quiet], MAX_WAIT, 0, undefined, 5000)).toEqual({ maxWaitTimeMs: MAX_WAIT });
    // Its timer is due (it fires during this fetch): no fetch without a wait, no spin.
    expect(fetchPlan([quiet], [quiet], MAX_WAIT, 0, undefined, -3)).toEqual({ maxWaitTimeMs: 1 });
    expect(fetchPlan([flowing], [flowing], MAX_WAIT, 0, { ms: 50, lastFetchRecords: 3 }, 20)).toEqual({ maxWaitTimeMs: 20 });
    expect(fetchPlan([flowing], [flowing], MAX_WAIT, 0, { ms: 5, lastFetchRecords: 3 }, 20)).toEqual({ maxWaitTimeMs: 5, minBytes: LINGER_MIN_BYTES });
  });

  it('a lane with records in hand or waiting: a long poll lasts at most IN_HAND_MAX_WAIT_MS (a redelivery decided meanwhile is seen soon); empty lanes long-poll', () => {
    expect(fetchPlan([delivering, quiet], [delivering, quiet], MAX_WAIT, 0)).toEqual({ maxWaitTimeMs: IN_HAND_MAX_WAIT_MS });
    const queued: PlannedPartition = { ...flowing, lane: { paused: false, halted: false, inHand: 0, waiting: 3 } };
    expect(fetchPlan([queued], [queued], MAX_WAIT, 0)).toEqual({ maxWaitTimeMs: IN_HAND_MAX_WAIT_MS });
    expect(fetchPlan([delivering], [delivering], MAX_WAIT, 0, undefined, 40)).toEqual({ maxWaitTimeMs: 40 });
    expect(fetchPlan([delivering], [delivering], 20, 0)).toEqual({ maxWaitTimeMs: 20 });
    expect(fetchPlan([quiet, flowing], [quiet, flowing], MAX_WAIT, 0)).toEqual({ maxWaitTimeMs: MAX_WAIT });
    // A linger still lingers (for more bytes), no longer than the cap.
    expect(fetchPlan([delivering], [delivering], MAX_WAIT, 0, { ms: 300, lastFetchRecords: 3 })).toEqual({ maxWaitTimeMs: IN_HAND_MAX_WAIT_MS, minBytes: LINGER_MIN_BYTES });
    expect(fetchPlan([delivering], [delivering], MAX_WAIT, 0, { ms: 5, lastFetchRecords: 3 })).toEqual({ maxWaitTimeMs: 5, minBytes: LINGER_MIN_BYTES });
  });

  it('nothing wanted: sleep (until woken) for at most maxWaitTimeMs', () => {
    expect(fetchPlan([backlogged], [], MAX_WAIT, 0)).toEqual({ sleepMs: MAX_WAIT });
  });

  it('property: never a long poll while a lane is backlogged; a sleep never outlasts the quiet-poll interval', () => {
    const lane = fc.option(fc.record({ paused: fc.boolean(), halted: fc.boolean(), inHand: fc.nat(3), waiting: fc.nat(3) }), { nil: undefined });
    const partition = fc.record({ revoked: fc.boolean(), busy: fc.boolean(), idle: fc.boolean(), lane });
    fc.assert(
      fc.property(fc.array(partition, { maxLength: 8 }), fc.array(partition, { minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 5000 }), fc.record({ ms: fc.integer({ min: 0, max: 50 }), lastFetchRecords: fc.integer({ min: 0, max: 1000 }) }), fc.option(fc.double({ min: -100, max: 10_000, noNaN: true }), { nil: undefined }), (others, wanted, maxWait, since, linger, untilResume) => {
        const held = [...others, ...wanted];
        const plan = fetchPlan(held, wanted, maxWait, since, linger, untilResume);
        const isBacklogged = held.some((p) => !p.revoked && p.lane !== undefined && p.lane.paused && !p.lane.halted);
        const isHandling = held.some((p) => !p.revoked && p.lane === undefined && p.busy);
        if (!isBacklogged && !isHandling) {
          // A long poll, never past a redelivery's resume (at least 1 ms), short while a lane has records.
          const inHand = held.some((p) => !p.revoked && p.lane !== undefined && (p.lane.inHand > 0 || p.lane.waiting > 0));
          const cap = inHand ? IN_HAND_MAX_WAIT_MS : Number.POSITIVE_INFINITY;
          const poll = Math.min(maxWait, untilResume === undefined ? maxWait : Math.max(1, Math.ceil(untilResume)));
          // Or a linger: only after a trickle, shorter than that poll, never after an empty fetch; capped alike while records are in hand.
          if ('minBytes' in plan) {
            expect(linger.lastFetchRecords).toBeGreaterThan(0);
            expect(linger.lastFetchRecords).toBeLessThan(LINGER_BELOW_RECORDS);
            expect(plan).toEqual({ maxWaitTimeMs: Math.min(linger.ms, cap), minBytes: LINGER_MIN_BYTES });
            expect(linger.ms).toBeLessThan(poll);
            expect(linger.ms).toBeGreaterThan(0);
          } else expect(plan).toEqual({ maxWaitTimeMs: Math.min(poll, cap) });
        } else if ('maxWaitTimeMs' in plan) expect(plan).toEqual({ maxWaitTimeMs: 0 });
        else {
          // A sleep only when every wanted partition came back empty, and no longer than the interval.
          expect(wanted.every((p) => p.idle)).toBe(true);
          expect(plan.sleepMs).toBeLessThanOrEqual(Math.max(1, isBacklogged ? Math.min(maxWait, BACKLOG_QUIET_POLL_MS) : maxWait));
        }
      }),
    );
  });
});

describe('kafkajsMaxWaitMs (kafkajs consumption)', () => {
  it('cuts the fetch wait of every consumption to KAFKAJS_MAX_WAIT_MS, or to the transport’s when that is shorter', () => {
    expect(kafkajsMaxWaitMs(1000)).toBe(KAFKAJS_MAX_WAIT_MS);
    expect(kafkajsMaxWaitMs(20)).toBe(20);
  });
});
