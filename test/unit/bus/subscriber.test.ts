import { afterEach, describe, expect, it } from 'vitest';
import { currentHandling } from '../../../src/bus/correlation/index.js';
import { deadLetterTopic, subscribe } from '../../../src/bus/subscriber/index.js';
import { createMemoryIdempotencyStore, idempotent } from '../../../src/bus/idempotency/index.js';
import type { DeliveryContext } from '../../../src/bus/subscriber/index.js';
import { EventCodec } from '../../../src/codec/event/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { retryPolicy } from '../../../src/core/retry.js';
import type { Envelope } from '../../../src/envelope/types.js';
import { silentLogger } from '../../../src/observability/index.js';
import type { SchemaRegistry } from '../../../src/registry/port.js';
import type { OutboundRecord, TransportRecord } from '../../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded } from '../../fixtures/events.js';
import { waitFor } from '../../helpers/wait.js';
import { readRecords as readTopic, subscriberFixtures, text } from './helpers.js';

const retry = (maxAttempts = 3) => retryPolicy({ maxAttempts, initialDelayMs: 1, factor: 2, maxDelayMs: 5, jitter: 0 });
const data = priceLoaded();
const enc = new TextEncoder();

const fixtures = subscriberFixtures({ subscription: 'sub-a', retry: retry() });
afterEach(fixtures.cleanup);
const setup = fixtures.setup;

function headerMap(r: TransportRecord): Record<string, string> {
  return Object.fromEntries(r.headers.map(([k, v]) => [k, new TextDecoder().decode(v)]));
}

describe('subscribe: handled', () => {
  it('delivers events of the kind with their data and delivery context, once each, and commits them', async () => {
    const { publisher, sub } = await setup();
    const seen: { env: Envelope; ctx: DeliveryContext }[] = [];
    const s = await sub({ handler: (env, ctx) => { seen.push({ env, ctx }); return Promise.resolve(); } });
    const r1 = publisher.publish('PriceLoadingCompleted', data)!;
    const r2 = publisher.publish('PriceLoadingCompleted', priceLoaded('GBP/USD'))!;
    const [p1, p2] = await Promise.all([r1.delivered, r2.delivered]);
    await waitFor('2 handled', () => s.stats().handled === 2, 5000, 5);
    const byId = new Map(seen.map((x) => [x.env.attributes.id, x]));
    const { record, signal, ...ctx1 } = byId.get(r1.id)!.ctx;
    // Tracing off: the trace the handling continues is the event's own traceparent.
    const eventTrace = byId.get(r1.id)!.env.attributes.traceparent;
    expect(typeof eventTrace).toBe('string');
    expect(ctx1).toEqual({ subscription: 'sub-a', topic: PRICE_TOPIC, partition: p1.partition, offset: p1.offset, attempt: 1, traceparent: eventTrace });
    // The record as read (a sink forwarding Avro reads its bytes) and the stop signal come along.
    expect(record).toMatchObject({ topic: PRICE_TOPIC, partition: p1.partition, offset: p1.offset });
    expect(signal?.aborted).toBe(false);
    expect(byId.get(r2.id)!.ctx).toMatchObject({ partition: p2.partition, offset: p2.offset, attempt: 1 });
    const d = byId.get(r2.id)!.env.data;
    expect(d?.kind === 'json' && d.value).toMatchObject({ instrument: 'GBP/USD', timeframe: 'H4' });
    expect(s.stats()).toEqual({ handled: 2, retried: 0, deadLettered: 0, skipped: 0, filtered: 0, duplicates: 0, rebalances: 0, lost: 0 });

    // Same name again: resumes after the committed offsets (nothing redelivered).
    await s.unsubscribe();
    await s.done;
    const again: string[] = [];
    const s2 = await sub({ handler: (env) => { again.push(env.attributes.id); return Promise.resolve(); } });
    const r3 = publisher.publish('PriceLoadingCompleted', data)!;
    await r3.delivered;
    await waitFor('1 handled', () => s2.stats().handled === 1, 5000, 5);
    expect(again).toEqual([r3.id]);
  });

  it('a new subscription starts at the latest offset unless startFrom is earliest', async () => {
    const { publisher, sub } = await setup();
    const old = publisher.publish('PriceLoadingCompleted', data)!;
    await old.delivered;
    const latest: string[] = [];
    const earliest: string[] = [];
    const a = await sub({ subscription: 'late', handler: (e) => { latest.push(e.attributes.id); return Promise.resolve(); } });
    const b = await sub({ subscription: 'early', startFrom: 'earliest', handler: (e) => { earliest.push(e.attributes.id); return Promise.resolve(); } });
    const fresh = publisher.publish('PriceLoadingCompleted', data)!;
    await fresh.delivered;
    await waitFor('handled', () => a.stats().handled === 1 && b.stats().handled === 2, 5000, 5);
    expect(latest).toEqual([fresh.id]);
    expect(earliest.sort()).toEqual([old.id, fresh.id].sort());
  });

  it('events published inside the handler inherit its correlationid and get causationid = the handled id', async () => {
    const { publisher, sub } = await setup();
    let child: { id: string; correlationid: string } | undefined;
    const s = await sub({
      kinds: [PRICE_LOADING_COMPLETED],
      handler: async (env) => {
        if (env.attributes.causationid !== undefined) return; // the child itself
        const r = publisher.publish('PriceLoadingCompleted', data)!;
        child = { id: r.id, correlationid: r.correlationid };
        await r.delivered;
      },
    });
    const parent = publisher.publish('PriceLoadingCompleted', data, { correlationid: 'chain-7' })!;
    await parent.delivered;
    await waitFor('parent and child handled', () => s.stats().handled === 2, 5000, 5);
    expect(child?.correlationid).toBe('chain-7');
  });

  it('correlationContext: false (sinks): the handler runs outside the correlation context, with the trace in ctx.traceparent', async () => {
    const { publisher, sub } = await setup();
    const seen: { handling: unknown; ctxTrace: string | undefined; eventTrace: unknown; child?: string }[] = [];
    const s = await sub({
      kinds: [PRICE_LOADING_COMPLETED],
      correlationContext: false,
      handler: async (env, ctx) => {
        const entry: (typeof seen)[number] = { handling: currentHandling(), ctxTrace: ctx.traceparent, eventTrace: env.attributes.traceparent };
        seen.push(entry);
        if (env.attributes.correlationid !== 'chain-8') return; // the child
        const r = publisher.publish('PriceLoadingCompleted', data)!;
        entry.child = r.correlationid;
        await r.delivered;
      },
    });
    await publisher.publish('PriceLoadingCompleted', data, { correlationid: 'chain-8' })!.delivered;
    await waitFor('parent and child handled', () => s.stats().handled === 2, 5000, 5);
    for (const e of seen) {
      expect(e.handling).toBeUndefined();
      expect(typeof e.eventTrace).toBe('string');
      expect(e.ctxTrace).toBe(e.eventTrace);
    }
    // Published outside any handling context: a new chain, not chain-8.
    const child = seen.find((e) => e.child !== undefined)?.child;
    expect(child).toBeDefined();
    expect(child).not.toBe('chain-8');
  });
});

describe('subscribe: retry and dead letter', () => {
  it('retries a failing handler with attempt 1, 2, 3 and then counts it handled', async () => {
    const { publisher, sub } = await setup();
    const attempts: number[] = [];
    const s = await sub({
      retry: retry(5),
      handler: (_e, ctx) => {
        attempts.push(ctx.attempt);
        return ctx.attempt < 3 ? Promise.reject(new Error('flaky')) : Promise.resolve();
      },
    });
    await publisher.publish('PriceLoadingCompleted', data)!.delivered;
    await waitFor('handled', () => s.stats().handled === 1, 5000, 5);
    expect(attempts).toEqual([1, 2, 3]);
    expect(s.stats()).toEqual({ handled: 1, retried: 2, deadLettered: 0, skipped: 0, filtered: 0, duplicates: 0, rebalances: 0, lost: 0 });
  });

  it('dead-letters after maxAttempts with the original record and the dlq_* headers, then goes on', async () => {
    const { publisher, sub, transport } = await setup();
    const handled: string[] = [];
    let firstFailure = 0;
    const s = await sub({
      handler: async (e) => {
        if (e.attributes.subject === 'bad') {
          if (firstFailure === 0) {
            await new Promise((r) => setTimeout(r, 30)); // the first failure comes well after receipt
            firstFailure = Date.now();
          }
          throw new Error('boom');
        }
        handled.push(e.attributes.id);
      },
    });
    const bad = publisher.publish('PriceLoadingCompleted', data, { subject: 'bad' })!;
    const pos = await bad.delivered;
    const good = publisher.publish('PriceLoadingCompleted', data)!; // same key: same partition, behind the bad one
    await good.delivered;
    await waitFor('dead-lettered and next handled', () => s.stats().deadLettered === 1 && s.stats().handled === 1, 5000, 5);
    expect(handled).toEqual([good.id]);
    expect(s.stats()).toEqual({ handled: 1, retried: 2, deadLettered: 1, skipped: 0, filtered: 0, duplicates: 0, rebalances: 0, lost: 0 });

    expect(deadLetterTopic('sub-a')).toBe('sub-a.dlq');
    const [original] = (await readTopic(transport, PRICE_TOPIC, 2)).filter((r) => r.offset === pos.offset && r.partition === pos.partition);
    const [dl] = await readTopic(transport, 'sub-a.dlq', 1);
    expect(dl!.key).toEqual(original!.key);
    expect(dl!.value).toEqual(original!.value);
    expect(dl!.timestampMs).toBe(original!.timestampMs);
    expect(dl!.headers.slice(0, original!.headers.length)).toEqual(original!.headers);
    const h = headerMap(dl!);
    expect(h.ce_id).toBe(bad.id);
    expect(h.dlq_reason).toBe('retries exhausted after 3 attempts: boom');
    expect(h.dlq_attempts).toBe('3');
    expect(h.dlq_source_topic).toBe(PRICE_TOPIC);
    expect(h.dlq_source_partition).toBe(String(pos.partition));
    expect(h.dlq_source_offset).toBe(pos.offset.toString());
    expect(h.dlq_subscription).toBe('sub-a');
    expect(Date.parse(h.dlq_first_failure_time!)).toBeGreaterThanOrEqual(firstFailure);
    expect(Date.parse(h.dlq_first_failure_time!)).toBeLessThanOrEqual(Date.parse(h.dlq_last_failure_time!));
    expect(h.dlq_last_failure_time).toMatch(/Z$/);
  });

  it('dead-letters at once when the handler throws a non-retriable GatewayError', async () => {
    const { publisher, sub, transport } = await setup();
    let calls = 0;
    const s = await sub({
      retry: retry(5),
      handler: () => {
        calls++;
        return Promise.reject(new GatewayError('CEG_INVALID_DATA', 'cannot use this bar', { retriable: false }));
      },
    });
    await publisher.publish('PriceLoadingCompleted', data)!.delivered;
    await waitFor('dead-lettered', () => s.stats().deadLettered === 1, 5000, 5);
    expect(calls).toBe(1);
    expect(s.stats().retried).toBe(0);
    const [dl] = await readTopic(transport, 'sub-a.dlq', 1);
    expect(headerMap(dl!)).toMatchObject({ dlq_reason: 'handler refused: cannot use this bar', dlq_attempts: '1' });
  });

  it('dead-letters a poison record (duplicate ce_ header) without calling the handler, and handles the next', async () => {
    const { publisher, sub, transport, codec } = await setup();
    const ids: string[] = [];
    const s = await sub({ handler: (e) => { ids.push(e.attributes.id); return Promise.resolve(); } });
    const good = codec.toRecord(
      { specversion: '1.0', id: 'dup', source: 'urn:x', type: PRICE_LOADING_COMPLETED, partitionkey: 'EUR-USD_H4' },
      codec.encodeData(codec.binding(PRICE_LOADING_COMPLETED)!, data),
    );
    const poison: OutboundRecord = { ...good, headers: [...good.headers, ['ce_id', enc.encode('dup-2')]] };
    const [pp] = await transport.produce(PRICE_TOPIC, [poison]);
    const next = publisher.publish('PriceLoadingCompleted', data)!;
    await next.delivered;
    await waitFor('poison dead-lettered, next handled', () => s.stats().deadLettered === 1 && s.stats().handled === 1, 5000, 5);
    expect(ids).toEqual([next.id]);
    const [dl] = await readTopic(transport, 'sub-a.dlq', 1);
    const h = headerMap(dl!);
    expect(h.dlq_reason).toBe('poison: duplicate header ce_id');
    expect(h.dlq_attempts).toBe('1');
    expect(h.dlq_source_offset).toBe(pp!.offset.toString());
    expect(dl!.headers.filter(([k]) => k === 'ce_id').map(([, v]) => text(v))).toEqual(['dup', 'dup-2']);
  });

  it('dead-letters a record whose value is not registry-framed', async () => {
    const { sub, transport, codec } = await setup();
    const s = await sub({ handler: () => Promise.resolve() });
    const r = codec.toRecord({ specversion: '1.0', id: 'raw', source: 'urn:x', type: PRICE_LOADING_COMPLETED }, enc.encode('{"not":"avro"}'));
    await transport.produce(PRICE_TOPIC, [r]);
    await waitFor('dead-lettered', () => s.stats().deadLettered === 1, 5000, 5);
    const [dl] = await readTopic(transport, 'sub-a.dlq', 1);
    expect(headerMap(dl!).dlq_reason).toMatch(/^poison: /);
    expect(s.stats().handled).toBe(0);
  });

  it('skips records of other kinds on the same topic without calling the handler', async () => {
    const { sub, transport, codec, publisher } = await setup();
    const ids: string[] = [];
    const s = await sub({ handler: (e) => { ids.push(e.attributes.id); return Promise.resolve(); } });
    const series = codec.binding('d6b5e2f6-5144-43bb-a2ec-5317301b7208')!;
    const foreign = codec.toRecord(
      { specversion: '1.0', id: 'other-kind', source: 'urn:x', type: series.kind.eventId, partitionkey: 'EUR-USD_H4' },
      codec.encodeData(series, {
        instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__1', barsAppended: 1, seriesLength: 10,
        updateId: '8c3a5f7e-2f43-4a59-9a0e-0e0f3c8b1d11', completedAt: '2022-03-15T12:00:01.250Z',
      }),
    );
    await transport.produce(PRICE_TOPIC, [foreign]);
    const mine = publisher.publish('PriceLoadingCompleted', data)!;
    await mine.delivered;
    await waitFor('skipped and handled', () => s.stats().skipped === 1 && s.stats().handled === 1, 5000, 5);
    expect(ids).toEqual([mine.id]);
    expect(s.stats().deadLettered).toBe(0);
  });

  it('retries decoding while the registry is unreachable instead of dead-lettering', async () => {
    const { catalog, registry, transport, publisher } = await setup();
    let failures = 2;
    const flaky: SchemaRegistry = {
      ...registry,
      schemaById: (id) => (failures-- > 0 ? Promise.reject(new GatewayError('CEG_REGISTRY_UNAVAILABLE', 'registry down', { retriable: true })) : registry.schemaById(id)),
    };
    // No start-up bindings: every writer schema is fetched by id from the flaky registry.
    const coldCodec = new EventCodec(catalog, flaky, new Map());
    const ids: string[] = [];
    const s = await subscribe(transport, coldCodec, silentLogger(), { subscription: 'cold', kinds: ['PriceLoadingCompleted'], retry: retry(), handler: (e) => { ids.push(e.attributes.id); return Promise.resolve(); } });
    fixtures.track(s);
    const r = publisher.publish('PriceLoadingCompleted', data)!;
    await r.delivered;
    await waitFor('handled', () => s.stats().handled === 1, 5000, 5);
    expect(ids).toEqual([r.id]);
    expect(failures).toBe(-1);
    expect(s.stats().deadLettered).toBe(0);
  });
});

describe('subscribe: options and stopping', () => {
  it('refuses an unknown kind with CEG_UNKNOWN_TYPE naming the kinds field', async () => {
    const { transport, codec } = await setup();
    await expect(subscribe(transport, codec, silentLogger(), { subscription: 's', kinds: ['Nope'], retry: retry(), handler: () => Promise.resolve() })).rejects.toMatchObject({
      code: 'CEG_UNKNOWN_TYPE',
      retriable: false,
      details: { field: 'kinds' },
    });
  });

  it('refuses a subscription name that cannot name a dead-letter topic', async () => {
    const { transport, codec } = await setup();
    await expect(subscribe(transport, codec, silentLogger(), { subscription: 'a b/c', kinds: ['PriceLoadingCompleted'], retry: retry(), handler: () => Promise.resolve() })).rejects.toBeInstanceOf(GatewayError);
  });

  it('unsubscribe during a retry backoff resolves done and leaves the record uncommitted', async () => {
    const { publisher, sub } = await setup();
    let calls = 0;
    const s = await sub({
      retry: retryPolicy({ maxAttempts: 10, initialDelayMs: 60_000, factor: 1, maxDelayMs: 60_000, jitter: 0 }),
      handler: () => {
        calls++;
        return Promise.reject(new Error('not now'));
      },
    });
    const r = publisher.publish('PriceLoadingCompleted', data)!;
    await r.delivered;
    await waitFor('first attempt', () => calls === 1, 5000, 5);
    await s.unsubscribe();
    await expect(s.done).resolves.toBeUndefined();
    expect(s.stats()).toMatchObject({ handled: 0, deadLettered: 0 });
    // The same name gets the record again (it was never committed).
    const ids: string[] = [];
    const s2 = await sub({ handler: (e) => { ids.push(e.attributes.id); return Promise.resolve(); } });
    await waitFor('redelivered', () => s2.stats().handled === 1, 5000, 5);
    expect(ids).toEqual([r.id]);
  });
});

describe('subscribe: idempotency stage (issue 7)', () => {
  it('records dead-lettered events too, so a redelivery after a crash between the dead-letter produce and the commit is not dead-lettered twice', async () => {
    const { publisher, sub, transport } = await setup();
    const store = createMemoryIdempotencyStore();
    const handled: string[] = [];
    const handler = (e: Envelope): Promise<void> => {
      handled.push(e.attributes.id);
      return Promise.reject(new GatewayError('CEG_INVALID_DATA', 'never', { retriable: false }));
    };
    const first = await sub({ handler, idempotency: { store, windowMs: 60_000 }, startFrom: 'earliest' });
    const r = publisher.publish('PriceLoadingCompleted', data)!;
    await r.delivered;
    await waitFor('dead-lettered', () => first.stats().deadLettered === 1, 5000, 5);
    expect(await store.lookup({ scope: 'sub-a', source: 'urn:pdsp:host-1', id: r.id })).toBe('dead-lettered');
    await first.unsubscribe();
    // The crash window: the offset is moved back, as if the commit after the dead letter was lost.
    await transport.resetOffsets('sub-a', PRICE_TOPIC, { kind: 'earliest' });
    const again = await sub({ handler, idempotency: { store, windowMs: 60_000 }, startFrom: 'earliest' });
    await waitFor('the redelivery acknowledged as a duplicate', () => again.stats().duplicates === 1, 5000, 5);
    expect(again.stats()).toMatchObject({ deadLettered: 0, handled: 0, duplicates: 1 });
    expect(handled).toEqual([r.id]);
    expect(await readTopic(transport, deadLetterTopic('sub-a'), 1)).toHaveLength(1);
    expect(await transport.endOffsets(deadLetterTopic('sub-a'))).toEqual([{ partition: 0, offset: 1n }]);
  });

  it('counts a redelivery skipped by an idempotent handler wrapper as a duplicate, not as handled', async () => {
    const { publisher, sub, transport } = await setup();
    const store = createMemoryIdempotencyStore();
    const wrapped = idempotent(store, () => Promise.resolve(), { windowMs: 60_000 });
    const s = await sub({ handler: wrapped, startFrom: 'earliest' });
    const r = publisher.publish('PriceLoadingCompleted', data)!;
    await r.delivered;
    await waitFor('handled', () => s.stats().handled === 1, 5000, 5);
    // The same event again (same source and id), as a producer retry would write it.
    const [original] = await readTopic(transport, PRICE_TOPIC, 1);
    await transport.produce(PRICE_TOPIC, [{ key: original!.key, value: original!.value, headers: original!.headers }]);
    await waitFor('duplicate', () => s.stats().duplicates === 1, 5000, 5);
    expect(s.stats()).toMatchObject({ handled: 1, duplicates: 1 });
  });
});
