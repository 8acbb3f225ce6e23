/** The natural-JSON JSON Schemas validate with ajv (2020-12, strict) and agree with codec/data. */
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import type { EventKind } from '../../../src/catalog/index.js';
import { JSON_SCHEMA_DIALECT, naturalJsonSchema } from '../../../src/artifacts/export/index.js';
import type { KindName } from '../../../src/catalog/generated/index.js';
import { avroType, jsonToAvro } from '../../../src/codec/data/index.js';
import { priceLoaded } from '../../fixtures/events.js';
import { ajv2020, errorsOf } from './ajv.js';
import type { ValidateFunction } from './ajv.js';
import { SAMPLES } from './samples.js';

const catalog = loadCatalog();
const ajv = ajv2020();
const validators = new Map<string, ValidateFunction>(catalog.kinds.map((k) => [k.name, ajv.compile(naturalJsonSchema(k))]));

function kind(name: KindName): EventKind {
  return catalog.byName(name)!;
}

function schemaAccepts(name: KindName, data: unknown): boolean {
  return validators.get(name)!(data);
}

function codecAccepts(name: KindName, data: unknown): boolean {
  try {
    jsonToAvro(avroType(kind(name).schema), data);
    return true;
  } catch {
    return false;
  }
}

const with_ = <K extends KindName>(name: K, over: Record<string, unknown>): Record<string, unknown> => ({ ...SAMPLES[name], ...over });
const without = <K extends KindName>(name: K, member: string): Record<string, unknown> => {
  const copy: Record<string, unknown> = { ...SAMPLES[name] };
  delete copy[member];
  return copy;
};
const bar = SAMPLES.ChartDataReady.bars[0]!;

/** [case, kind, data, valid] — the JSON Schema and the codec must both give `valid`. */
const TABLE: readonly (readonly [string, KindName, unknown, boolean])[] = [
  ['fixture data', 'PriceLoadingCompleted', priceLoaded(), true],
  ['optional members left out', 'PriceLoadingCompleted', without('PriceLoadingCompleted', 'feed'), true],
  ['nullable member null', 'PriceLoadingCompleted', with_('PriceLoadingCompleted', { firstBarAt: null }), true],
  ['unknown member', 'PriceLoadingCompleted', with_('PriceLoadingCompleted', { extra: 1 }), false],
  ['required member missing', 'PriceLoadingCompleted', without('PriceLoadingCompleted', 'completedAt'), false],
  ['int as string', 'PriceLoadingCompleted', with_('PriceLoadingCompleted', { barsLoaded: '120' }), false],
  ['int beyond 32 bits', 'PriceLoadingCompleted', with_('PriceLoadingCompleted', { barsLoaded: 2 ** 31 }), false],
  ['int with a fraction', 'PriceLoadingCompleted', with_('PriceLoadingCompleted', { barsLoaded: 1.5 }), false],
  ['timestamp as epoch number', 'PriceLoadingCompleted', with_('PriceLoadingCompleted', { completedAt: 1647345601250 }), false],
  ['timestamp without offset', 'PriceLoadingCompleted', with_('PriceLoadingCompleted', { completedAt: '2022-03-15T12:00:01' }), false],
  ['string member null', 'PriceLoadingCompleted', with_('PriceLoadingCompleted', { instrument: null }), false],
  ['not an object', 'PriceLoadingCompleted', ['EUR/USD'], false],
  ['long beyond 2^53 as a string', 'SeriesUpdateCompleted', with_('SeriesUpdateCompleted', { seriesLength: '-9223372036854775808' }), true],
  ['long as a safe number', 'SeriesUpdateCompleted', with_('SeriesUpdateCompleted', { seriesLength: 9007199254740991 }), true],
  ['long beyond 2^53 as a number', 'SeriesUpdateCompleted', with_('SeriesUpdateCompleted', { seriesLength: 2 ** 53 }), false],
  ['long string with a fraction', 'SeriesUpdateCompleted', with_('SeriesUpdateCompleted', { seriesLength: '1.5' }), false],
  ['uuid malformed', 'SeriesUpdateCompleted', with_('SeriesUpdateCompleted', { updateId: 'not-a-uuid' }), false],
  ['array of strings', 'IndicatorsComputed', with_('IndicatorsComputed', { indicators: [] }), true],
  ['array item wrong type', 'IndicatorsComputed', with_('IndicatorsComputed', { indicators: ['SMA20', 20] }), false],
  ['nested record: unknown member', 'ChartDataReady', with_('ChartDataReady', { bars: [{ ...bar, extra: true }] }), false],
  ['nested record: member missing', 'ChartDataReady', with_('ChartDataReady', { bars: [(({ volume: _v, ...b }) => b)(bar)] }), false],
  ['decimal at full precision', 'ChartDataReady', with_('ChartDataReady', { bars: [{ ...bar, open: '1234567890123.12345' }] }), true],
  ['decimal beyond precision', 'ChartDataReady', with_('ChartDataReady', { bars: [{ ...bar, open: '12345678901234.5' }] }), false],
  ['decimal with leading zeros', 'ChartDataReady', with_('ChartDataReady', { bars: [{ ...bar, open: '0001.5' }] }), true],
  ['decimal beyond scale', 'ChartDataReady', with_('ChartDataReady', { bars: [{ ...bar, open: '1.123456' }] }), false],
  ['decimal as a number', 'ChartDataReady', with_('ChartDataReady', { bars: [{ ...bar, open: 1.1 }] }), false],
  ['map of nullable doubles', 'ChartDataReady', with_('ChartDataReady', { series: { a: [null, 1, '-Infinity'] } }), true],
  ['map value wrong type', 'ChartDataReady', with_('ChartDataReady', { series: { a: ['x'] } }), false],
  ['map with default left out', 'ChartDataReady', without('ChartDataReady', 'series'), true],
  ['enum symbol', 'StrategySignal', with_('StrategySignal', { side: 'FLAT' }), true],
  ['enum unknown symbol', 'StrategySignal', with_('StrategySignal', { side: 'HOLD' }), false],
  ['nullable decimal null', 'StrategySignal', with_('StrategySignal', { stopLoss: null }), true],
  ['nullable double as a string', 'StrategySignal', with_('StrategySignal', { confidence: '0.5' }), false],
  ['fixed of the right size', 'WritingGuideContentChanged', with_('WritingGuideContentChanged', { contentSha256: Buffer.alloc(32, 255).toString('base64') }), true],
  ['fixed of the wrong size', 'WritingGuideContentChanged', with_('WritingGuideContentChanged', { contentSha256: Buffer.alloc(31).toString('base64') }), false],
  ['fixed not base64', 'WritingGuideContentChanged', with_('WritingGuideContentChanged', { contentSha256: 'x'.repeat(44) }), false],
  ['date', 'WritingGuideContentChanged', with_('WritingGuideContentChanged', { effectiveDate: null }), true],
  ['date in another form', 'WritingGuideContentChanged', with_('WritingGuideContentChanged', { effectiveDate: '2026/08/01' }), false],
];

describe('natural-JSON JSON Schema per kind', () => {
  it('every schema is a strict JSON Schema 2020-12 document with the kind as title and no unknown members', () => {
    for (const k of catalog.kinds) {
      const s = naturalJsonSchema(k, { id: `https://gw.example/schemas/json/${k.eventId}.json` });
      expect(s['$schema']).toBe(JSON_SCHEMA_DIALECT);
      expect(s['$id']).toBe(`https://gw.example/schemas/json/${k.eventId}.json`);
      expect(s['title']).toBe(k.name);
      expect(s['additionalProperties']).toBe(false);
      expect(naturalJsonSchema(k)).toEqual(naturalJsonSchema(k));
    }
  });

  it.each(Object.keys(SAMPLES) as KindName[])('accepts the valid sample of %s', (name) => {
    const v = validators.get(name)!;
    expect(v(SAMPLES[name]), errorsOf(v)).toBe(true);
  });

  it('lists exactly the members without default or null branch as required', () => {
    expect(naturalJsonSchema(kind('PriceLoadingCompleted'))['required']).toEqual(['instrument', 'timeframe', 'barKey', 'barsLoaded', 'completedAt']);
    expect(naturalJsonSchema(kind('ChartDataReady'))['required']).toEqual(['instrument', 'timeframe', 'barKey', 'bars', 'readyAt']);
  });

  it('names the nested record under $defs by its full name, with defaults in natural JSON', () => {
    const s = naturalJsonSchema(kind('ChartDataReady'));
    expect(Object.keys(s['$defs'] as object)).toEqual(['caishen.trading.ChartBar']);
    expect((s['properties'] as Record<string, Record<string, unknown>>)['series']!['default']).toEqual({});
    expect((naturalJsonSchema(kind('StrategySignal'))['properties'] as Record<string, Record<string, unknown>>)['stopLoss']!['default']).toBeNull();
  });

  it.each(TABLE)('%s (%s): schema and codec both say valid=%s', (_case, name, data, valid) => {
    expect(schemaAccepts(name, data)).toBe(valid);
    expect(codecAccepts(name, data)).toBe(valid);
  });
});
