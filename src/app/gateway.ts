/**
 * Composition root: picks the Kafka or in-memory transport and the Confluent-REST or in-memory
 * registry from the configuration, wires codec, publisher and HTTP, and owns start-up and the
 * shutdown order. The HTTP server listens at once; `POST /events` and `/readyz` answer 503 until
 * the topics exist and the schemas are registered (retried with backoff while the broker or
 * registry is unreachable).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage, isGatewayError } from '../core/errors.js';
import { retryPolicy } from '../core/retry.js';
import { retrying } from '../core/retrying.js';
import type { Catalog } from '../catalog/index.js';
import { loadCatalog, registerCatalog } from '../catalog/index.js';
import { EventCodec } from '../codec/event/index.js';
import type { Config } from '../config/index.js';
import { Publisher, RecordPublisher } from '../bus/publisher/index.js';
import { subscribe } from '../bus/subscriber/index.js';
import type { Subscription } from '../bus/subscriber/index.js';
import { untypedSubscribeOptions } from '../bus/bus.js';
import type { BusSubscribeOptions } from '../bus/bus.js';
import { createApiApp } from '../http/api/app.js';
import type { IngressDeps } from '../http/ingress/handler.js';
import { createHttpServer } from '../http/server.js';
import type { Logger } from '../observability/index.js';
import { createConfluentRegistry, createMemoryRegistry } from '../registry/index.js';
import type { SchemaRegistry } from '../registry/port.js';
import { createKafkaTransport, createMemoryTransport, createPlatformaticTransport } from '../transport/index.js';
import type { Transport } from '../transport/port.js';
import { createMetrics } from './metrics.js';

export interface Gateway {
  readonly config: Config;
  readonly catalog: Catalog;
  readonly transport: Transport;
  readonly registry: SchemaRegistry;
  /** Resolves once topics exist and schemas are registered. */
  readonly ready: Promise<void>;
  /** Available after `ready`. */
  codec(): EventCodec;
  publisher(): Publisher;
  records(): RecordPublisher;
  /** Subscribes a handler under a durable subscription name (after `ready`); typed as `Bus.subscribe`. */
  subscribe<K extends string>(o: BusSubscribeOptions<K>): Promise<Subscription>;
  /** Starts the HTTP server; resolves with the bound address. */
  listen(): Promise<AddressInfo>;
  close(): Promise<void>;
}

const bootstrapRetry = retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 250, factor: 2, maxDelayMs: 5000, jitter: 0.2 });
const publishRetry = retryPolicy({ maxAttempts: 5, initialDelayMs: 100, factor: 2, maxDelayMs: 2000, jitter: 0.2 });
const defaultHandlerRetry = retryPolicy({ maxAttempts: 5, initialDelayMs: 200, factor: 2, maxDelayMs: 10_000, jitter: 0.5 });

/** Adapters to use instead of the ones the configuration selects (tests, embedding several members in one process). */
export interface GatewayOverrides {
  readonly transport?: Transport;
  readonly registry?: SchemaRegistry;
  /**
   * Read-only use (`tail`, `trace`, `subscribe`): start-up creates no topic and registers no
   * schema, so read-only Kafka and registry credentials suffice; the codec decodes into the
   * catalog's schemas and the gateway cannot publish (publisher() and records() throw).
   */
  readonly readOnly?: boolean;
}

export function createGateway(config: Config, log: Logger, overrides: GatewayOverrides = {}): Gateway {
  const catalog = loadCatalog(config.catalogDir);
  const transport: Transport =
    overrides.transport ??
    (config.kafka
      ? (config.kafka.client === 'platformatic' ? createPlatformaticTransport : createKafkaTransport)({ clientId: config.kafka.clientId, brokers: config.kafka.brokers, ssl: config.kafka.ssl, sasl: config.kafka.sasl, logger: log.child({ component: 'kafka', client: config.kafka.client }) })
      : createMemoryTransport());
  const registry: SchemaRegistry =
    overrides.registry ??
    (config.registry
      ? createConfluentRegistry({ url: config.registry.url, username: config.registry.username, password: config.registry.password })
      : createMemoryRegistry());
  if (!config.kafka && overrides.transport === undefined) log.warn('KAFKA_BROKERS is not set: using the in-memory transport; NOTHING IS DURABLE (events are lost when the process ends)');
  if (!config.registry && overrides.registry === undefined) log.warn('SCHEMA_REGISTRY_URL is not set: using the in-memory schema registry; schema ids are not durable');

  let codec: EventCodec | undefined;
  let records: RecordPublisher | undefined;
  let publisher: Publisher | undefined;
  let ingress: IngressDeps | undefined;
  let server: Server | undefined;
  const closing = new AbortController();
  const subscriptions = new Set<Subscription>();
  /** Subscriptions whose consumer stopped on a failure: reported by /readyz and metrics, never idle silently. */
  const failedSubscriptions = new Map<string, string>();

  /** Creates the topics, registers the schemas and builds what serves events; one attempt. */
  async function bootstrapOnce(): Promise<void> {
    if (overrides.readOnly === true) {
      codec = new EventCodec(catalog, registry, new Map());
      log.debug('read-only: no topic created, no schema registered');
      return;
    }
    await transport.ensureTopics(catalog.topics);
    const latest = await registerCatalog(registry, catalog);
    const fresh = new EventCodec(catalog, registry, latest);
    await fresh.loadVersions();
    // Each topic's max.message.bytes, read once: produce calls are cut by it and a record it
    // cannot take is refused at ingress with the limit named.
    const limits = new Map<string, number>();
    for (const t of catalog.topics) limits.set(t.name, await transport.maxMessageBytes(t.name));
    const maxMessageBytes = (topic: string): number | undefined => limits.get(topic);
    codec = fresh;
    records = new RecordPublisher(transport, { queueCapacity: config.publishQueueCapacity, maxBatch: 500, maxMessageBytes, retry: publishRetry }, log.child({ component: 'publisher' }));
    publisher = new Publisher(codec, records, { service: config.service, instance: config.instance, dataschemaBase: config.dataschemaBase });
    ingress = {
      codec,
      publisher: records,
      log: log.child({ component: 'ingress' }),
      options: { ...config.ingress, dataschemaBase: config.dataschemaBase, maxMessageBytes },
    };
    log.info({ topics: catalog.topics.length, kinds: catalog.kinds.length }, 'topics and schemas ready');
  }

  async function bootstrap(): Promise<void> {
    try {
      // Only what the adapters mark retriable (broker or registry unreachable) is waited out. A
      // schema the registry refuses (incompatible, invalid), a bad topic or an unknown error will
      // not get better by waiting: start-up fails with the reason instead of retrying forever.
      await retrying(bootstrapOnce, {
        policy: bootstrapRetry,
        maxAttempts: Infinity,
        signal: closing.signal,
        onRetry: ({ attempt, error }) => log.warn({ attempt, err: errorMessage(error) }, 'bootstrap failed (broker or registry unreachable), retrying'),
      });
    } catch (err) {
      if (!closing.signal.aborted) log.error({ code: isGatewayError(err) ? err.code : undefined, err: errorMessage(err) }, 'bootstrap failed for good: fix the catalog or the registry, then restart');
      throw err;
    }
  }

  const ready = bootstrap();
  ready.catch((err: unknown) => {
    if (!closing.signal.aborted) log.error({ err: errorMessage(err) }, 'the gateway cannot serve events (see the error above)');
  });

  const metrics = createMetrics({
    publisher: () => records?.stats(),
    ready: () => ingress !== undefined,
    subscriptions: () => [
      ...[...subscriptions].map((s) => ({ name: s.name, up: true, stats: s.stats() })),
      ...[...failedSubscriptions.keys()].map((name) => ({ name, up: false, stats: undefined })),
    ],
  });

  async function readiness(): Promise<{ ready: boolean; checks: Record<string, boolean>; durable: boolean }> {
    const timeout = <T>(p: Promise<T>, fallback: T): Promise<T> =>
      Promise.race([p.catch(() => fallback), new Promise<T>((r) => setTimeout(() => r(fallback), config.readinessTimeoutMs).unref())]);
    const [broker, schemaRegistry] = await Promise.all([timeout(transport.isHealthy(), false), timeout(registry.isHealthy(), false)]);
    const bootstrapped = ingress !== undefined;
    const subscriptionsOk = failedSubscriptions.size === 0;
    return {
      ready: broker && schemaRegistry && bootstrapped && subscriptionsOk,
      checks: { broker, schemaRegistry, bootstrapped, subscriptions: subscriptionsOk },
      // The embedded default is loud here too: nothing is durable on the in-memory adapters.
      durable: transport.kind === 'kafka' && config.registry !== undefined,
    };
  }

  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not available before the gateway is ready (await gateway.ready)`);
    return v;
  };

  return {
    config,
    catalog,
    transport,
    registry,
    ready,
    codec: () => need(codec, 'codec'),
    publisher: () => need(publisher, 'publisher'),
    records: () => need(records, 'records'),
    async subscribe<K extends string>(typed: BusSubscribeOptions<K>) {
      const o = untypedSubscribeOptions(typed);
      await ready;
      // The subscriber names the subscription in each line itself (no child binding: no duplicate key).
      const sub = await subscribe(transport, need(codec, 'codec'), log, { ...o, retry: o.retry ?? defaultHandlerRetry, instanceId: o.instanceId ?? config.instance });
      subscriptions.add(sub);
      failedSubscriptions.delete(sub.name);
      sub.done.then(
        () => subscriptions.delete(sub),
        (err: unknown) => {
          subscriptions.delete(sub);
          failedSubscriptions.set(sub.name, errorMessage(err));
          log.error({ subscription: sub.name, err: errorMessage(err) }, 'subscription stopped on a failure');
        },
      );
      return sub;
    },
    listen() {
      server = createHttpServer({
        ingress: () => ingress,
        api: createApiApp({
          catalog,
          registry,
          retryAfterS: config.ingress.retryAfterS,
          docs: { kafkaBrokers: config.kafka?.brokers, registryUrl: config.registry?.url, publicBaseUrl: config.publicBaseUrl, dataschemaBase: config.dataschemaBase },
        }),
        ready: readiness,
        metrics: metrics.render,
        retryAfterS: config.ingress.retryAfterS,
        http: { ...config.http, maxBodyBytes: config.ingress.maxBodyBytes },
        log: log.child({ component: 'http' }),
      });
      const s = server;
      return new Promise((resolve, reject) => {
        s.once('error', reject);
        s.listen(config.http.port, config.http.host, () => resolve(s.address() as AddressInfo));
      });
    },
    async close() {
      closing.abort(new Error('gateway closing'));
      await ready.catch(() => undefined);
      if (server) {
        const s = server;
        await new Promise<void>((r) => s.close(() => r()));
        s.closeAllConnections();
      }
      await Promise.allSettled([...subscriptions].map((s) => s.unsubscribe()));
      await records?.close();
      // An injected transport belongs to the caller (it may serve other members too).
      if (overrides.transport === undefined) await transport.close();
    },
  };
}
