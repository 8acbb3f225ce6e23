/**
 * The bench's events: request bodies for the gateway (fresh ids per request, built from a
 * template so the load generator spends little CPU) and the same events as pre-encoded Kafka
 * records for the raw producer, built once by the gateway's own parse → prepare → codec path.
 */
import { randomUUID } from 'node:crypto';
import { loadCatalog, registerCatalog } from '../../src/catalog/index.js';
import { EventCodec } from '../../src/codec/event/index.js';
import { parseHttpRequest } from '../../src/codec/http/index.js';
import { prepareEvents } from '../../src/http/ingress/prepare.js';
import { createConfluentRegistry } from '../../src/registry/index.js';
import type { OutboundRecord } from '../../src/transport/port.js';
import { priceLoaded, structuredPriceEvent } from '../../test/fixtures/events.js';

export const EVENT_TYPE = '78b8fd47-3ff3-4881-9419-7bfe84ce89cb';
export const STRUCTURED = 'application/cloudevents+json';
export const BATCH = 'application/cloudevents-batch+json';

const INSTRUMENTS = ['EUR/USD', 'GBP/USD', 'USD/JPY', 'AUD/USD', 'USD/CHF', 'USD/CAD', 'NZD/USD', 'EUR/GBP', 'EUR/JPY', 'GBP/JPY', 'XAU/USD', 'BTC/USD'];
const TIMEFRAMES = ['M15', 'H1', 'H4'];
/** Placeholder replaced by a fresh id per event; never occurs elsewhere in a body. */
const ID_MARK = '@@ID@@';

/** Event number n (0-based): a realistic PriceLoadingCompleted with one of 36 keys (spread over the partitions). */
function event(n: number, id: string): Record<string, unknown> {
  const instrument = INSTRUMENTS[n % INSTRUMENTS.length]!;
  const timeframe = TIMEFRAMES[Math.floor(n / INSTRUMENTS.length) % TIMEFRAMES.length]!;
  return structuredPriceEvent({ id, source: 'urn:partner:bench' }, priceLoaded(instrument, timeframe, String(22031500 + (n % 97))));
}

/**
 * A body template: the JSON text split at each event id. `render()` joins it with fresh UUIDs,
 * one per event, so every request carries new ids at the cost of a string join.
 */
export class BodyTemplate {
  readonly #parts: readonly string[];
  readonly events: number;

  constructor(parts: readonly string[]) {
    this.#parts = parts;
    this.events = parts.length - 1;
  }

  render(): string {
    const p = this.#parts;
    let s = p[0]!;
    for (let i = 1; i < p.length; i++) s += randomUUID() + p[i]!;
    return s;
  }
}

/** `count` templates of structured single events (different keys), cycled by the load generator. */
export function singleTemplates(count: number): BodyTemplate[] {
  return Array.from({ length: count }, (_, n) => new BodyTemplate(JSON.stringify(event(n, ID_MARK)).split(ID_MARK)));
}

/** `count` templates of batches of `size` events. */
export function batchTemplates(count: number, size: number): BodyTemplate[] {
  return Array.from({ length: count }, (_, b) => {
    const events = Array.from({ length: size }, (_, i) => event(b * size + i, ID_MARK));
    return new BodyTemplate(JSON.stringify(events).split(ID_MARK));
  });
}

/**
 * `count` Kafka records of the same events, as the gateway writes them: parsed from a structured
 * request and completed, Avro-encoded and framed by the gateway's own ingress code (schema ids
 * from the registry of the stack), with the same `dataschema` base the gateway child is given.
 */
export async function rawRecords(count: number, registryUrl: string, dataschemaBase: string, catalogDir: string, topic: string): Promise<OutboundRecord[]> {
  const catalog = loadCatalog(catalogDir);
  const registry = createConfluentRegistry({ url: registryUrl });
  const latest = await registerCatalog(registry, catalog);
  const codec = new EventCodec(catalog, registry, latest);
  const body = Buffer.from(JSON.stringify(Array.from({ length: count }, (_, n) => event(n, randomUUID()))));
  const parsed = parseHttpRequest({ 'content-type': BATCH }, body);
  const prepared = prepareEvents(parsed.events, codec, { dataschemaBase }, true);
  if (prepared.some((p) => p.topic !== topic)) throw new Error(`bench events must all go to ${topic}`);
  return prepared.map((p) => p.record);
}
