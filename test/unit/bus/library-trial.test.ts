/**
 * Faults a library user's trial found in the subscriber (2026-12-05), each as a kind: a store
 * failure, options no timer or store can honour, an odd thrown value, an event whose data is
 * missing. On the in-memory transport (same semantics as Kafka, tested by the same contract suite).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryIdempotencyStore } from '../../../src/bus/idempotency/index.js';
import type { IdempotencyStore } from '../../../src/bus/idempotency/index.js';
import { DEAD_LETTER_HEADERS, deadLetterTopic, subscribe } from '../../../src/bus/subscriber/index.js';
import type { SubscribeOptions } from '../../../src/bus/subscriber/index.js';
import { GatewayError, errorMessage } from '../../../src/core/errors.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { silentLogger } from '../../../src/observability/index.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded } from '../../fixtures/events.js';
import { caughtAsync } from '../../helpers/errors.js';
import { waitFor } from '../../helpers/wait.js';
import { readRecords, subscriberFixtures } from './helpers.js';

const policy = (maxAttempts = 3) => retryPolicy({ maxAttempts, initialDelayMs: 1, factor: 2, maxDelayMs: 5, jitter: 0 });
const fixtures = subscriberFixtures({ subscription: 'sub-lib', retry: policy(), startFrom: 'earliest' });
afterEach(fixtures.cleanup);
const setup = fixtures.setup;

describe('subscriber faults from the library trial', () => {
  it('an idempotency store that fails (retriable or not) holds the record and tries it again; the subscription does not stop', async () => {
    const { publisher, sub } = await setup();
    const real = createMemoryIdempotencyStore();
    let failures = 0;
    let down = true;
    const flaky: IdempotencyStore = {
      kind: 'memory',
      lookup: (k) => {
        if (!down) return real.lookup(k);
        failures++;
        // Both kinds of failure: a retriable GatewayError, and a plain error as a pg driver throws it.
        return Promise.reject(failures % 2 === 0 ? new GatewayError('CEG_STORE_UNAVAILABLE', 'db down', { retriable: true }) : new Error('connect ECONNREFUSED 127.0.0.1:1'));
      },
      markDone: (...a) => real.markDone(...a),
      purgeExpired: () => real.purgeExpired(),
      close: () => real.close(),
    };
    const handled: number[] = [];
    const s = await sub({ idempotency: { store: flaky, windowMs: 60_000 }, handler: (e) => Promise.resolve(void handled.push((e.data as unknown as { value: { barsLoaded: number } }).value.barsLoaded)) });
    let stopped: unknown;
    s.done.catch((err: unknown) => (stopped = err));
    await publisher.publish('PriceLoadingCompleted', { ...priceLoaded('IDEM/X', 'H1'), barsLoaded: 1 })!.delivered;
    await waitFor('the store failing several times', () => failures >= 4, 5000, 5);
    expect(handled).toEqual([]);
    down = false;
    await publisher.publish('PriceLoadingCompleted', { ...priceLoaded('IDEM/X', 'H1'), barsLoaded: 2 })!.delivered;
    await waitFor('both events handled once the store is back', () => handled.length === 2, 5000, 5);
    expect(handled).toEqual([1, 2]);
    expect(stopped).toBeUndefined();
    expect(s.stats()).toMatchObject({ handled: 2, deadLettered: 0 });
  });

  it('options out of their bounds are refused at subscribe, naming the option, before any topic is created', async () => {
    const { transport, codec } = await setup();
    const handler = (): Promise<void> => Promise.resolve();
    const base: SubscribeOptions = { subscription: 'sub-opts', kinds: ['PriceLoadingCompleted'], retry: policy(), handler };
    const bad: [Record<string, unknown>, string][] = [
      [{ handlerTimeoutMs: 0 }, 'handlerTimeoutMs'],
      [{ handlerTimeoutMs: -1 }, 'handlerTimeoutMs'],
      [{ handlerTimeoutMs: 30 * 24 * 3600_000 }, 'handlerTimeoutMs'],
      [{ handlerTimeoutMs: 1.5 }, 'handlerTimeoutMs'],
      [{ stopTimeoutMs: 2 ** 31 }, 'stopTimeoutMs'],
      [{ commitIntervalMs: 0 }, 'commitIntervalMs'],
      [{ commitEveryRecords: 0 }, 'commitEveryRecords'],
      [{ idempotency: { store: createMemoryIdempotencyStore(), windowMs: 0 } }, 'idempotency.windowMs'],
      [{ maxAgeMs: -5 }, 'maxAgeMs'],
      [{ partitionsConcurrently: 0 }, 'partitionsConcurrently'],
      [{ ordering: 'sorted' }, 'ordering'],
      [{ startFrom: 'yesterday' }, 'startFrom'],
      [{ retry: { maxAttempts: 0, delayMs: () => 1 } }, 'retry.maxAttempts'],
      [{ retry: { maxAttempts: 3 } }, 'retry.delayMs'],
      [{ limits: { maxAttributes: -1, maxAttributeBytes: 100 } }, 'limits.maxAttributes'],
      [{ instanceId: '' }, 'instanceId'],
      [{ handler: undefined }, 'handler'],
      [{ kinds: 'PriceLoadingCompleted' }, 'kinds'],
      [{ kinds: [] }, 'kinds'],
      [{ subscription: '' }, 'subscription'],
    ];
    for (const [over, field] of bad) {
      const err = await caughtAsync(subscribe(transport, codec, silentLogger(), { ...base, ...over }));
      expect(err.code, JSON.stringify(over)).toBe('CEG_INVALID_OPTIONS');
      expect(err.details['field'], JSON.stringify(over)).toBe(field);
      expect(err.message).toContain(field);
    }
    // Nothing was created for the refused calls: not the dead-letter topic of '' ('.dlq') nor of sub-opts.
    for (const topic of ['.dlq', deadLetterTopic('sub-opts')]) expect((await caughtAsync(transport.partitionCount(topic))).code).toBe('CEG_INVALID_NAME');
    // The bounds themselves are taken: Infinity (no bound) and the longest timer.
    for (const ok of [{ handlerTimeoutMs: Infinity }, { handlerTimeoutMs: 2 ** 31 - 1, stopTimeoutMs: 0 }]) {
      const s = await subscribe(transport, codec, silentLogger(), { ...base, ...ok });
      fixtures.track(s);
      await s.unsubscribe();
    }
  });

  it('a handler that throws anything — an Error whose message is not a string too — is retried, and the subscription goes on', async () => {
    const { publisher, sub } = await setup();
    const odd: unknown[] = [];
    await fc.assert(
      fc.asyncProperty(fc.anything(), (message) => {
        // Whatever an Error's message became, errorMessage gives a string (the reason of a retry).
        const err = new Error('x');
        (err as { message: unknown }).message = message;
        expect(typeof errorMessage(err)).toBe('string');
        odd.push(message);
        return Promise.resolve();
      }),
      { numRuns: 50 },
    );
    const attempts = new Map<string, number>();
    const s = await sub({
      retry: policy(2),
      handler: (e) => {
        const n = (attempts.get(e.attributes.id) ?? 0) + 1;
        attempts.set(e.attributes.id, n);
        if (n > 1) return Promise.resolve();
        const err = new Error('x');
        (err as { message: unknown }).message = odd[attempts.size % odd.length] ?? { code: 42 };
        return Promise.reject(err);
      },
    });
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(publisher.publish('PriceLoadingCompleted', priceLoaded(`ODD/${i}`, 'H1'))!.id);
    await waitFor('every event handled on its second attempt', () => s.stats().handled === 5, 5000, 5);
    expect(s.stats()).toMatchObject({ handled: 5, retried: 5, deadLettered: 0 });
  });

  it('an event without data on a topic that is not compacted is dead-lettered as poison, not handed to the handler', async () => {
    const { transport, publisher, sub } = await setup();
    const template = publisher.publish('PriceLoadingCompleted', priceLoaded('NODATA/X', 'H1'))!;
    await template.delivered;
    const [original] = await readRecords(transport, PRICE_TOPIC, 1);
    const handled: string[] = [];
    const s = await sub({ startFrom: 'latest', handler: (e) => Promise.resolve(void handled.push(e.attributes.id)) });
    const binaryWithoutValue = { key: original!.key, value: null, headers: original!.headers.filter(([n]) => n !== 'content-type') };
    const structuredWithoutData = {
      key: original!.key,
      value: new TextEncoder().encode(JSON.stringify({ specversion: '1.0', id: 'no-data-1', source: 'urn:test', type: PRICE_LOADING_COMPLETED, time: '2026-12-05T00:00:00Z' })),
      headers: [['content-type', new TextEncoder().encode('application/cloudevents+json')]] as [string, Uint8Array][],
    };
    await transport.produce(PRICE_TOPIC, [binaryWithoutValue, structuredWithoutData]);
    const good = publisher.publish('PriceLoadingCompleted', priceLoaded('NODATA/X', 'H1'))!;
    await good.delivered;
    await waitFor('the good event handled after the two', () => handled.includes(good.id), 5000, 5);
    expect(handled).toEqual([good.id]);
    expect(s.stats()).toMatchObject({ handled: 1, deadLettered: 2 });
    const reasons = (await readRecords(transport, deadLetterTopic('sub-lib'), 2)).map((r) => new TextDecoder().decode(r.headers.find(([n]) => n === DEAD_LETTER_HEADERS.reason)![1]));
    for (const r of reasons) expect(r).toMatch(/^poison: event without data on a topic that is not compacted/);
  });
});
