/**
 * X1 on the whole library surface: in-process handlers, `subscribe` handlers and the outbox take
 * and give the generated payload types of the project's catalog (EventKinds, augmented by
 * src/catalog/generated/kinds.ts); unknown kind literals do not compile. Type assertions are
 * checked by `npm run typecheck` (tsconfig includes test/); every call also runs, on a real bus
 * over the in-memory transport and registry, so the run-time refusals match the compile-time ones.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { createBus } from '../../../src/app/index.js';
import { Bus } from '../../../src/bus/bus.js';
import { createMemoryIdempotencyStore, idempotent } from '../../../src/bus/idempotency/index.js';
import { OutboxWriter } from '../../../src/bus/outbox/index.js';
import type { DataOf, EventOf, KindArg } from '../../../src/catalog/kinds.js';
import type { LocalHandler } from '../../../src/bus/bus.js';
import { PRICE_LOADING_COMPLETED as PRICE } from '../../../src/catalog/generated/index.js';
import type { PriceLoadingCompletedPayload, PriceLoadingCompletedReceived, StrategySignalReceived } from '../../../src/catalog/generated/index.js';
import { defaultCatalogDir, loadCatalog } from '../../../src/catalog/index.js';
import { loadConfig } from '../../../src/config/index.js';
import type { Envelope, JsonValue } from '../../../src/envelope/types.js';
import { silentLogger } from '../../../src/observability/index.js';
import { priceLoaded, seriesUpdated } from '../../fixtures/events.js';
import { caught, caughtAsync } from '../../helpers/errors.js';
import { waitFor } from '../../helpers/wait.js';
import { codecFixture } from './helpers.js';

let bus: Bus;
beforeAll(async () => {
  bus = await createBus(loadConfig({ LOG_LEVEL: 'silent', PORT: '0' }), silentLogger());
});
afterAll(async () => {
  await bus?.close();
});

describe('typed publish and in-process handlers', () => {
  it('a kind name or its eventId gives the generated payload type to onLocal handlers', async () => {
    const byName: PriceLoadingCompletedPayload[] = [];
    const byId: PriceLoadingCompletedPayload[] = [];
    const offName = bus.onLocal('PriceLoadingCompleted', (data, kind) => {
      expectTypeOf(data).toEqualTypeOf<PriceLoadingCompletedPayload>();
      expect(kind).toBe('PriceLoadingCompleted');
      byName.push(data);
    });
    const offId = bus.onLocal(PRICE.eventId, (data) => {
      expectTypeOf(data).toEqualTypeOf<PriceLoadingCompletedPayload>();
      byId.push(data);
    });
    const sent = priceLoaded('TYP/ED', 'H1');
    const { local, remote } = bus.publish('PriceLoadingCompleted', sent);
    await local;
    await remote?.delivered;
    offName();
    offId();
    expect(byName).toEqual([sent]);
    expect(byId).toEqual([sent]);
  });

  it('an in-process handler runs in the published event\'s correlation context: what it publishes continues the chain (bus spec M2, T11)', async () => {
    let follow: { correlationid: string } | undefined;
    const off = bus.onLocal('PriceLoadingCompleted', () => {
      follow = bus.publish('SeriesUpdateCompleted', seriesUpdated('CHAIN/X', 'H1')).remote;
    });
    try {
      const { local, remote } = bus.publish('PriceLoadingCompleted', priceLoaded('CHAIN/X', 'H1'), { correlationid: 'chain-1' });
      await local;
      expect(remote?.correlationid).toBe('chain-1');
      expect(follow?.correlationid).toBe('chain-1');
    } finally {
      off();
    }
  });

  it('an unknown kind literal or wrong data does not compile, and is refused at run time', () => {
    // @ts-expect-error not a kind of the catalog
    expect(caught(() => bus.publish('NoSuchKind', priceLoaded())).code).toBe('CEG_UNKNOWN_TYPE');
    // @ts-expect-error barsLoaded is an int
    expect(caught(() => bus.publish('PriceLoadingCompleted', { ...priceLoaded(), barsLoaded: 'many' })).code).toBe('CEG_INVALID_DATA');
    // @ts-expect-error StrategySignal data is not PriceLoadingCompleted data
    expect(caught(() => bus.publish(PRICE.eventId, { side: 'BUY' })).code).toBe('CEG_INVALID_DATA');
    // @ts-expect-error not a kind of the catalog
    const off = bus.onLocal('NoSuchKind', () => undefined);
    off();
  });

  it('a kind chosen at run time among known kinds (a union) takes data valid for each of them, not for one of them', () => {
    const pick = (): 'PriceLoadingCompleted' | 'SeriesUpdateCompleted' => 'SeriesUpdateCompleted';
    const k = pick();
    // @ts-expect-error PriceLoadingCompleted data is not SeriesUpdateCompleted data: refused at compile time, not only at run time
    expect(caught(() => bus.publish(k, priceLoaded())).code).toBe('CEG_INVALID_DATA');
    expectTypeOf<DataOf<'PriceLoadingCompleted' | 'SeriesUpdateCompleted'>>().toEqualTypeOf<DataOf<'PriceLoadingCompleted'> & DataOf<'SeriesUpdateCompleted'>>();
    // A handler of either kind is given one or the other.
    expectTypeOf<Parameters<LocalHandler<'PriceLoadingCompleted' | 'SeriesUpdateCompleted'>>[0]>().toEqualTypeOf<DataOf<'PriceLoadingCompleted'> | DataOf<'SeriesUpdateCompleted'>>();
    expectTypeOf<DataOf<string>>().toEqualTypeOf<JsonValue>();
  });

  it('a kind name only known at run time (string) takes plain JSON, checked at run time', async () => {
    const fromConfig: string = 'PriceLoadingCompleted';
    const seen: JsonValue[] = [];
    const off = bus.onLocal(fromConfig, (data) => {
      expectTypeOf(data).toEqualTypeOf<JsonValue>();
      seen.push(data);
    });
    const data: JsonValue = priceLoaded('RUN/TIME', 'H1');
    await bus.publish(fromConfig, data).local;
    off();
    expect(seen).toEqual([data]);
    expect(caught(() => bus.publish(fromConfig, { not: 'a price' })).code).toBe('CEG_INVALID_DATA');
    expectTypeOf<KindArg<string>>().toEqualTypeOf<string>();
    expectTypeOf<KindArg<'NoSuchKind'>>().not.toEqualTypeOf<'NoSuchKind'>();
  });
});

describe('typed subscribe handlers', () => {
  it('hand the handler the received type of its kind (every member present)', async () => {
    const got: PriceLoadingCompletedReceived[] = [];
    const sub = await bus.subscribe({
      subscription: 'typed-api.received',
      kinds: ['PriceLoadingCompleted'],
      handler: async (event) => {
        expectTypeOf(event).toEqualTypeOf<EventOf<'PriceLoadingCompleted'>>();
        expectTypeOf(event.data!.value).toEqualTypeOf<PriceLoadingCompletedReceived>();
        if (event.data !== undefined && event.data.value.instrument === 'SUB/TYPED') got.push(event.data.value);
      },
    });
    await bus.publish('PriceLoadingCompleted', priceLoaded('SUB/TYPED', 'H1')).remote?.delivered;
    await waitFor('the event at the typed handler', () => got.length === 1);
    await sub.unsubscribe();
    // The received type promises `feed` although the publisher left it out.
    expect(got[0]).toEqual({ ...priceLoaded('SUB/TYPED', 'H1'), feed: null });
  });

  it('a synchronous handler compiles and runs: its return value (an outcome or nothing) counts as an async one\'s would', async () => {
    const got: string[] = [];
    const seen: string[] = [];
    const sub = await bus.subscribe({
      subscription: 'typed-api.sync',
      kinds: ['PriceLoadingCompleted'],
      handler: (event) => {
        if (event.data?.value.instrument === 'SUB/SYNC') got.push(event.attributes.id);
      },
    });
    const wrapped = await bus.subscribe({
      subscription: 'typed-api.sync-idempotent',
      kinds: ['PriceLoadingCompleted'],
      handler: idempotent(createMemoryIdempotencyStore(), (event: EventOf<'PriceLoadingCompleted'>) => void (event.data?.value.instrument === 'SUB/SYNC' && seen.push(event.attributes.id)), { windowMs: 60_000 }),
    });
    await bus.publish('PriceLoadingCompleted', priceLoaded('SUB/SYNC', 'H1')).remote?.delivered;
    await waitFor('the event at both synchronous handlers', () => got.length === 1 && seen.length === 1);
    await sub.unsubscribe();
    await wrapped.unsubscribe();
    expect(got).toEqual(seen);
  });

  it('several kinds give a union; kinds known only at run time give the plain envelope', () => {
    const handler = (event: EventOf<'PriceLoadingCompleted' | 'StrategySignal'>): void => void event;
    expectTypeOf(handler).parameter(0).toMatchTypeOf<{ readonly data?: { readonly value: PriceLoadingCompletedReceived | StrategySignalReceived } }>();
    expectTypeOf<EventOf<string>>().toEqualTypeOf<Envelope>();
    // A typed event is still an Envelope, so code written for envelopes takes it.
    expectTypeOf<EventOf<'PriceLoadingCompleted'>>().toMatchTypeOf<Envelope>();
  });

  it('the consumer group of an HTTP subscription cannot be joined from the library (it took the partner\'s events)', async () => {
    const err = await caughtAsync(bus.subscribe({ subscription: 'ce-gateway.sub.anonymous.h2', kinds: ['PriceLoadingCompleted'], handler: async () => {} }));
    expect(err.code).toBe('CEG_INVALID_OPTIONS');
    expect(err.details['field']).toBe('subscription');
    expect(err.message).toMatch(/HTTP subscription/);
  });

  it('held kinds do not widen the handler\'s event type (it never gets them)', async () => {
    const sub = await bus.subscribe({
      subscription: 'typed-api.held',
      kinds: ['PriceLoadingCompleted'],
      heldKinds: ['SeriesUpdateCompleted'],
      handler: async (event) => {
        expectTypeOf(event).toEqualTypeOf<EventOf<'PriceLoadingCompleted'>>();
        expectTypeOf(event.data?.value.barsLoaded).toEqualTypeOf<number | undefined>();
      },
    });
    expect(sub.topics).toContain(PRICE.topic);
    await sub.unsubscribe();
  });

  it('a kind listed twice (the same name, or a name and its eventId) is refused naming the later kinds[i], as POST /subscriptions refuses it (it was taken as one kind)', async () => {
    for (const kinds of [['PriceLoadingCompleted', 'SeriesUpdateCompleted', 'PriceLoadingCompleted'], ['PriceLoadingCompleted', 'SeriesUpdateCompleted', PRICE.eventId]] as const) {
      const err = await caughtAsync(bus.subscribe({ subscription: 'typed-api.twice', kinds, handler: async () => {} }));
      expect(err.code, kinds.join()).toBe('CEG_INVALID_OPTIONS');
      expect(err.retriable).toBe(false);
      expect(err.details).toMatchObject({ field: 'kinds[2]', first: 0 });
      expect(err.message).toContain('kinds[2]');
    }
  });

  it('an unknown kind literal does not compile, and is refused at run time', async () => {
    // @ts-expect-error not a kind of the catalog
    const err = await caughtAsync(bus.subscribe({ subscription: 'typed-api.unknown', kinds: ['NoSuchKind'], handler: async () => {} }));
    expect(err.code).toBe('CEG_UNKNOWN_TYPE');
  });

  it('idempotent() keeps the typed event of the subscription', async () => {
    const seen: string[] = [];
    const sub = await bus.subscribe({
      subscription: 'typed-api.idempotent',
      kinds: ['PriceLoadingCompleted'],
      handler: idempotent(
        createMemoryIdempotencyStore(),
        async (event: EventOf<'PriceLoadingCompleted'>) => {
          if (event.data?.value.instrument === 'IDEM/TYPED') seen.push(event.data.value.barKey);
        },
        { windowMs: 60_000 },
      ),
    });
    await bus.publish('PriceLoadingCompleted', priceLoaded('IDEM/TYPED', 'H1')).remote?.delivered;
    await waitFor('the event at the idempotent handler', () => seen.length === 1);
    await sub.unsubscribe();
    expect(seen).toEqual(['IDEM-TYPED_H1__22031512']);
  });
});

describe('typed outbox writes', () => {
  it('take the payload type; an unknown kind or wrong data does not compile and is refused before the client is used', async () => {
    const { codec } = await codecFixture();
    const writer = new OutboxWriter({ codec, identity: { service: 'typed', instance: 'test', dataschemaBase: 'http://gw.example/schemas/ids/' } });
    // Never connected: a write that reached the database would fail with a connection error instead.
    const client = new pg.Client({ host: '127.0.0.1', port: 1 });
    expectTypeOf<Parameters<typeof writer.write<'PriceLoadingCompleted'>>[2]>().toEqualTypeOf<PriceLoadingCompletedPayload>();
    // @ts-expect-error not a kind of the catalog
    expect((await caughtAsync(writer.write(client, 'NoSuchKind', priceLoaded()))).code).toBe('CEG_UNKNOWN_TYPE');
    // @ts-expect-error barsLoaded is an int
    expect((await caughtAsync(writer.write(client, 'PriceLoadingCompleted', { ...priceLoaded(), barsLoaded: '1' }))).code).toBe('CEG_INVALID_DATA');
  });
});

describe('a bus that does not publish refuses what a publisher refuses (T1 holds for valid calls)', () => {
  const catalog = loadCatalog();

  it('role none: invalid data and unknown kinds throw before any handler runs; valid data never throws', async () => {
    const off = new Bus({ role: 'none', catalog, log: silentLogger() });
    const seen: JsonValue[] = [];
    off.onLocal('PriceLoadingCompleted', (d) => void seen.push(d));
    // @ts-expect-error barsLoaded is an int
    const invalid = caught(() => off.publish('PriceLoadingCompleted', { ...priceLoaded(), barsLoaded: 'many' }));
    expect(invalid.code).toBe('CEG_INVALID_DATA');
    expect(invalid.retriable).toBe(false);
    expect(invalid.details['field']).toBe('/barsLoaded');
    const fromConfig: string = 'NoSuchKind';
    expect(caught(() => off.publish(fromConfig, {})).code).toBe('CEG_UNKNOWN_TYPE');
    const tooLarge = caught(() => off.publish('PriceLoadingCompleted', { ...priceLoaded(), feed: 'x'.repeat(2000) }));
    expect(tooLarge.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(seen).toEqual([]);
    const result = off.publish('PriceLoadingCompleted', priceLoaded('NONE/OK', 'H1'));
    await result.local;
    expect(result.remote).toBeUndefined();
    expect(seen).toEqual([priceLoaded('NONE/OK', 'H1')]);
  });

  it('role none refuses the same bad attributes and partition keys as a publishing bus, with the same codes and fields (library trial)', async () => {
    const off = new Bus({ role: 'none', catalog, log: silentLogger() });
    const seen: JsonValue[] = [];
    off.onLocal('PriceLoadingCompleted', (d) => void seen.push(d));
    const bad: { opts: Record<string, unknown>; data?: Record<string, unknown> }[] = [
      { opts: { subject: '' } },
      { opts: { correlationid: '' } },
      { opts: { correlationid: 'a\u0000b' } },
      { opts: { time: new Date('nope') } },
      { opts: { time: new Date(Date.UTC(10000, 0, 1)) } },
      { opts: { subject: 'x'.repeat(10_000) } },
      { opts: { subject: 5 } },
      { opts: {}, data: { instrument: '' } },
      { opts: {}, data: { timeframe: '' } },
    ];
    for (const b of bad) {
      const data = { ...priceLoaded('PAR/ITY', 'H1'), ...b.data };
      const opts = b.opts as Parameters<Bus['publish']>[2];
      const label = JSON.stringify(b).slice(0, 120);
      const publishing = caught(() => bus.publish('PriceLoadingCompleted', data, opts), label);
      const disabled = caught(() => off.publish('PriceLoadingCompleted', data, opts), label);
      expect(disabled.code, label).toBe(publishing.code);
      expect(disabled.details['field'], label).toBe(publishing.details['field']);
      expect(disabled.details['attribute'], label).toBe(publishing.details['attribute']);
      expect(disabled.details['violations'], label).toEqual(publishing.details['violations']);
    }
    expect(seen).toEqual([]);
  });

  it('role subscriber: the same refusal, and nothing goes to the broker', async () => {
    const sub = await createBus(loadConfig({ LOG_LEVEL: 'silent', PORT: '0', BUS_ROLE: 'subscriber' }), silentLogger());
    try {
      // @ts-expect-error barsLoaded is an int
      expect(caught(() => sub.publish('PriceLoadingCompleted', { ...priceLoaded(), barsLoaded: 'many' })).code).toBe('CEG_INVALID_DATA');
      expect(sub.publish('PriceLoadingCompleted', priceLoaded()).remote).toBeUndefined();
    } finally {
      await sub.close();
    }
  });

  it('a publishing bus checks a kind the catalog declares publish: false, which it does not send', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ceg-unpublished-'));
    try {
      cpSync(defaultCatalogDir(), dir, { recursive: true });
      writeFileSync(join(dir, 'catalog.yaml'), readFileSync(join(dir, 'catalog.yaml'), 'utf8').replace('publish: true', 'publish: false'));
      const both = await createBus(loadConfig({ LOG_LEVEL: 'silent', PORT: '0', CATALOG_DIR: dir }), silentLogger());
      try {
        // @ts-expect-error barsLoaded is an int
        expect(caught(() => both.publish('PriceLoadingCompleted', { ...priceLoaded(), barsLoaded: 'many' })).code).toBe('CEG_INVALID_DATA');
        expect(both.publish('PriceLoadingCompleted', priceLoaded()).remote).toBeUndefined();
      } finally {
        await both.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a Bus built without a catalog (the default of resolveBus) cannot check and dispatches as given', async () => {
    const bare = new Bus({ role: 'none', log: silentLogger() });
    const seen: JsonValue[] = [];
    bare.onLocal('PriceLoadingCompleted', (d) => void seen.push(d));
    // @ts-expect-error barsLoaded is an int
    await bare.publish('PriceLoadingCompleted', { barsLoaded: 'many' }).local;
    expect(seen).toEqual([{ barsLoaded: 'many' }]);
  });
});
