/**
 * Issue 15 "Done when": under load, `GET /metrics` of a gateway on the real stack has a sample of
 * every family the issue names (HTTP, ingress, produce, queue depth, subscription lag, delivery,
 * retries, dead letters, process), and the subscription's lag falls to 0 once the load stops.
 * The relay's own `/metrics` (the `ce-gateway outbox relay` process) shows its backlog: rows for
 * a topic that does not exist yet stay in the outbox (counted), and are gone once it exists.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from '../helpers/ports.js';
import { retryPolicy } from '../../src/core/retry.js';
import { GatewayError } from '../../src/core/errors.js';
import type { Subscription } from '../../src/bus/subscriber/index.js';
import { OutboxWriter, ensureOutboxSchema } from '../../src/bus/outbox/index.js';
import { registerCatalog } from '../../src/catalog/index.js';
import { EventCodec } from '../../src/codec/event/index.js';
import { createConfluentRegistry } from '../../src/registry/index.js';
import { createKafkaTransport } from '../../src/transport/index.js';
import { IDENTITY, KIND, runCatalog, runName, seriesUpdate } from './outbox/fixture.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

/** Samples of the text format: `name{labels} value` → [{ name, labels, value }]. */
function parseMetrics(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const out: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

async function scrape(url: string): Promise<ReturnType<typeof parseMetrics>> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

const catalog = catalogWithOwnTopics(uniqueName('metrics'));
const subscription = uniqueName('metrics-sub');
let gw: TestGateway;
let sub: Subscription;

beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir, SUBSCRIPTIONS_TOPIC: uniqueName('metrics-defs') } });
  sub = await gw.gateway.subscribe({
    subscription,
    kinds: [PRICE_LOADING_COMPLETED],
    startFrom: 'latest',
    retry: retryPolicy({ maxAttempts: 2, initialDelayMs: 10, factor: 1, maxDelayMs: 10, jitter: 0 }),
    handler: async (event) => {
      const instrument = (event.data?.value as { instrument?: string } | undefined)?.instrument ?? '';
      if (instrument.startsWith('BAD')) throw new Error('handler refuses BAD instruments (retried, then dead-lettered)');
      if (instrument.startsWith('POISON')) throw new GatewayError('CEG_INVALID_DATA', 'poison', { retriable: false });
      await new Promise((r) => setTimeout(r, 1));
    },
  });
}, 120_000);
afterAll(async () => {
  await sub?.unsubscribe();
  await gw?.close();
  catalog.cleanup();
}, 60_000);

describe('GET /metrics under load (issue 15)', () => {
  it('has a sample of every named family; the subscription lag falls to 0 after the load', async () => {
    const post = (body: unknown[]): Promise<Response> => fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(body) });
    // Load: 40 batches of 10 (4 at a time), two events that fail in the handler, one refused request.
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        Array.from({ length: 4 }, (_, b) => post(Array.from({ length: 10 }, (_, i) => structuredPriceEvent({}, priceLoaded(`L${round}${b}/USD`, 'M1', String(22031500 + i)))))),
      );
      for (const a of answers) expect(a.status).toBe(202);
    }
    expect((await post([structuredPriceEvent({}, priceLoaded('BAD/USD')), structuredPriceEvent({}, priceLoaded('POISON/USD'))])).status).toBe(202);
    expect((await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' })).status).toBe(415);
    expect((await fetch(`${gw.url}/catalog`)).status).toBe(200);

    // Once the load stopped, the group commits everything: lag 0 on every partition it reads.
    const samples = await waitFor(
      'the subscription lag to fall to 0 and its dead letter to be counted',
      async () => {
        const s = await scrape(gw.url);
        const lag = s.filter((x) => x.name === 'ce_gateway_subscription_lag' && x.labels.subscription === subscription);
        const dl = s.find((x) => x.name === 'ce_gateway_dead_letters_total' && x.labels.subscription === subscription);
        return lag.length > 0 && lag.every((x) => x.value === 0) && (dl?.value ?? 0) >= 2 ? s : undefined;
      },
      30_000,
      250,
    );
    const has = (name: string, labels: Record<string, string> = {}): number => {
      const found = samples.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
      expect(found.length, `${name} ${JSON.stringify(labels)}`).toBeGreaterThan(0);
      return found.reduce((n, x) => n + x.value, 0);
    };
    expect(has('ce_gateway_http_requests_total', { route: '/events', method: 'POST', status: '202' })).toBe(41);
    expect(has('ce_gateway_http_requests_total', { route: '/events', method: 'POST', status: '415' })).toBe(1);
    expect(has('ce_gateway_http_requests_total', { route: '/catalog', method: 'GET', status: '200' })).toBe(1);
    expect(has('ce_gateway_http_request_duration_seconds_count', { route: '/events' })).toBe(42);
    expect(has('ce_gateway_http_request_duration_seconds_bucket', { route: '/events', le: '+Inf' })).toBe(42);
    expect(has('ce_gateway_ingress_events_total', { kind: 'PriceLoadingCompleted', outcome: 'accepted' })).toBe(402);
    expect(has('ce_gateway_ingress_bytes_total', { kind: 'PriceLoadingCompleted' })).toBeGreaterThan(402 * 100);
    expect(has('ce_gateway_ingress_refusals_total', { code: 'CEG_UNSUPPORTED_MEDIA_TYPE' })).toBe(1);
    expect(has('ce_gateway_produce_duration_seconds_count')).toBeGreaterThan(0);
    expect(has('ce_gateway_produce_errors_total', { code: 'CEG_BROKER_UNAVAILABLE' })).toBe(0);
    expect(has('ce_gateway_publish_queue_records')).toBe(0);
    expect(has('ce_gateway_subscription_lag', { subscription, partition: '0' })).toBe(0);
    expect(has('ce_gateway_delivery_duration_seconds_count', { subscription })).toBeGreaterThanOrEqual(402);
    expect(has('ce_gateway_retries_total', { subscription })).toBeGreaterThanOrEqual(1);
    expect(has('ce_gateway_dead_letters_total', { subscription })).toBe(2);
    expect(has('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(has('nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    // Bounded labels: no event id anywhere in the text.
    expect(samples.some((x) => Object.values(x.labels).some((v) => /^[0-9a-f-]{36}$/.test(v) && v !== PRICE_LOADING_COMPLETED))).toBe(false);
    // The typed accessor gives the same figures (for GET /subscriptions/{name}/status).
    const figures = (await gw.gateway.subscriptionFigures({ lag: true })).find((f) => f.name === subscription)!;
    expect(figures.deadLettered).toBe(2);
    expect(figures.lag?.every((l) => l.lag === 0)).toBe(true);
  }, 90_000);
});

describe('the outbox relay serves its own /metrics and /healthz (issue 15)', () => {
  it('shows the backlog while rows cannot be published and 0 once they are', async () => {
    const s = stackEnv();
    const run = runName('obsrelay');
    const cat = runCatalog(run, 1);
    const registry = createConfluentRegistry({ url: s.schemaRegistryUrl, timeoutMs: 10_000 });
    const codec = new EventCodec(cat, registry, await registerCatalog(registry, cat));
    const pool = new pg.Pool({ connectionString: s.databaseUrl, max: 2 });
    pool.on('error', () => undefined);
    const table = `${run}.outbox`;
    const transport = createKafkaTransport({ brokers: s.kafkaBrokers, clientId: run.replace(/_/g, '-') });
    let child: ChildProcess | undefined;
    try {
      const c = await pool.connect();
      try {
        await ensureOutboxSchema(c, { table });
      } finally {
        c.release();
      }
      // Rows for a topic that does not exist yet: the relay cannot publish them (it retries).
      const writer = new OutboxWriter({ codec, identity: IDENTITY, table });
      for (let i = 0; i < 3; i++) await writer.write(pool as unknown as pg.ClientBase, KIND, seriesUpdate('EUR/USD', i));
      const port = await freePort();
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: s.databaseUrl, OUTBOX_TABLE: table, OUTBOX_POLL_INTERVAL_MS: '200', LOG_LEVEL: 'warn', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: run.replace(/_/g, '-') },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      await waitFor('the relay to serve /healthz', async () => child!.exitCode === null && (await fetch(`${url}/healthz`).then((r) => r.status === 200, () => false)), 60_000, 200).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay stderr: ${stderr}`);
      });
      const backlog = await waitFor('a backlog of 3 rows, the oldest over 0 s old', async () => {
        const m = await scrape(url);
        const rows = m.find((x) => x.name === 'ce_gateway_outbox_backlog_rows')?.value;
        const age = m.find((x) => x.name === 'ce_gateway_outbox_oldest_row_age_seconds')?.value;
        return rows === 3 && age !== undefined && age > 0 ? { rows, age, m } : undefined;
      }, 20_000, 200);
      expect(backlog.m.some((x) => x.name === 'process_resident_memory_bytes')).toBe(true);
      // Its produce calls fail (no topic yet): counted, and the key is held back on that topic.
      await waitFor('failed produce calls counted and the key held', async () => {
        const m = await scrape(url);
        return (m.find((x) => x.name === 'ce_gateway_outbox_publish_failures_total')?.value ?? 0) > 0 && m.find((x) => x.name === 'ce_gateway_outbox_held_keys')?.value === 1;
      }, 20_000, 200);
      // The topic appears: the relay's next attempt publishes the rows; the backlog empties.
      await transport.ensureTopics(cat.topics);
      await waitFor('the backlog to empty', async () => {
        const m = await scrape(url);
        return m.find((x) => x.name === 'ce_gateway_outbox_backlog_rows')?.value === 0 && m.find((x) => x.name === 'ce_gateway_outbox_oldest_row_age_seconds')?.value === 0;
      }, 30_000, 250);
      const ends = await transport.endOffsets(cat.topics[0]!.name);
      expect(ends.reduce((n, e) => n + e.offset, 0n)).toBe(3n);
      const after = await scrape(url);
      expect(after.find((x) => x.name === 'ce_gateway_outbox_published_total')?.value).toBe(3);
      expect(after.find((x) => x.name === 'ce_gateway_outbox_too_large_rows_total')?.value).toBe(0);
      expect(after.find((x) => x.name === 'ce_gateway_outbox_held_keys')?.value).toBe(0);
    } finally {
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await pool.query(`DROP SCHEMA IF EXISTS "${run}" CASCADE`).catch(() => undefined);
      await pool.end();
      await transport.close();
    }
  }, 120_000);
});
