/**
 * T13 (bus spec M4): a kind gains an optional field while a subscriber built against the old
 * schema keeps running. The old subscriber keeps working (data resolved into its schema) and the
 * new field reaches subscribers built against the new schema. Two catalogs — old and new — on a
 * topic of this run's own, so the shared registry's subjects are not touched.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kafkaClientEnv } from '../helpers/kafka-client.js';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { defaultCatalogDir } from '../../src/catalog/index.js';
import { loadConfig } from '../../src/config/index.js';
import type { Envelope } from '../../src/envelope/types.js';
import { createLogger } from '../../src/observability/index.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../fixtures/events.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const dirs: string[] = [];
const gateways: Gateway[] = [];
afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function catalogDir(topic: string, withVenue: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'ceg-t13-'));
  dirs.push(dir);
  const schema = JSON.parse(readFileSync(join(defaultCatalogDir(), 'trading/price-loading-completed.avsc'), 'utf8')) as { fields: object[] };
  if (withVenue) schema.fields.push({ name: 'venue', type: ['null', 'string'], default: null, doc: 'Trading venue (added in version 2).' });
  writeFileSync(join(dir, 'price.avsc'), JSON.stringify(schema, null, 2));
  writeFileSync(
    join(dir, 'catalog.yaml'),
    [
      'version: 1',
      'defaults:',
      '  compatibility: FULL_TRANSITIVE',
      '  class: notification',
      '  maxDataBytes: 1024',
      '  topic: { partitions: 3, retentionMs: 604800000, cleanupPolicy: delete }',
      'topics:',
      `  ${topic}: { partitions: 3, retentionMs: 604800000, cleanupPolicy: delete }`,
      'kinds:',
      `  - eventId: ${PRICE_LOADING_COMPLETED}`,
      '    name: PriceLoadingCompleted',
      '    description: T13 fixture kind.',
      `    topic: ${topic}`,
      '    schema: price.avsc',
      '    key: [instrument, timeframe]',
      '    publish: true',
      '    owner: pdsp',
      '',
    ].join('\n'),
  );
  return dir;
}

async function member(dir: string): Promise<Gateway> {
  const s = stackEnv();
  const config = loadConfig({ KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CATALOG_DIR: dir, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...kafkaClientEnv() });
  const gw = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }));
  gateways.push(gw);
  await gw.ready;
  return gw;
}

describe('T13 schema evolution with a deployed subscriber', () => {
  it('T13 an added optional field: the old subscriber keeps working and the new field reaches new subscribers', async () => {
    const topic = uniqueName('t13.price').replace(/[^a-z0-9.-]/g, '-');
    const oldGw = await member(catalogDir(topic, false));
    const oldSeen: Envelope[] = [];
    const oldSub = await oldGw.subscribe({ subscription: uniqueName('t13-old'), kinds: ['PriceLoadingCompleted'], handler: async (e) => void oldSeen.push(e) });

    const newGw = await member(catalogDir(topic, true));
    const newSeen: Envelope[] = [];
    const newSub = await newGw.subscribe({ subscription: uniqueName('t13-new'), kinds: ['PriceLoadingCompleted'], handler: async (e) => void newSeen.push(e) });

    // This member's catalog has a field the generated type does not know: the kind as a run-time string takes plain JSON.
    const newerKind: string = PRICE_LOADING_COMPLETED;
    const fromNew = newGw.publisher().publish(newerKind, { ...priceLoaded('EUR/USD', 'H4'), venue: 'XLON' })!;
    await fromNew.delivered;
    const fromOld = oldGw.publisher().publish('PriceLoadingCompleted', priceLoaded('GBP/USD', 'H4'))!;
    await fromOld.delivered;
    await waitFor('both events at both subscribers', () => oldSeen.length >= 2 && newSeen.length >= 2, 30_000);

    const data = (list: Envelope[], id: string): unknown => {
      const e = list.find((x) => x.attributes.id === id)!;
      return e.data?.kind === 'json' ? e.data.value : undefined;
    };
    // The old subscriber reads both, resolved into its schema: no `venue`.
    expect(data(oldSeen, fromNew.id)).toEqual({ ...priceLoaded('EUR/USD', 'H4'), feed: null });
    expect(data(oldSeen, fromOld.id)).toEqual({ ...priceLoaded('GBP/USD', 'H4'), feed: null });
    // The new subscriber sees the new field, and the reader default for old data.
    expect(data(newSeen, fromNew.id)).toEqual({ ...priceLoaded('EUR/USD', 'H4'), feed: null, venue: 'XLON' });
    expect(data(newSeen, fromOld.id)).toEqual({ ...priceLoaded('GBP/USD', 'H4'), feed: null, venue: null });
    // Versions on the wire (M4): the new writer's events say version 2.
    const version = (list: Envelope[], id: string): unknown => list.find((x) => x.attributes.id === id)!.attributes.schemaversion;
    expect(version(newSeen, fromOld.id)).toBe(1);
    expect(version(newSeen, fromNew.id)).toBe(2);
    expect(oldSub.stats()).toMatchObject({ handled: 2, deadLettered: 0 });
    expect(newSub.stats()).toMatchObject({ handled: 2, deadLettered: 0 });
  });
});
