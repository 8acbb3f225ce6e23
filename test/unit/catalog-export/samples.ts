/** Valid natural-JSON data for every kind of the project catalog, typed by the generated payload types. */
import type { KindName, PayloadOf } from '../../../src/catalog/generated/index.js';

export const SHA256_BASE64 = Buffer.alloc(32, 7).toString('base64');

export const SAMPLES: { readonly [K in KindName]: PayloadOf<K> } = {
  PriceLoadingCompleted: {
    instrument: 'EUR/USD',
    timeframe: 'H4',
    barKey: 'EUR-USD_H4__22031512',
    barsLoaded: 120,
    firstBarAt: '2022-03-15T08:00:00.000Z',
    completedAt: '2022-03-15T12:00:01.250+01:00',
    feed: null,
  },
  SeriesUpdateCompleted: {
    instrument: 'EUR/USD',
    timeframe: 'H4',
    barKey: 'EUR-USD_H4__22031512',
    barsAppended: 1,
    seriesLength: '9007199254740993',
    updateId: '0b4f9a52-3f0e-4c1e-9d9a-3c1f2b7e8a10',
    completedAt: '2022-03-15T12:00:00Z',
  },
  IndicatorsComputed: {
    instrument: 'EUR/USD',
    timeframe: 'H4',
    barKey: 'EUR-USD_H4__22031512',
    indicators: ['SMA20', 'RSI14'],
    durationMicros: 1534,
    computedAt: '2022-03-15T12:00:02.000Z',
  },
  ChartDataReady: {
    instrument: 'EUR/USD',
    timeframe: 'H4',
    barKey: 'EUR-USD_H4__22031512',
    bars: [{ barKey: 'EUR-USD_H4__22031512', openAt: '2022-03-15T12:00:00.000Z', open: '1.10000', high: '1.10420', low: '1.0981', close: '-0.5', volume: 1200 }],
    series: { SMA20: [1.1002, null, 'NaN'] },
    readyAt: '2022-03-15T12:00:03.123456Z',
  },
  StrategySignal: {
    instrument: 'EUR/USD',
    timeframe: 'H4',
    barKey: 'EUR-USD_H4__22031512',
    strategy: 'breakout',
    signalId: '6f1c0d2e-8b7a-4c3d-9e2f-1a2b3c4d5e6f',
    side: 'BUY',
    price: '1.23450',
    stopLoss: '1.2',
    confidence: 0.75,
    generatedAt: '2022-03-15T12:00:04.000Z',
  },
  WritingGuideContentChanged: {
    documentId: 'style-guide',
    path: 'guides/style.md',
    change: 'RENAMED',
    previousPath: 'style.md',
    revision: 42,
    sizeBytes: 2048,
    contentSha256: SHA256_BASE64,
    effectiveDate: '2026-08-01',
    changedAt: '2026-07-30T09:15:00.000Z',
  },
};
