/**
 * Issue 7, "retries that block nothing else", on the real broker: a record whose handler keeps
 * asking for a retry holds back neither the other partitions (ordered: only its own partition is
 * paused; unordered: it is parked on the retry topic) nor the consumer's group membership (a retry
 * wait longer than the session timeout causes no rebalance). The 1 s bound is behaviour with a wide
 * margin (records are handled in milliseconds when nothing blocks them; before the fix they waited
 * for the whole retry budget, 5–13 s).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { retry } from '../../../src/bus/subscriber/index.js';
import type { Ordering } from '../../../src/bus/subscriber/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { createLogger } from '../../../src/observability/index.js';
import { priceLoaded } from '../../fixtures/events.js';
import { transportOn } from '../../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { instrumentsPerPartition, ownCatalog } from './members.js';

const cat = ownCatalog('it-retries');
afterAll(() => cat.close());

const instrumentOf = (data: unknown): string => (data as { instrument: string }).instrument;

// Both describes are concurrent: the 30 s retry wait (idle, on the file's own catalog) runs
// alongside the five cases below, not after them. First in the file, so that it takes one of
// vitest's 5 concurrent slots (maxConcurrency) at once; the fifth case waits for a slot instead
// (13 s), and the file ends with the 30 s wait.
describe.concurrent('a retry wait longer than the session timeout', () => {
  it('an ordered subscription with a 30 s retry wait and a 10 s session timeout gets through without a rebalance and keeps per-key order', async () => {
    const s = stackEnv();
    // KAFKA_CLIENT=platformatic runs this on the @platformatic/kafka adapter (issue 14).
    const transport = transportOn({
      clientId: 'it-long-wait',
      brokers: s.kafkaBrokers,
      // The wait below is three session timeouts; 10 s leaves heartbeats room on a loaded machine
      // (other test files run alongside this one).
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 2_000,
      logger: createLogger({ level: 'silent' }),
    });
    const gw = await cat.member({ transport });
    const order: string[] = [];
    let firstAttemptAt = 0;
    let secondAttemptAt = 0;
    const sub = await gw.subscribe({
      subscription: uniqueName('it-long-wait'),
      kinds: ['PriceLoadingCompleted'],
      retry: retryPolicy({ maxAttempts: 2, initialDelayMs: 30_000, factor: 1, maxDelayMs: 30_000, jitter: 0 }),
      handler: (event, ctx) => {
        const bar = (event.data?.kind === 'json' ? (event.data.value as { barKey: string }).barKey : '').slice(-2);
        if (bar === '01' && ctx.attempt === 1) {
          firstAttemptAt = Date.now();
          return Promise.resolve(retry('come back in 30 s'));
        }
        if (bar === '01') secondAttemptAt = Date.now();
        order.push(bar);
        return Promise.resolve();
      },
    });
    try {
      for (const bar of ['22031501', '22031502', '22031503']) await gw.publisher().publish('PriceLoadingCompleted', priceLoaded('LONG/WAIT', 'H1', bar))!.delivered;
      await waitFor('all three handled', () => order.length === 3, 60_000, 200);
      expect(order).toEqual(['01', '02', '03']);
      expect(secondAttemptAt - firstAttemptAt).toBeGreaterThanOrEqual(29_000);
      expect(sub.stats()).toMatchObject({ handled: 3, retried: 1, deadLettered: 0, rebalances: 0 });
    } finally {
      await sub.unsubscribe();
      await transport.close();
    }
  }, 90_000);
});

// Lanes (inFlightPerPartition set, as push subscriptions run): the retry wait of `key` is a seek
// and a pause of the lane's partition; `none` parks the record on the retry topic, whose lane of
// width 1 waits for it the same way.
// The five cases run at once (most of each is the ≥ 10 s of retry waits, idle), each on topics of
// its own so that one case's records never reach another's subscription.
describe.concurrent('a retrying record blocks nothing else', () => {
  it.concurrent.each<[Ordering, number | undefined]>([
    ['key', undefined],
    ['none', undefined],
    ['key', 1],
    // Per-key lanes (push subscriptions' ordering key): the retrying record holds its partition, not the others.
    ['key', 4],
    ['none', 8],
  ])('six partitions, one record retried 5 times over ≥ 10 s: records on the other five partitions are handled within 3 s, not after the ≥ 10 s of retries (ordering %s, inFlightPerPartition %s)', async (ordering, window) => {
    const own = ownCatalog(`it-retries-${ordering}${window ?? 0}`);
    const gw = await own.member();
    const [stuck, ...others] = instrumentsPerPartition(6, `R${ordering}${window ?? 0}`);
    const attempts: number[] = [];
    const lag: number[] = [];
    const sentAt = new Map<string, number>();
    const sub = await gw.subscribe({
      subscription: uniqueName(`it-retry-${ordering}-${window ?? 'plain'}`),
      kinds: ['PriceLoadingCompleted'],
      ordering,
      ...(window === undefined ? {} : { inFlightPerPartition: window }),
      retry: retryPolicy({ maxAttempts: 5, initialDelayMs: 2500, factor: 1, maxDelayMs: 2500, jitter: 0 }),
      handler: (event) => {
        const data = event.data?.kind === 'json' ? event.data.value : null;
        if (instrumentOf(data) === stuck) {
          attempts.push(Date.now());
          return Promise.resolve(retry('always'));
        }
        const sent = sentAt.get(event.attributes.id);
        if (sent !== undefined) lag.push(Date.now() - sent);
        return Promise.resolve();
      },
    });
    try {
      const publish = async (instrument: string): Promise<void> => {
        const at = Date.now();
        const r = gw.publisher().publish('PriceLoadingCompleted', priceLoaded(instrument, 'H1'))!;
        sentAt.set(r.id, at);
        await r.delivered;
      };
      await publish(stuck!);
      await waitFor('the first attempt', () => attempts.length >= 1, 20_000);
      // While the stuck record waits for its attempts 2–5, keep producing to the five other partitions.
      let sent = 0;
      while (Date.now() - attempts[0]! < 10_500) {
        await Promise.all(others.map((i) => publish(i)));
        sent += others.length;
        await new Promise((r) => setTimeout(r, 500));
      }
      await waitFor('every other record handled', () => lag.length >= sent, 20_000);
      await waitFor('the stuck record dead-lettered', () => sub.stats().deadLettered === 1, 20_000);
      expect(attempts).toHaveLength(5);
      expect(attempts.at(-1)! - attempts[0]!).toBeGreaterThanOrEqual(10_000);
      expect(lag).toHaveLength(sent);
      // Blocked, the records published during the first retry waits would take ≥ 7 s (until the stuck
      // record is dead-lettered); 3 s leaves room for a loaded machine (publish → fetch → handler).
      expect(Math.max(...lag)).toBeLessThan(3000);
      expect(sub.stats()).toMatchObject({ handled: sent, deadLettered: 1, retried: 4 });
    } finally {
      await sub.unsubscribe();
      await own.close();
    }
  }, 90_000);
});
