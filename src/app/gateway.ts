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
import { HttpAuth, loadPartners } from '../http/auth/index.js';
import type { Partner } from '../http/auth/index.js';
import { GatewayError } from '../core/errors.js';
import { isLoopbackHost } from '../core/loopback.js';
import type { IngressDeps } from '../http/ingress/handler.js';
import { createHttpServer } from '../http/server.js';
import type { Logger } from '../observability/index.js';
import { createConfluentRegistry, createMemoryRegistry } from '../registry/index.js';
import type { SchemaRegistry } from '../registry/port.js';
import { createKafkaTransport, createMemoryTransport, createPlatformaticTransport } from '../transport/index.js';
import type { Transport } from '../transport/port.js';
import { createMetrics } from './metrics.js';
import { PullService, Reconciler, SubscriptionService, SubscriptionStore, cursorSigner, deriveCursorKey, developmentKey, parseSecretsKey, secretBox, secretsKeyDecision, secretsKeyMissing } from '../bus/subscriptions/index.js';
import type { CursorSigner, SecretBox, StoredSubscription } from '../bus/subscriptions/index.js';
import { parseAllowList, targetChecker } from '../connectors/sinks/webhook/index.js';
import { fromStored, runtimeSinkFactory } from '../connectors/subscriptions/runtime.js';
import type { RuntimeSubscription } from '../connectors/subscriptions/runtime.js';

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
  /**
   * Starts the HTTP server and, once the gateway is ready, the subscription resources: the
   * definitions store, `/subscriptions`, and a member of every active subscription's group on this
   * instance. Resolves with the bound address.
   * Errors: CEG_INVALID_OPTIONS for a bad WEBHOOK_ALLOWED_HOSTS or key. A definitions topic holding
   *   push subscriptions on a gateway without a key (Kafka, bound beyond loopback) rejects
   *   `subscriptionsLoaded()` with CEG_SECRETS_KEY_MISSING (`serve` exits 2).
   */
  listen(): Promise<AddressInfo>;
  /** Subscriptions declared in connector files (`kind: subscription`): run and listed like the stored ones. Call before listen(). */
  declareSubscriptions(defs: readonly RuntimeSubscription[]): void;
  /** The subscription service once loaded (after listen() and ready). */
  subscriptionService(): SubscriptionService | undefined;
  /** Resolves once the subscription resources are loaded and the first reconcile pass ran (after listen()). */
  subscriptionsLoaded(): Promise<void>;
  close(): Promise<void>;
}

const bootstrapRetry = retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 250, factor: 2, maxDelayMs: 5000, jitter: 0.2 });
const publishRetry = retryPolicy({ maxAttempts: 5, initialDelayMs: 100, factor: 2, maxDelayMs: 2000, jitter: 0.2 });
/** Upper bound of one console chain read, ms (a chain the console cannot read in this long says it may be incomplete). */
const CONSOLE_TRACE_TIMEOUT_MS = 10_000;
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
  let declared: readonly RuntimeSubscription[] = [];
  let store: SubscriptionStore | undefined;
  let service: SubscriptionService | undefined;
  let pullService: PullService | undefined;
  let reconciler: Reconciler<RuntimeSubscription> | undefined;
  let loaded: Promise<void> | undefined;
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

  let httpAuthInUse: HttpAuth | undefined;
  const metrics = createMetrics({
    auth: () => httpAuthInUse?.stats(),
    publisher: () => records?.stats(),
    ready: () => ingress !== undefined,
    subscriptions: () => [
      ...[...subscriptions].map((s) => ({ name: s.name, up: true, stats: s.stats(), partitions: s.assignments().length })),
      ...[...failedSubscriptions.keys()].map((name) => ({ name, up: false, stats: undefined, partitions: 0 })),
    ],
    pull: () => pullService?.stats() ?? new Map(),
  });

  async function readiness(): Promise<{ ready: boolean; checks: Record<string, boolean>; durable: boolean }> {
    const timeout = <T>(p: Promise<T>, fallback: T): Promise<T> =>
      Promise.race([p.catch(() => fallback), new Promise<T>((r) => setTimeout(() => r(fallback), config.readinessTimeoutMs).unref())]);
    const [broker, schemaRegistry] = await Promise.all([timeout(transport.isHealthy(), false), timeout(registry.isHealthy(), false)]);
    const bootstrapped = ingress !== undefined;
    const subscriptionsOk = failedSubscriptions.size === 0;
    // A listening gateway also serves the subscription resources: ready once they are loaded.
    const definitions = loaded === undefined || service !== undefined;
    return {
      ready: broker && schemaRegistry && bootstrapped && subscriptionsOk && definitions,
      checks: { broker, schemaRegistry, bootstrapped, subscriptions: subscriptionsOk, ...(loaded === undefined ? {} : { subscriptionDefinitions: definitions }) },
      // The embedded default is loud here too: nothing is durable on the in-memory adapters.
      durable: transport.kind === 'kafka' && config.registry !== undefined,
    };
  }

  /** The key sealing subscription secrets (README "Subscriptions"): configured, the development key where nothing leaves the machine, or none. */
  function secretsBox(): SecretBox | undefined {
    const k = config.subscriptions.secretsKey;
    switch (secretsKeyDecision(k, transport.kind, config.http.host)) {
      case 'configured':
        return secretBox(parseSecretsKey(k!));
      case 'development':
        log.warn(
          { transport: transport.kind, host: config.http.host },
          'SUBSCRIPTION_SECRETS_KEY is not set: webhook secrets and sink headers are sealed with a WELL-KNOWN DEVELOPMENT KEY (allowed only on the in-memory transport or a loopback-bound gateway); set SUBSCRIPTION_SECRETS_KEY before binding beyond loopback',
        );
        return secretBox(developmentKey());
      case 'absent':
        log.warn({ host: config.http.host }, 'SUBSCRIPTION_SECRETS_KEY is not set: push subscriptions cannot be created (503), and the gateway refuses to start when its definitions topic holds some');
        return undefined;
    }
  }

  /**
   * Who may call the HTTP API (issue 11): the partners of PARTNERS_FILE, or nobody checked — then
   * only on a loopback address, said loudly.
   * Errors: CEG_INVALID_OPTIONS (a bad partners file; no authentication on an address beyond loopback).
   */
  function httpAuth(): HttpAuth {
    const a = config.auth;
    let partners: readonly Partner[] | undefined;
    if (a.mode === 'partners' && a.partnersFile !== undefined) {
      partners = loadPartners(a.partnersFile, catalog, process.env);
      log.info({ partners: partners.length, metrics: a.metrics, oidc: a.oidc === undefined ? false : { issuer: a.oidc.issuer, claim: a.oidc.partnerClaim } }, 'authentication: partners from PARTNERS_FILE');
    } else if (!isLoopbackHost(config.http.host)) {
      throw new GatewayError(
        'CEG_INVALID_OPTIONS',
        `refusing to serve without authentication on ${config.http.host}: set PARTNERS_FILE (partners and their API keys), or bind HOST to a loopback address (127.0.0.1) for local use`,
        { retriable: false, details: { field: 'HOST' } },
      );
    } else {
      log.warn({ host: config.http.host }, 'AUTHENTICATION IS OFF (AUTH=none or no PARTNERS_FILE): every caller may publish, subscribe, replay and redrive as the anonymous admin; allowed on a loopback address only — set PARTNERS_FILE before exposing the gateway');
    }
    return new HttpAuth({
      ...(partners === undefined ? {} : { partners }),
      catalog,
      metrics: a.metrics,
      requestsPerSecond: a.requestsPerSecond,
      eventsPerSecond: a.eventsPerSecond,
      failuresPerMinute: a.failuresPerMinute,
      audit: log.child({ component: 'audit' }),
      ...(partners === undefined || a.oidc === undefined ? {} : { oidc: a.oidc }),
    });
  }

  /**
   * The key signing pull cursors: derived (HKDF) from the subscription secrets key, so every
   * instance that shares that key shares this one; on the development key where that one applies;
   * none otherwise (pulls answer 503 CEG_SECRETS_KEY_MISSING). Spec: issue 9 ("signed").
   */
  function cursorKey(): CursorSigner | undefined {
    const k = config.subscriptions.secretsKey;
    switch (secretsKeyDecision(k, transport.kind, config.http.host)) {
      case 'configured':
        return cursorSigner(deriveCursorKey(parseSecretsKey(k!)));
      case 'development':
        return cursorSigner(deriveCursorKey(developmentKey()));
      case 'absent':
        return undefined;
    }
  }

  /** Loads the definitions and runs them; retried while the broker is unreachable. */
  async function startSubscriptions(box: SecretBox | undefined, allow: ReturnType<typeof parseAllowList>): Promise<void> {
    await ready;
    const slog = log.child({ component: 'subscriptions' });
    const s = new SubscriptionStore(transport, config.subscriptions.topic, slog);
    await retrying(() => s.start(), {
      policy: bootstrapRetry,
      maxAttempts: Infinity,
      signal: closing.signal,
      onRetry: ({ attempt, error }) => slog.warn({ attempt, err: errorMessage(error) }, 'loading the subscriptions failed, retrying'),
    });
    store = s;
    const sealed = [...s.all().values()].filter((st) => st.delivery.mode === 'push').length;
    if (box === undefined && sealed > 0) {
      throw secretsKeyMissing(`the definitions topic ${s.topic} holds ${sealed} push subscription(s) whose secrets are sealed, and this gateway (bound to ${config.http.host}, Kafka) has no key`);
    }
    const fileViews = new Map(declared.filter((d) => d.view !== undefined).map((d) => [d.group, d.view!] as const));
    const svc = new SubscriptionService({ store: s, box, catalog, transport, checkTarget: targetChecker(allow), declared: () => fileViews });
    const topicsOf = (kinds: readonly string[]): string[] => [...new Set(kinds.map((k) => (catalog.byEventId(k) ?? catalog.byName(k))?.topic.name).filter((t): t is string => t !== undefined))];
    const r = new Reconciler<RuntimeSubscription>(
      { subscribe: (o) => gatewayApi.subscribe(o), partitionCount: (t) => transport.partitionCount(t), topicsOf },
      runtimeSinkFactory({ log: slog, allow, origin: config.subscriptions.requestOrigin, codec: need(codec, 'codec') }),
      slog,
      (group, reason) => svc.setState(group, 'gone', reason),
    );
    // Opened once per stored generation: unchanged subscriptions keep their identity (no update).
    const cache = new Map<string, { readonly stored: StoredSubscription; readonly runtime: RuntimeSubscription }>();
    const desired = (all: ReadonlyMap<string, StoredSubscription>): Map<string, RuntimeSubscription> => {
      const out = new Map<string, RuntimeSubscription>();
      for (const d of declared) out.set(d.group, d);
      for (const [group, st] of all) {
        if (out.has(group)) continue; // a file declares it: the file wins
        if (st.delivery.mode === 'pull') continue; // served by requests, never by a group member (issue 9)
        let c = cache.get(group);
        if (c === undefined || c.stored !== st) {
          try {
            c = { stored: st, runtime: fromStored(st, svc.openSecrets(st)) };
            cache.set(group, c);
          } catch (err) {
            slog.error({ subscription: group, err: errorMessage(err) }, 'cannot open the secrets of a stored subscription: not run on this instance');
            continue;
          }
        }
        out.set(group, c.runtime);
      }
      for (const g of cache.keys()) if (!all.has(g)) cache.delete(g);
      return out;
    };
    s.onChange((all) => r.apply(desired(all)));
    r.apply(desired(s.all()));
    reconciler = r;
    pullService = new PullService({ subscription: (g) => s.get(g), catalog, codec: () => need(codec, 'codec'), transport, signer: cursorKey(), log: slog.child({ delivery: 'pull' }) });
    service = svc;
    await r.settled();
  }

  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not available before the gateway is ready (await gateway.ready)`);
    return v;
  };

  const gatewayApi: Gateway = {
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
    declareSubscriptions(defs) {
      declared = [...defs];
    },
    subscriptionService: () => service,
    subscriptionsLoaded: () => loaded ?? Promise.reject(new Error('listen() first')),
    async listen() {
      const auth = httpAuth();
      httpAuthInUse = auth;
      const box = secretsBox();
      const allow = parseAllowList(config.subscriptions.allowedHosts);
      loaded = startSubscriptions(box, allow);
      loaded.catch((err: unknown) => {
        if (!closing.signal.aborted) log.error({ err: errorMessage(err) }, 'the subscriptions could not be loaded');
      });
      server = createHttpServer({
        ingress: () => ingress,
        api: createApiApp({
          catalog,
          registry,
          retryAfterS: config.ingress.retryAfterS,
          docs: { kafkaBrokers: config.kafka?.brokers, registryUrl: config.registry?.url, publicBaseUrl: config.publicBaseUrl, dataschemaBase: config.dataschemaBase },
          subscriptions: () => service,
          metricsPublic: config.auth.metrics === 'public' || config.auth.mode === 'none',
          pull: () => (service === undefined ? undefined : pullService),
          log: log.child({ component: 'http' }),
          closing: closing.signal,
          console: { catalog, transport, codec: () => need(codec, 'codec'), subscriptions: () => service, traceTimeoutMs: CONSOLE_TRACE_TIMEOUT_MS, log: log.child({ component: 'console' }) },
        }),
        ready: readiness,
        metrics: metrics.render,
        retryAfterS: config.ingress.retryAfterS,
        http: { ...config.http, maxBodyBytes: config.ingress.maxBodyBytes },
        log: log.child({ component: 'http' }),
        auth,
        ...(config.http.tls === undefined ? {} : { tls: config.http.tls }),
      });
      const s = server;
      return await new Promise((resolve, reject) => {
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
      await reconciler?.stop();
      await store?.stop();
      await Promise.allSettled([...subscriptions].map((s) => s.unsubscribe()));
      await records?.close();
      // An injected transport belongs to the caller (it may serve other members too).
      if (overrides.transport === undefined) await transport.close();
    },
  };
  return gatewayApi;
}
