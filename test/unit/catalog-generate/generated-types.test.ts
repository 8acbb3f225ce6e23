/**
 * The generated types against the codec: every value the types accept (samples) is accepted by
 * codec/data, and every value marked `@ts-expect-error` (checked by `tsc -p tsconfig.json`, which
 * includes test/) is refused by it. The received types match what decoding yields.
 */
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { loadCatalog } from '../../../src/catalog/index.js';
import { avroToJson, avroType, jsonToAvro } from '../../../src/codec/data/index.js';
import type { JsonValue } from '../../../src/envelope/types.js';
import {
  EVENT_KINDS,
  KIND_NAME_BY_EVENT_ID,
  PRICE_LOADING_COMPLETED,
  STRATEGY_SIGNAL,
} from '../../../src/catalog/generated/index.js';
import type {
  KindName,
  KindNameOfEventId,
  PayloadOf,
  PriceLoadingCompletedPayload,
  ReceivedOf,
  StrategySignalPayload,
} from '../../../src/catalog/generated/index.js';
import { priceLoaded } from '../../fixtures/events.js';
import { SAMPLES } from '../catalog-export/samples.js';

const catalog = loadCatalog();

function encode(name: KindName, data: unknown): unknown {
  const kind = catalog.byName(name);
  if (kind === undefined) throw new Error(`no kind ${name}`);
  return jsonToAvro(avroType(kind.schema), data);
}

function refusal(name: KindName, data: unknown): string {
  try {
    encode(name, data);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_INVALID_DATA');
    return String((err as GatewayError).details['field']);
  }
  throw new Error('expected the codec to refuse the data');
}

/** What a typed publish API looks like with the generated types. */
function publish<K extends KindName>(kind: K, data: PayloadOf<K>): { type: string; data: PayloadOf<K> } {
  return { type: EVENT_KINDS[kind].eventId, data };
}

const base: PriceLoadingCompletedPayload = {
  instrument: 'EUR/USD',
  timeframe: 'H4',
  barKey: 'EUR-USD_H4__22031512',
  barsLoaded: 1,
  completedAt: '2022-03-15T12:00:01.250Z',
};

describe('generated payload types agree with codec/data', () => {
  it.each(Object.keys(SAMPLES) as KindName[])('the typed sample of %s is accepted by the codec', (name) => {
    expect(() => encode(name, SAMPLES[name])).not.toThrow();
  });

  it('accepts the shared test fixture data and a payload that leaves out optional members', () => {
    expect(() => encode('PriceLoadingCompleted', priceLoaded())).not.toThrow();
    expect(() => encode('PriceLoadingCompleted', base)).not.toThrow();
  });

  it('data received back has every member the Received type declares (defaults and nulls filled)', () => {
    const kind = catalog.byName('PriceLoadingCompleted')!;
    const type = avroType(kind.schema);
    const received = avroToJson(type, jsonToAvro(type, base)) as ReceivedOf<'PriceLoadingCompleted'> & JsonValue;
    const complete: ReceivedOf<'PriceLoadingCompleted'> = received;
    expect(Object.keys(complete)).toEqual(['instrument', 'timeframe', 'barKey', 'barsLoaded', 'firstBarAt', 'completedAt', 'feed']);
    expect(complete.feed).toBeNull();
    expect(complete.firstBarAt).toBeNull();
  });

  it('refuses what the types refuse', () => {
    // @ts-expect-error unknown member
    const unknownMember: PriceLoadingCompletedPayload = { ...base, extra: 1 };
    expect(refusal('PriceLoadingCompleted', unknownMember)).toBe('/extra');

    // @ts-expect-error int as a string
    const wrongType: PriceLoadingCompletedPayload = { ...base, barsLoaded: '1' };
    expect(refusal('PriceLoadingCompleted', wrongType)).toBe('/barsLoaded');

    const { completedAt: _dropped, ...withoutRequired } = base;
    // @ts-expect-error required member missing
    const missing: PriceLoadingCompletedPayload = withoutRequired;
    expect(refusal('PriceLoadingCompleted', missing)).toBe('/completedAt');

    // @ts-expect-error not a symbol of SignalSide
    const badSymbol: StrategySignalPayload = { ...SAMPLES.StrategySignal, side: 'HOLD' };
    expect(refusal('StrategySignal', badSymbol)).toBe('/side');

    // @ts-expect-error a decimal is a string, not a number
    const decimalNumber: StrategySignalPayload = { ...SAMPLES.StrategySignal, price: 1.2345 };
    expect(refusal('StrategySignal', decimalNumber)).toBe('/price');

    // @ts-expect-error timestamps are RFC 3339 strings, not epoch numbers
    const epoch: PriceLoadingCompletedPayload = { ...base, completedAt: 1647345601250 };
    expect(refusal('PriceLoadingCompleted', epoch)).toBe('/completedAt');
  });

  it('a Received value must carry every member', () => {
    // @ts-expect-error feed and firstBarAt are always present when received
    const partial: ReceivedOf<'PriceLoadingCompleted'> = base;
    expect(Object.keys(partial)).not.toContain('feed');
  });

  it('typed publish: the data type follows the kind name', () => {
    expect(publish('PriceLoadingCompleted', base).type).toBe(PRICE_LOADING_COMPLETED.eventId);
    expect(publish('StrategySignal', SAMPLES.StrategySignal).type).toBe(STRATEGY_SIGNAL.eventId);
    // @ts-expect-error StrategySignal data for PriceLoadingCompleted
    const wrongKind = publish('PriceLoadingCompleted', SAMPLES.StrategySignal);
    expect(refusal('PriceLoadingCompleted', wrongKind.data)).toBe('/barsLoaded');
  });

  it('maps eventId to kind name at the type level and at run time', () => {
    const name: KindNameOfEventId<typeof PRICE_LOADING_COMPLETED.eventId> = 'PriceLoadingCompleted';
    // @ts-expect-error the eventId of PriceLoadingCompleted is not StrategySignal's
    const wrong: KindNameOfEventId<typeof PRICE_LOADING_COMPLETED.eventId> = 'StrategySignal';
    expect(KIND_NAME_BY_EVENT_ID[PRICE_LOADING_COMPLETED.eventId]).toBe(name);
    expect(wrong).toBe('StrategySignal');
  });

  it('payload types are JSON values (assignable to the JsonValue the untyped API takes)', () => {
    const asJson: JsonValue = SAMPLES.ChartDataReady;
    expect(asJson).toBe(SAMPLES.ChartDataReady);
  });
});
