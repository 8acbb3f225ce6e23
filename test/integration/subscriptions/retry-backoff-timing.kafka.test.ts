/**
 * Retries keep their backoff, not the fetch's long poll, on the real broker. `ordering: none` parks
 * a failed record on `<group>.retry`; it is fetched again before it is due, and its retry partition
 * is paused for the rest of the wait. `ordering: key` pauses the record's partition and fetches it
 * again after the wait. Either way the resumed partition was fetched only once the long poll of the
 * other partitions under way ended (`maxWaitTimeMs`, 1,000 ms): a tester's push subscription with a
 * 200 ms backoff and a sink answering 500 was retried about every second. Measured before the fixes
 * (gaps between attempts, ms):
 * - @platformatic/kafka: 1,009–1,082 (ordering none), with lanes (as push subscriptions run) and without;
 * - kafkajs: 1,020–1,051 (ordering none) and 1,004–1,025 (ordering key) without lanes; 212–291 with
 *   lanes (their fetch wait was already 100 ms).
 * After: 204–209 (platformatic), 204–253 (kafkajs).
 *
 * The house rule is no timing asserts; this behaviour IS timing, so the bounds are behavioural and
 * wide: 4 attempts with a constant 200 ms backoff give 3 gaps,
 * - each ≥ 180 ms: the backoff is respected (the due time is stamped before the park's produce, so
 *   a gap is never shorter than 200 ms minus clock granularity; 20 ms of slack);
 * - together < 2,400 ms: the long-poll wait gave ~3,000 (3 × ~1,000); the fixed adapters give ~650.
 *   2,400 leaves 1,750 ms, about 580 ms per gap, for a loaded 2-core CI machine (produce to the
 *   retry topic, fetch, handler, timers), while one gap still held by a whole 1 s long poll plus
 *   two of 600 ms would already fail.
 * At once: subscribers with lanes and without, ordered by key and not (as the bus API runs them),
 * on each client; and a push subscription of a gateway (the run's KAFKA_CLIENT) with a loopback
 * sink answering 500.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { retry } from '../../../src/bus/subscriber/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { priceLoaded } from '../../fixtures/events.js';
import { startGateway } from '../../helpers/gateway.js';
import { acceptAll, startSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { KAFKA_CLIENTS } from '../../helpers/kafka-client.js';
import type { KafkaClient } from '../../helpers/kafka-client.js';
import { ownCatalog } from '../consumer/members.js';

const ATTEMPTS = 4;
const BACKOFF_MS = 200;
/** See the file's comment: the backoff minus 20 ms of clock slack. */
const MIN_GAP_MS = 180;
/** See the file's comment: ~3,000 with the long-poll wait, ~650 without. */
const MAX_SUM_MS = 2400;

function gapsOf(attempts: readonly number[]): number[] {
  return attempts.slice(1).map((t, i) => Math.round(t - attempts[i]!));
}

function expectBackoffKept(attempts: readonly number[]): void {
  expect(attempts).toHaveLength(ATTEMPTS);
  const gaps = gapsOf(attempts);
  const sum = gaps.reduce((a, b) => a + b, 0);
  for (const gap of gaps) expect(gap, `gaps ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(MIN_GAP_MS);
  expect(sum, `gaps ${gaps.join(', ')} ms`).toBeLessThan(MAX_SUM_MS);
}

// The subscriber cases run on both clients (the kafkajs adapter's fetch wait is the point of one
// of them); the push case on the run's client.
const cats = new Map(KAFKA_CLIENTS.map((c) => [c, ownCatalog(`it-retry-timing-${c}`, c)] as const));
const pushCat = ownCatalog('it-retry-timing-push');
afterAll(async () => {
  await Promise.allSettled([...[...cats.values()].map((c) => c.close()), pushCat.close()]);
});

describe('retry backoff: attempts come after the backoff, not after a long poll', () => {
  it.concurrent.each<[KafkaClient, string, number | undefined, 'none' | 'key']>(
    KAFKA_CLIENTS.flatMap((client) => [
      [client, 'ordering none, with lanes (inFlightPerPartition 8)', 8, 'none'],
      [client, 'ordering none, without lanes', undefined, 'none'],
      [client, 'ordering key, with lanes (inFlightPerPartition 8)', 8, 'key'],
      [client, 'ordering key, without lanes', undefined, 'key'],
    ]),
  )(`%s: a subscriber, %s, handler always retrying, ${ATTEMPTS} attempts ${BACKOFF_MS} ms apart`, async (client, _label, window, ordering) => {
    const gw = await cats.get(client)!.member();
    const attempts: number[] = [];
    const instrument = `TIMING${ordering}${window ?? 0}/USD`;
    const sub = await gw.subscribe({
      subscription: uniqueName(`it-retry-timing-${client}-${ordering}-${window ?? 'plain'}`),
      kinds: ['PriceLoadingCompleted'],
      ordering,
      ...(window === undefined ? {} : { inFlightPerPartition: window, partitionsConcurrently: window }),
      retry: retryPolicy({ maxAttempts: ATTEMPTS, initialDelayMs: BACKOFF_MS, factor: 1, maxDelayMs: BACKOFF_MS, jitter: 0 }),
      handler: (event) => {
        // Both cases read the same topic: each retries only its own event.
        if ((event.data?.kind === 'json' ? (event.data.value as { instrument: string }).instrument : '') !== instrument) return Promise.resolve();
        attempts.push(performance.now());
        return Promise.resolve(retry('sink answered 500'));
      },
    });
    try {
      await gw.publisher().publish('PriceLoadingCompleted', priceLoaded(instrument, 'H1'))!.delivered;
      await waitFor('dead-lettered', () => sub.stats().deadLettered === 1, 30_000);
      expectBackoffKept(attempts);
    } finally {
      await sub.unsubscribe();
    }
  }, 60_000);

  it.concurrent(`a push subscription, sink always answering 500: ${ATTEMPTS} deliveries ${BACKOFF_MS} ms apart`, async () => {
    const sink = await startSink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : { status: 500, body: 'always failing' }));
    const gw = await startGateway({
      stack: true,
      env: {
        ...pushCat.env(),
        SUBSCRIPTIONS_TOPIC: `${uniqueName('it-retry-timing')}.subscriptions`,
        SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
        SUBSCRIPTION_IDLE_STOP_MS: '0',
      },
    });
    try {
      await gw.gateway.subscriptionsLoaded();
      const name = uniqueName('it-retry-timing-push').replace(/\./g, '-');
      const res = await fetch(`${gw.url}/subscriptions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name,
          kinds: ['PriceLoadingCompleted'],
          ordering: 'none',
          retry: { maxAttempts: ATTEMPTS, backoff: { initialMs: BACKOFF_MS, factor: 1, maxMs: BACKOFF_MS, jitter: 0 } },
          delivery: { mode: 'push', url: sink.url },
        }),
      });
      expect(res.status, await res.text()).toBe(201);
      // `start: latest` is committed before the 201: this event is delivered.
      await gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded('TIMINGPUSH/USD', 'H1'))!.delivered;
      await waitFor(`${ATTEMPTS} deliveries`, () => sink.deliveries().length >= ATTEMPTS, 30_000);
      // Give a fifth delivery (there must be none) a moment to show up.
      await new Promise((r) => setTimeout(r, 2 * BACKOFF_MS));
      expectBackoffKept(sink.deliveries().map((r) => r.atMs));
    } finally {
      await gw.close();
      await sink.close();
    }
  }, 90_000);
});
