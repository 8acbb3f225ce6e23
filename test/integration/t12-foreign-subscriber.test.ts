/**
 * T12: a subscriber in another language, sharing no code with ce-gateway and given only the AsyncAPI
 * URL, the registry URL and an eventId, finds the topic, subscribes, selects records by `type`,
 * decodes them with the registry's writer schema and prints them correctly.
 *
 * The subscriber is test/fixtures/python/t12_subscriber.py, run with Debian's /usr/bin/python3 and
 * the Debian packages python3-confluent-kafka and python3-avro. It runs twice: against a gateway
 * with the package catalog, and against one whose catalog (generated from
 * test/fixtures/t12-catalog/catalog.template.yaml) puts the same eventIds on topics named uniquely
 * for the run — two kinds sharing one topic — so nothing about the topic can be hard-coded.
 *
 * Spec: bus spec T12, X2 (AsyncAPI keyed by eventId); docs/asyncapi.md "Binding by eventId".
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCatalogDir } from '../../src/catalog/index.js';
import type { JsonValue } from '../../src/envelope/types.js';
import type { Position } from '../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, seriesUpdated, strategySignal } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';

const run = promisify(execFile);

/** Debian's interpreter: the Debian packages install for it, not for a pyenv/venv python3 on PATH. */
const PYTHON = '/usr/bin/python3';
const DEBIAN_PACKAGES = ['python3-confluent-kafka', 'python3-avro'] as const;
const SUBSCRIBER = join(import.meta.dirname, '../fixtures/python/t12_subscriber.py');
const TEMPLATE = join(import.meta.dirname, '../fixtures/t12-catalog/catalog.template.yaml');

const STRATEGY_SIGNAL = 'b785f117-3e61-4864-89c3-4accf13140c2';
const SERIES_UPDATE_COMPLETED = 'd6b5e2f6-5144-43bb-a2ec-5317301b7208';
const EVENT_TIME = new Date('2022-03-15T12:00:02.345Z');

/** One line the subscriber printed. */
interface Printed {
  readonly id: string;
  readonly type: string;
  readonly source: string;
  readonly time: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string;
  readonly correlationid: string;
  readonly subject: string;
  readonly schemaId: number;
  readonly data: { [key: string]: JsonValue };
}

interface SubscriberRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly events: Printed[];
  readonly stderr: string;
}

/** Checks Debian's Python and its Kafka/Avro modules; rejects with what to install. */
async function checkDebianPython(): Promise<void> {
  const install = `apt-get install -y ${DEBIAN_PACKAGES.join(' ')}`;
  try {
    const { stdout } = await run(PYTHON, ['-c', 'import confluent_kafka, avro.io, avro.schema; print(confluent_kafka.version()[0])'], { timeout: 30_000 });
    expect(stdout.trim()).toMatch(/^\d+\.\d+/);
  } catch (err) {
    throw new Error(
      `T12 needs ${PYTHON} with the Debian packages ${DEBIAN_PACKAGES.join(' and ')} (${install}); ` +
        `a python3 from pyenv or a venv does not see them. Check failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

let pythonChecked: Promise<void> | undefined;
/**
 * Fails loudly — every test that needs the subscriber fails with the install hint, none is
 * skipped — when Debian's Python or its Kafka/Avro modules are missing. Checked once per file.
 */
function requireDebianPython(): Promise<void> {
  pythonChecked ??= checkDebianPython();
  return pythonChecked;
}

/**
 * Runs the Python subscriber with only the three inputs T12 allows (+ its own group and limits).
 * `stopWhen`: once it holds for the lines printed so far, the subscriber gets SIGTERM (a clean stop,
 * exit 0) — for shared topics whose history holds other runs' events of the same kind.
 */
async function runSubscriber(o: {
  asyncapi: string;
  registry: string;
  eventId: string;
  group: string;
  max: number;
  timeoutS: number;
  /** Epoch ms: skip records written before (the shared topic's history can be huge). */
  sinceMs?: number;
  stopWhen?: (events: readonly Printed[]) => boolean;
}): Promise<SubscriberRun> {
  await requireDebianPython();
  const args = [SUBSCRIBER, '--asyncapi', o.asyncapi, '--registry', o.registry, '--event-id', o.eventId, '--group', o.group, '--max', String(o.max), '--timeout', String(o.timeoutS), ...(o.sinceMs === undefined ? [] : ['--since-ms', String(o.sinceMs)])];
  // Nothing of the project's environment leaks in (no KAFKA_BROKERS etc.): the document is the only source.
  const child = spawn(PYTHON, args, { env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', PYTHONIOENCODING: 'utf-8' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const events: Printed[] = [];
  let stderr = '';
  let stopping = false;
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on('line', (line) => {
    events.push(JSON.parse(line) as Printed);
    if (!stopping && o.stopWhen?.(events) === true) {
      stopping = true;
      child.kill('SIGTERM');
    }
  });
  // Backstop: the subscriber's own --timeout should always end it first.
  const killer = setTimeout(() => child.kill('SIGKILL'), (o.timeoutS + 30) * 1000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, events, stderr });
    });
  });
}

/** The fixture catalog with `prefix` in its topic names, in a new temp dir, with the package's Avro files. */
function fixtureCatalog(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ceg-t12-catalog-'));
  writeFileSync(join(dir, 'catalog.yaml'), readFileSync(TEMPLATE, 'utf8').replaceAll('__PREFIX__', prefix));
  for (const file of ['trading/price-loading-completed.avsc', 'trading/strategy-signal.avsc', 'trading/series-update-completed.avsc']) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(defaultCatalogDir(), file), join(dir, file));
  }
  return dir;
}

/** A published event and what the subscriber must print for it. */
interface Expected {
  readonly id: string;
  readonly correlationid: string;
  readonly position: Position;
  readonly key: string;
  readonly data: { [key: string]: JsonValue };
}

/** Publishes through the gateway's own publisher and waits for the broker's acknowledgement. */
async function publish(gw: TestGateway, eventId: string, data: { [key: string]: JsonValue }, expectedData: { [key: string]: JsonValue }, key: string): Promise<Expected> {
  const correlationid = uniqueName('t12-corr');
  const receipt = gw.gateway.publisher().publish(eventId, data, { time: EVENT_TIME, correlationid });
  if (receipt === undefined) throw new Error(`kind ${eventId} is not published by this catalog`);
  const position = await receipt.delivered;
  return { id: receipt.id, correlationid: receipt.correlationid, position, key, data: expectedData };
}

/** The price events of a run: optional fields set, omitted and explicitly null; non-ASCII text. */
async function publishPrices(gw: TestGateway): Promise<Expected[]> {
  const a = priceLoaded('EUR/USD', 'H4', '22031512');
  const b = { ...priceLoaded('XAU/USD', 'D1', '22031500'), firstBarAt: null, completedAt: '2022-03-15T23:59:59.007Z', barsLoaded: 0 };
  const c = { instrument: 'Ωmega/€', timeframe: 'M15', barKey: '---_M15__22031512', barsLoaded: 2147483647, completedAt: '1970-01-01T00:00:00.000Z' };
  return [
    await publish(gw, PRICE_LOADING_COMPLETED, { ...a, feed: 'oanda-v20' }, { ...a, feed: 'oanda-v20' }, 'EUR-USD_H4'),
    await publish(gw, PRICE_LOADING_COMPLETED, b, { ...b, feed: null }, 'XAU-USD_D1'),
    await publish(gw, PRICE_LOADING_COMPLETED, c, { ...c, firstBarAt: null, feed: null }, '-mega--_M15'),
  ];
}

/** Strategy signals: decimals (one given with fewer digits than the scale), a UUID, an enum, optional double and timestamp. */
async function publishSignals(gw: TestGateway): Promise<Expected[]> {
  const a = strategySignal('EUR/USD', 'H4');
  const full = { ...a, price: '1.1025', stopLoss: '-0.00001', confidence: 0.75, validUntil: '2022-03-15T16:00:00.500Z' };
  const b = { ...strategySignal('GBP/JPY', 'M15'), side: 'FLAT', price: '0' };
  return [
    await publish(gw, STRATEGY_SIGNAL, full, { ...full, price: '1.10250', stopLoss: '-0.00001' }, 'EUR-USD_H4'),
    await publish(gw, STRATEGY_SIGNAL, b, { ...b, price: '0.00000', stopLoss: null, confidence: null, validUntil: null }, 'GBP-JPY_M15'),
  ];
}

/** Asserts the printed line of every expected event, field by field. */
function expectPrinted(gw: TestGateway, events: readonly Printed[], expected: readonly Expected[], eventId: string, subject: string): void {
  const source = `urn:${gw.gateway.config.service}:${gw.gateway.config.instance}`;
  for (const e of expected) {
    const lines = events.filter((p) => p.id === e.id);
    expect(lines, `event ${e.id} printed once`).toHaveLength(1);
    expect(lines[0]).toEqual({
      id: e.id,
      type: eventId,
      source,
      time: EVENT_TIME.toISOString(),
      topic: e.position.topic,
      partition: e.position.partition,
      offset: Number(e.position.offset),
      key: e.key,
      correlationid: e.correlationid,
      subject,
      schemaId: gw.gateway.codec().binding(eventId)!.schema.id,
      data: e.data,
    });
  }
}

describe('T12: a Python subscriber binds by eventId from the AsyncAPI document alone', () => {
  const stack = stackEnv();
  const registry = stack.schemaRegistryUrl;

  it(`runs on Debian's ${PYTHON} with ${DEBIAN_PACKAGES.join(' and ')}`, async () => {
    await requireDebianPython();
  });

  describe('package catalog', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startGateway({ stack: true });
    });
    afterAll(async () => {
      await gw?.close();
    });

    it('finds the topic, selects PriceLoadingCompleted by ce_type and decodes it exactly', async () => {
      const since = Date.now() - 5_000;
      const prices = await publishPrices(gw);
      const signals = await publishSignals(gw);
      expect(new Set(prices.map((p) => p.position.topic))).toEqual(new Set([PRICE_TOPIC]));
      expect(signals.every((s) => s.position.topic !== PRICE_TOPIC)).toBe(true);

      // The topic is shared with other runs (its history holds their price events, possibly
      // millions from a benchmark): start at the records written since this test began, read
      // until ours are all printed, then stop the subscriber cleanly.
      const want = new Set(prices.map((p) => p.id));
      const r = await runSubscriber({
        asyncapi: `${gw.url}/asyncapi.json`,
        registry,
        eventId: PRICE_LOADING_COMPLETED,
        group: uniqueName('t12-py'),
        max: 1_000_000,
        timeoutS: 90,
        sinceMs: since,
        stopWhen: (events) => [...want].every((id) => events.some((e) => e.id === id)),
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`topic ${PRICE_TOPIC}, subject ${PRICE_TOPIC}-value`);
      expectPrinted(gw, r.events, prices, PRICE_LOADING_COMPLETED, `${PRICE_TOPIC}-value`);
      // Only the kind asked for, only from its topic, each event once.
      expect(r.events.every((e) => e.type === PRICE_LOADING_COMPLETED && e.topic === PRICE_TOPIC)).toBe(true);
      expect(r.events.filter((e) => signals.some((s) => s.id === e.id))).toEqual([]);
      expect(new Set(r.events.map((e) => `${e.source} ${e.id}`)).size).toBe(r.events.length);
    }, 150_000);
  });

  describe('fixture catalog: same eventIds, topics unique to this run, two kinds on one topic', () => {
    const prefix = uniqueName('t12fx');
    const market = `${prefix}.market`;
    let dir: string;
    let gw: TestGateway;
    let prices: Expected[];
    let signals: Expected[];
    let seriesId: string;

    beforeAll(async () => {
      dir = fixtureCatalog(prefix);
      gw = await startGateway({ stack: true, env: { CATALOG_DIR: dir } });
      expect(gw.gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)?.topic.name).toBe(market);
      // Interleave the two kinds that share the topic; one more kind on another topic.
      const p1 = await publishPrices(gw);
      signals = await publishSignals(gw);
      seriesId = (await publish(gw, SERIES_UPDATE_COMPLETED, seriesUpdated(), seriesUpdated(), 'EUR-USD_H4')).id;
      prices = p1;
    });
    afterAll(async () => {
      await gw?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('prints exactly the PriceLoadingCompleted events from the fixture topic and exits after --max', async () => {
      const r = await runSubscriber({ asyncapi: `${gw.url}/asyncapi.json`, registry, eventId: PRICE_LOADING_COMPLETED, group: uniqueName('t12-py'), max: prices.length, timeoutS: 60 });
      expect(r.code, r.stderr).toBe(0);
      const subject = `${market}-caishen.trading.PriceLoadingCompleted`;
      expect(gw.gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)?.subject).toBe(subject);
      expect(r.stderr).toContain(`topic ${market}, subject ${subject}`);
      expect(r.events).toHaveLength(prices.length);
      expectPrinted(gw, r.events, prices, PRICE_LOADING_COMPLETED, subject);
    }, 120_000);

    it('decodes the other kind on the same topic (decimals, UUID, enum, optional double and timestamp)', async () => {
      const r = await runSubscriber({ asyncapi: `${gw.url}/asyncapi.json`, registry, eventId: STRATEGY_SIGNAL, group: uniqueName('t12-py'), max: signals.length, timeoutS: 60 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.events).toHaveLength(signals.length);
      expectPrinted(gw, r.events, signals, STRATEGY_SIGNAL, `${market}-caishen.trading.StrategySignal`);
    }, 120_000);

    it('skips the other kind: asked for one event more than was published, it prints only ours and times out (exit 3)', async () => {
      const r = await runSubscriber({ asyncapi: `${gw.url}/asyncapi.json`, registry, eventId: PRICE_LOADING_COMPLETED, group: uniqueName('t12-py'), max: prices.length + 1, timeoutS: 15 });
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(`timeout after 15.0s: ${prices.length} of ${prices.length + 1} events`);
      expect(r.events.map((e) => e.id).sort()).toEqual(prices.map((p) => p.id).sort());
      expect(r.events.some((e) => e.id === seriesId || signals.some((s) => s.id === e.id))).toBe(false);
    }, 120_000);

    it('an eventId the document does not describe is a contract error (exit 2), not a silent wait', async () => {
      const r = await runSubscriber({ asyncapi: `${gw.url}/asyncapi.json`, registry, eventId: '00000000-0000-4000-8000-000000000000', group: uniqueName('t12-py'), max: 1, timeoutS: 30 });
      expect(r.code).toBe(2);
      expect(r.events).toEqual([]);
      expect(r.stderr).toContain('contract error: no message for eventId 00000000-0000-4000-8000-000000000000');
    }, 60_000);
  });
});
