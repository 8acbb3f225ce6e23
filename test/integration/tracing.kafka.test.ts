/**
 * Issue 15 "Tracing" / "Done when": a trace started by an HTTP `POST /events` (the partner's W3C
 * `traceparent` header) reaches the webhook call of a push subscription and a handler with the
 * same trace id, through the Kafka record headers, with OpenTelemetry spans after the messaging
 * semantic conventions: producer → consumer (one per subscription) → client (the webhook call).
 * A gateway on the real stack, spans caught by the SDK's in-memory exporter.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startSink } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { currentHandling } from '../../src/bus/correlation/index.js';
import { loadConfig } from '../../src/config/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import { createLogger } from '../../src/observability/index.js';

const catalog = catalogWithOwnTopics(uniqueName('trace'));
const exporter = new InMemorySpanExporter();
const handled = new Map<string, { handling?: string; attribute?: unknown }>();
let gateway: Gateway;
let url: string;
let sink: TestSink;
let group: string;

beforeAll(async () => {
  const s = stackEnv();
  sink = await startSink();
  const config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CATALOG_DIR: catalog.dir,
    SUBSCRIPTIONS_TOPIC: uniqueName('trace-defs'), SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'), WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  });
  gateway = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }), { spanExporter: exporter });
  url = `http://127.0.0.1:${(await gateway.listen()).port}`;
  await gateway.ready;
  await gateway.subscriptionsLoaded();
  await gateway.subscribe({
    subscription: uniqueName('trace-handler'),
    kinds: [PRICE_LOADING_COMPLETED],
    retry: retryPolicy({ maxAttempts: 2, initialDelayMs: 10, factor: 1, maxDelayMs: 10, jitter: 0 }),
    handler: (event) => {
      handled.set(event.attributes.id, { ...(currentHandling()?.traceparent === undefined ? {} : { handling: currentHandling()!.traceparent }), attribute: event.attributes.traceparent });
      return Promise.resolve();
    },
  });
  const name = uniqueName('trace-push').replace(/\./g, '-');
  const res = await fetch(`${url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: sink.url } }) });
  expect(res.status, await res.clone().text()).toBe(201);
  group = ((await res.json()) as { group: string }).group;
}, 120_000);
afterAll(async () => {
  await gateway?.close();
  await sink?.close();
  catalog.cleanup();
}, 60_000);

const post = (id: string, traceparent?: string): Promise<Response> =>
  fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json', ...(traceparent === undefined ? {} : { traceparent }) }, body: JSON.stringify(structuredPriceEvent({ id }, priceLoaded('EUR/USD', 'M1'))) });

const deliveredId = (r: { body: Buffer; headers: Record<string, unknown> }): string | undefined => (typeof r.headers['ce-id'] === 'string' ? r.headers['ce-id'] : undefined);

describe('a trace from POST /events to the webhook call and the handler (issue 15)', () => {
  it('keeps one trace id: producer → consumer spans → webhook client span; traceparent in the Kafka headers and on the webhook call', async () => {
    // Both subscriptions start at the latest offset: probe until each has delivered one event.
    await waitFor('both subscriptions delivering', async () => {
      const id = `probe-${randomUUID()}`;
      expect((await post(id)).status).toBe(202);
      await new Promise((r) => setTimeout(r, 300));
      return sink.deliveries().some((d) => deliveredId(d) !== undefined) && handled.size > 0;
    }, 60_000, 0);
    exporter.reset();
    const traceId = randomBytes(16).toString('hex');
    const partnerSpan = randomBytes(8).toString('hex');
    const id = `traced-${randomUUID()}`;
    const answer = await post(id, `00-${traceId}-${partnerSpan}-01`);
    expect(answer.status).toBe(202);
    const delivery = await waitFor('the webhook call', () => sink.deliveries().find((d) => deliveredId(d) === id), 30_000);
    const onHandler = await waitFor('the handler call', () => handled.get(id), 30_000);

    // The webhook call and the handler run in the same trace.
    const webhookTrace = String(delivery.headers.traceparent);
    expect(webhookTrace).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(onHandler.handling).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    // The event on Kafka carries the producer span's context (its ce_traceparent attribute).
    expect(onHandler.attribute).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    const spans = await waitFor('the spans ended', () => {
      const all = exporter.getFinishedSpans().filter((sp) => sp.spanContext().traceId === traceId);
      return all.length >= 4 ? all : undefined;
    }, 10_000);
    const topic = gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)!.topic.name;
    const producer = spans.find((sp) => sp.kind === SpanKind.PRODUCER)!;
    expect(producer.name).toBe(`send ${topic}`);
    expect(producer.attributes['messaging.system']).toBe('kafka');
    expect(producer.attributes['messaging.destination.name']).toBe(topic);
    expect(producer.parentSpanContext?.spanId).toBe(partnerSpan);
    expect(onHandler.attribute).toBe(`00-${traceId}-${producer.spanContext().spanId}-01`);
    const consumers = spans.filter((sp) => sp.kind === SpanKind.CONSUMER);
    expect(consumers.map((c) => c.name)).toEqual([`process ${topic}`, `process ${topic}`]);
    for (const c of consumers) expect(c.parentSpanContext?.spanId).toBe(producer.spanContext().spanId);
    const pushConsumer = consumers.find((c) => c.attributes['messaging.consumer.group.name'] === group)!;
    expect(pushConsumer).toBeDefined();
    const client = spans.find((sp) => sp.kind === SpanKind.CLIENT)!;
    expect(client.parentSpanContext?.spanId).toBe(pushConsumer.spanContext().spanId);
    expect(client.attributes['http.response.status_code']).toBe(200);
    expect(webhookTrace).toBe(`00-${traceId}-${client.spanContext().spanId}-01`);
    const handlerConsumer = consumers.find((c) => c !== pushConsumer)!;
    expect(onHandler.handling).toBe(`00-${traceId}-${handlerConsumer.spanContext().spanId}-01`);
  }, 120_000);
});
