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
import { publicText, publicUrl } from '../core/public-url.js';
import type { Catalog } from '../catalog/index.js';
import { loadCatalog, registerCatalog } from '../catalog/index.js';
import { EventCodec } from '../codec/event/index.js';
import type { Config } from '../config/index.js';
import { Publisher, RecordPublisher } from '../bus/publisher/index.js';
import { subscribe } from '../bus/subscriber/index.js';
import { assertKindsOnce } from '../bus/subscriber/options.js';
import type { Subscription, SubscriptionActivity, SubscriptionStats } from '../bus/subscriber/index.js';
import { untypedSubscribeOptions } from '../bus/bus.js';
import type { BusSubscribeOptions } from '../bus/bus.js';
import { MAX_API_BODY_BYTES, createApiApp } from '../http/api/app.js';
import { HttpAuth, loadPartners, ownerMayRead, partnersWithoutCredentials, warnWhenPartnersFileChanges, withoutCredentialsMessage } from '../http/auth/index.js';
import type { MayRead, OidcOptions, Partner } from '../http/auth/index.js';
import { GatewayError } from '../core/errors.js';
import { raceAbort } from '../core/race-abort.js';
import { isLoopbackHost } from '../core/loopback.js';
import { kafkaClientSecurity, listenerHint } from '../core/tls-errors.js';
import type { IngressDeps } from '../http/ingress/handler.js';
import { answerOperational, createHttpServer } from '../http/server.js';
import { createOpsServerAnswering } from '../http/ops-server.js';
import type { Logger } from '../observability/index.js';
import { createConfluentRegistry, createMemoryRegistry } from '../registry/index.js';
import type { SchemaRegistry } from '../registry/port.js';
import { createKafkaTransport, createMemoryTransport, createPlatformaticTransport } from '../transport/index.js';
import type { TopicPartitionOffset, Transport } from '../transport/port.js';
import type { KafkaTransportOptions } from '../transport/index.js';
import { GatewayMetrics } from '../observability/metrics.js';
import type { SubscriptionFigures } from '../observability/metrics.js';
import type { Registry } from 'prom-client';
import { HttpDrain } from '../http/drain.js';
import { NO_TRACING, startTracing } from '../observability/index.js';
import type { Tracing } from '../observability/index.js';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { missedFirst, subscriptionLag, subscriptionLags } from '../bus/status/index.js';
import type { LagTarget } from '../bus/status/index.js';
import { permissionViews } from './permission-views.js';
import { sessionTimeoutRefusal } from './session-timeout-check.js';
import type { MetricsPartitionLag as PartitionLag } from '../observability/index.js';
import { DEFAULT_OWNER, NAME_PATTERN, PullService, Reconciler, SubscriptionService, extendedPartnerIds, groupOf, shadowingFile, SubscriptionStore, cursorSigner, deriveCursorKey, developmentCursorKey, developmentKey, parseSecretsKey, secretBox, secretsKeyDecision, secretsKeyMissing } from '../bus/subscriptions/index.js';
import type { CursorSigner, SecretBox, StoredSubscription, SubscriptionView } from '../bus/subscriptions/index.js';
import { BackgroundAuditWrites, ReplayAuditWriter, ReplayCoordinator, ReplayLog, RestartableSubscription, replayAuditTopicOf, replayHolds, replayLocal } from '../bus/subscriptions/replay/index.js';
import type { LocalReplayOptions, ReplayReport, ReplayTo } from '../bus/subscriptions/replay/index.js';
import { parseAllowList, targetChecker } from '../connectors/sinks/webhook/index.js';
import { reservedGroupProblem } from '../connectors/names.js';
import { fromStored, runtimeSinkFactory } from '../connectors/subscriptions/runtime.js';
import type { RuntimeSubscription } from '../connectors/subscriptions/runtime.js';
import { DeadLetters } from '../bus/deadletters/index.js';
import { SubscriptionOperations } from '../bus/status/index.js';
import type { EarlierFigures, SubscriptionTarget } from '../bus/status/index.js';
import { redriveTopic, retryTopic } from '../bus/subscriber/index.js';
import { kindNameOf, topicsOfKinds } from '../catalog/lookup.js';

export interface Gateway {
  readonly config: Config;
  readonly catalog: Catalog;
  readonly transport: Transport;
  readonly registry: SchemaRegistry;
  /**
   * Resolves once topics exist and schemas are registered. Rejects with the first failure that
   * waiting cannot mend (`retriable: false`: a schema the registry refuses, a SASL login or ACL the
   * broker refuses, an untrusted certificate), or with the closing reason when close() is called first.
   */
  readonly ready: Promise<void>;
  /**
   * How far start-up got, for a caller that bounds the wait for `ready` (createBus `startTimeoutMs`,
   * `signal`) and must say what it was waiting for.
   */
  startup(): StartupProgress;
  /** Available after `ready`. */
  codec(): EventCodec;
  publisher(): Publisher;
  records(): RecordPublisher;
  /**
   * Subscribes a handler under a durable subscription name (after `ready`); typed as `Bus.subscribe`.
   * Errors: as `Bus.subscribe` (a kind listed twice too: CEG_INVALID_OPTIONS naming `kinds[i]`);
   * CEG_INVALID_OPTIONS (`subscription`) for a name under `ce-gateway.sub.`: those consumer groups
   * belong to HTTP subscriptions (issue 8).
   */
  subscribe<K extends string>(o: BusSubscribeOptions<K>): Promise<Subscription>;
  /**
   * Starts the HTTP server and, once the gateway is ready, the subscription resources: the
   * definitions store, `/subscriptions`, and a member of every active subscription's group on this
   * instance. Resolves with the bound address.
   * Errors: CEG_INVALID_OPTIONS for a bad WEBHOOK_ALLOWED_HOSTS or key. A definitions topic holding
   *   push subscriptions on a gateway without a key (Kafka, bound beyond loopback) rejects
   *   `subscriptionsLoaded()` with CEG_SECRETS_KEY_MISSING (`serve` exits 2).
   * `whenLoaded: true`: the server starts listening only once the definitions are loaded or failed
   *   to (so it never answers `/readyz` 503 while they load): what a replacement cluster worker
   *   wants, while the other workers answer (cli/workers.ts). A failure is reported as without it,
   *   by `subscriptionsLoaded()`.
   */
  listen(opts?: { readonly whenLoaded?: boolean }): Promise<AddressInfo>;
  /**
   * Where the operations listener (`OPS_PORT`: plain HTTP, no partner authentication, GET/HEAD
   * /metrics, /healthz and /readyz with the API port's answers) is bound, once listen() resolved;
   * undefined without OPS_PORT or before. listen() starts it right after the API's server (and
   * rejects, the API's server closed again, when it cannot bind); close() closes it last of the
   * HTTP side, so probes and scrapes see the drain (`/readyz` 503 "shutting down").
   */
  opsAddress(): AddressInfo | undefined;
  /** Subscriptions declared in connector files (`kind: subscription`): run and listed like the stored ones. Call before listen(). */
  declareSubscriptions(defs: readonly RuntimeSubscription[]): void;
  /**
   * The short-form connectors (`kind: shell-hook` / `file-drop`) this process runs, as
   * `connectorView` shows them (startConnectors calls it: with those it starts, `[]` once they
   * stopped). Listed by `GET /subscriptions`, answered by `GET /subscriptions/{name}` and the
   * console (owner `anonymous`); read-only (PATCH, DELETE 409). Replaces the previous list.
   */
  declareConnectors(views: readonly SubscriptionView[]): void;
  /** Dead letters and status of subscriptions by name (issue 10): after `ready` (and, once listening, after the definitions loaded). */
  operations(): SubscriptionOperations | undefined;
  /** The subscription service once loaded (after listen() and ready). */
  subscriptionService(): SubscriptionService | undefined;
  /** Resolves once the subscription resources are loaded and the first reconcile pass ran (after listen()). */
  subscriptionsLoaded(): Promise<void>;
  /** The replays of the stored subscriptions (`/subscriptions/{name}/replay`) once loaded. */
  replayCoordinator(): ReplayCoordinator | undefined;
  /**
   * Replays a subscription this process runs through {@link subscribe} (library subscriptions,
   * connectors): its members here stop, the offsets move, they start again (issue 9); written to
   * the replay audit log as an HTTP replay is (`replayLocal` with an audit).
   * `subscription`: its name (the consumer group). Errors: as `replayLocal`.
   */
  replay(subscription: string, to: ReplayTo, opts?: LocalReplayOptions): Promise<ReplayReport>;
  /** The Prometheus instruments (issue 15): `metrics.registry` is the registry `GET /metrics` renders. */
  readonly metrics: GatewayMetrics;
  /** This process's name in status answers, consumer client ids and replay state (GatewayOverrides.processInstance). */
  readonly processInstance: string;
  /**
   * The figures of the subscriptions this instance runs (counts since start, partitions held, up or
   * failed) and, with `lag: true`, each one's lag per topic partition read from the broker now.
   * The same figures `/metrics` exposes; for status endpoints. Never rejects: a lag the broker
   * cannot give now is left out.
   */
  subscriptionFigures(opts?: { lag?: boolean }): Promise<readonly (SubscriptionFigures & { readonly lag?: readonly PartitionLag[] })[]>;
  /**
   * Stops the gateway (issue 15 "A shutdown that drains"): readiness turns false, the HTTP server
   * drains (Connection: close, idle keep-alive connections closed, new requests 503, requests in
   * progress finish), queued produces are sent, subscriptions stop and commit their offsets, the
   * `failed` states of replays written behind their answers are stored before the definitions
   * store stops (ReplayCoordinator.settled, given up with a warning when time runs out), the
   * clients close. Takes at most about `config.shutdownTimeoutMs` (the parts are bounded in turn).
   */
  close(): Promise<void>;
}

/** Start-up as far as it got: what it waits for, how often it tried, what the last attempt threw. */
export interface StartupProgress {
  /** `broker` while topics are created or read, `registry` while schemas are registered or read, `ready` once done. */
  readonly waitingFor: 'broker' | 'registry' | 'ready';
  /** Attempts that failed and were retried so far (0 while the first one runs). */
  readonly failedAttempts: number;
  /** What the last failed attempt threw, as thrown; undefined before the first failure. */
  readonly lastError: unknown;
}

const bootstrapRetry = retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 250, factor: 2, maxDelayMs: 5000, jitter: 0.2 });
/**
 * Whether loading the subscription definitions or the replay audit log is tried again after
 * `error`: always, but for settings the broker refuses (SASL, ACL, TLS: `details.reason`, which no
 * wait mends). A failure of the client that only said "not retriable" (kafkajs's TypeError after a
 * broker stall) left the gateway never ready, /readyz 503 for good (break report D3).
 */
function loadMayRetry(error: unknown): boolean {
  return !(isGatewayError(error, 'CEG_BROKER_UNAVAILABLE') && !error.retriable && error.details?.reason !== undefined);
}
const publishRetry = retryPolicy({ maxAttempts: 5, initialDelayMs: 100, factor: 2, maxDelayMs: 2000, jitter: 0.2 });
/** Upper bound of one console chain read, ms (a chain the console cannot read in this long says it may be incomplete). */
const CONSOLE_TRACE_TIMEOUT_MS = 10_000;
/**
 * How long one scrape waits for the subscriptions' lag from the broker, ms. Subscriptions whose
 * reads are not done by then have no lag series in that scrape (unknown, not 0) rather than the
 * scrape hanging on a slow broker. Under the 5 s a GATEWAY_WORKERS primary waits for a worker's
 * answer, and Prometheus's default 10 s scrape timeout.
 */
const LAG_SCRAPE_BUDGET_MS = 4_000;
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
  /**
   * The Kafka clients' connect and request timeouts, ms, instead of the transport's defaults (3000
   * and 30000): the CLI's broker deadline (cli/broker-deadline.ts). Only with KAFKA_BROKERS and no
   * `transport` override.
   */
  readonly kafkaTimeouts?: Partial<Pick<KafkaTransportOptions, 'connectionTimeoutMs' | 'requestTimeoutMs'>>;
  /**
   * How long past its `wait` a pull's broker calls may run before it answers 503, ms (PullService
   * `brokerGraceMs`, default PULL_BROKER_GRACE_MS = 5000). Not an environment setting: a bound far
   * above a healthy broker's round trip that operators have no reason to tune; tests shorten it.
   */
  readonly pullBrokerGraceMs?: number;
  /**
   * The OIDC key set fetch's timing, ms (OidcOptions `jwksTimings`: refetch minimum, retry delay
   * after a failed fetch, fetch timeout; defaults 5000 each). Not environment settings (abuse
   * guards and a fetch bound, not deployment choices); tests shorten them. Only with OIDC configured.
   */
  readonly oidcJwksTimings?: OidcOptions['jwksTimings'];
  /** The prom-client registry to record into (a library user's own); default a registry of this gateway. */
  readonly metricsRegistry?: Registry;
  /** Export spans here (tracing on, whatever the configuration says): tests use an in-memory exporter. */
  readonly spanExporter?: SpanExporter;
  /** What `GET /metrics` answers; default this gateway's registry (a cluster worker asks its primary for all workers', cli/commands/serve.ts). */
  readonly renderMetrics?: () => Promise<{ contentType: string; body: string }>;
  /**
   * This process's name among the instance's processes: in status answers, consumer client ids and
   * replay state (default INSTANCE_ID; a cluster worker's is `<INSTANCE_ID>.w<id>`). The events'
   * `source` keeps INSTANCE_ID.
   */
  readonly processInstance?: string;
}

export function createGateway(config: Config, log: Logger, overrides: GatewayOverrides = {}): Gateway {
  const processInstance = overrides.processInstance ?? config.instance;
  const catalog = loadCatalog(config.catalogDir);
  const transport: Transport =
    overrides.transport ??
    (config.kafka
      ? (config.kafka.client === 'platformatic' ? createPlatformaticTransport : createKafkaTransport)({ clientId: config.kafka.clientId, brokers: config.kafka.brokers, ssl: config.kafka.ca === undefined ? config.kafka.ssl : { ca: [config.kafka.ca] }, sasl: config.kafka.sasl, sessionTimeoutMs: config.kafka.sessionTimeoutMs, heartbeatIntervalMs: config.kafka.heartbeatIntervalMs, logger: log.child({ component: 'kafka', client: config.kafka.client }), ...overrides.kafkaTimeouts })
      : createMemoryTransport());
  const registry: SchemaRegistry =
    overrides.registry ??
    (config.registry
      ? createConfluentRegistry(config.registry)
      : createMemoryRegistry());
  if (!config.kafka && overrides.transport === undefined) log.warn('KAFKA_BROKERS is not set: using the in-memory transport; NOTHING IS DURABLE (events are lost when the process ends)');
  if (!config.registry && overrides.registry === undefined) log.warn('SCHEMA_REGISTRY_URL is not set: using the in-memory schema registry; schema ids are not durable');

  let codec: EventCodec | undefined;
  let records: RecordPublisher | undefined;
  let publisher: Publisher | undefined;
  let ingress: IngressDeps | undefined;
  let server: Server | undefined;
  /** The plain operations listener (OPS_PORT), once listen() started it. */
  let opsServer: Server | undefined;
  const closing = new AbortController();
  let declared: readonly RuntimeSubscription[] = [];
  /** The short-form connectors this process runs (startConnectors → declareConnectors), as GET /subscriptions lists them. */
  let connectorViews: readonly SubscriptionView[] = [];
  let store: SubscriptionStore | undefined;
  let service: SubscriptionService | undefined;
  /** Names of short-form connectors a stored subscription clashes with, said once each (warnConnectorClashes). */
  const clashesSaid = new Set<string>();

  /**
   * Says (warn, once per name while it lasts) when a subscription stored through the HTTP API by the
   * anonymous owner has the name of a short-form connector this process runs. A create is refused
   * then (409 naming `name`: SubscriptionService.create), but one created earlier, or on an instance
   * that does not run the connector, is there already. Both run (their consumer groups differ: the
   * stored one's `ce-gateway.sub.anonymous.<name>`, the connector's its name), both are listed, and
   * the routes by name (GET, status, dead letters, the console) answer the stored one: the
   * connector's status and dead letters are not reachable by name until one of them is renamed or
   * the stored one deleted. Called when the connectors are declared, when the definitions are
   * loaded and when they change (whichever comes last sees both).
   */
  function warnConnectorClashes(): void {
    const s = store;
    if (s === undefined) return;
    const now = new Set<string>();
    for (const v of connectorViews) {
      // A connector's name with a dot can be no stored subscription's (NAME_PATTERN).
      if (!NAME_PATTERN.test(v.name)) continue;
      const st = s.get(groupOf(DEFAULT_OWNER, v.name));
      if (st === undefined) continue;
      now.add(v.name);
      if (clashesSaid.has(v.name)) continue;
      clashesSaid.add(v.name);
      log.warn(
        { subscription: st.group, name: v.name, connector: v.connector?.name, connectorKind: v.connector?.kind, connectorGroup: v.group },
        `a subscription stored through the HTTP API by owner ${DEFAULT_OWNER} has the name of the ${v.connector?.kind ?? 'connector'} connector ${v.connector?.name ?? v.name} this gateway runs (subscription ${v.name}): both run (consumer groups ${st.group} and ${v.group}), but GET /subscriptions/${v.name}, its status, its dead letters and the console answer the stored one; delete the stored one or rename the connector's subscription`,
      );
    }
    for (const n of [...clashesSaid]) if (!now.has(n)) clashesSaid.delete(n);
  }
  let pullService: PullService | undefined;
  let reconciler: Reconciler<RuntimeSubscription> | undefined;
  let replayLog: ReplayLog | undefined;
  let coordinator: ReplayCoordinator | undefined;
  // Audit entries of failed replays (HTTP and this process's own) written behind their answers;
  // close() waits for them, /metrics counts those that could not be written.
  const replayAuditWrites = new BackgroundAuditWrites(log.child({ component: 'subscriptions' }));
  // The library replays' way into the audit log (no read of it needed here): made on first use.
  let replayAuditWriter: ReplayAuditWriter | undefined;
  let leaseTimer: NodeJS.Timeout | undefined;
  let loaded: Promise<void> | undefined;
  const subscriptions = new Set<Subscription>();
  /** Subscriptions whose consumer stopped on a failure: reported by /readyz and metrics, never idle silently. */
  const failedSubscriptions = new Map<string, { readonly reason: string; readonly atMs: number }>();
  /**
   * The short-form connectors as GET /subscriptions and GET /subscriptions/{name} show them: one
   * whose member stopped on a failure is `failed`, the failure its `stateReason`, as its status
   * says (libraryTarget); until 2026-12-07 the listing said `active` while the status said `failed`.
   */
  const listedConnectors = (): readonly SubscriptionView[] =>
    connectorViews.map((v) => {
      const failed = failedSubscriptions.get(v.group);
      return failed === undefined ? v : { ...v, state: 'failed', stateReason: failed.reason.slice(0, 500) };
    });
  /** Record counters of members that stopped, per subscription the reconciler still runs. */
  const retiredStats = new Map<string, SubscriptionStats>();
  /** The counters of each failed subscription's last member: still counted while it is reported failed, and kept on when a new member starts. */
  const failedStats = new Map<string, SubscriptionStats>();
  /** The last delivery and failure of members that stopped (with retiredStats): status keeps them when an idle member stops. */
  const retiredActivity = new Map<string, SubscriptionActivity>();
  /** A subscription gone from this process (deleted, or unsubscribed by its library user): its figures go. */
  const forget = (name: string): void => {
    retiredStats.delete(name);
    retiredActivity.delete(name);
    if (![...subscriptions].some((s) => s.name === name) && !failedSubscriptions.has(name)) metrics.forgetSubscription(name);
  };
  /** Subscriptions whose members the reconciler started (the others are a library user's own). */
  const reconciled = new Set<string>();
  /**
   * A failed member of a reconciled subscription that is now deleted, paused or gone is expected
   * to have no member: it no longer holds /readyz at not ready. A deleted one's figures go; the
   * others keep their counters for their next member.
   */
  const settleFailures = (r: Reconciler<RuntimeSubscription>): void => {
    for (const name of [...failedSubscriptions.keys()]) {
      if (!reconciled.has(name) || r.knows(name)) continue;
      failedSubscriptions.delete(name);
      const last = failedStats.get(name);
      failedStats.delete(name);
      if (!r.has(name)) reconciled.delete(name);
      if (last !== undefined) retain(name, last);
      else if (!r.has(name)) forget(name);
    }
    for (const name of reconciled) if (!r.has(name) && ![...subscriptions].some((m) => m.name === name)) reconciled.delete(name);
  };
  /** Keeps a stopped member's counters for the next member of a subscription the reconciler still runs. */
  const retain = (name: string, stats: SubscriptionStats): void => {
    // Any state counts: a pause, a replay (it pauses) or a 410 keeps the subscription and its figures.
    if (reconciler?.has(name) !== true) return forget(name);
    const before = retiredStats.get(name);
    retiredStats.set(name, before === undefined ? stats : addStats(before, stats));
  };
  /** Keeps a stopped member's last delivery and failure, as {@link retain} keeps its counters. */
  const retainActivity = (name: string, a: SubscriptionActivity): void => {
    if (reconciler?.has(name) !== true) return;
    retiredActivity.set(name, latestActivity(retiredActivity.get(name), a));
  };
  /**
   * What members of `name` that stopped on this instance counted (idle stops on demand, PATCH
   * restarts, a failed member), for the status answer: it covers the subscription on this
   * instance, not only the member running now (breaker report: an idle stop zeroed it).
   */
  const earlierFigures = (name: string): EarlierFigures | undefined => {
    const retired = retiredStats.get(name);
    const failed = failedSubscriptions.has(name) ? failedStats.get(name) : undefined;
    const stats = retired === undefined || failed === undefined ? (retired ?? failed) : addStats(retired, failed);
    const activity = retiredActivity.get(name);
    if (stats === undefined && activity === undefined) return undefined;
    return { handled: stats?.handled ?? 0, retried: stats?.retried ?? 0, deadLettered: stats?.deadLettered ?? 0, ...activity };
  };

  // Tracing (issue 15): the SDK is loaded only when an exporter is configured; off costs nothing.
  let tracing: Tracing = NO_TRACING;
  const tracingStarted: Promise<void> =
    config.tracing === undefined && overrides.spanExporter === undefined
      ? Promise.resolve()
      : startTracing({ serviceName: config.service, instance: processInstance, ...(config.tracing === undefined ? {} : { endpoint: config.tracing.endpoint }), ...(overrides.spanExporter === undefined ? {} : { exporter: overrides.spanExporter }) }).then(
          (t) => {
            tracing = t;
            log.info({ endpoint: config.tracing === undefined ? '(exporter given)' : publicUrl(config.tracing.endpoint) }, 'tracing on: spans exported by OTLP/HTTP');
          },
          (err: unknown) => log.error({ err: publicText(errorMessage(err)) }, 'tracing could not start; running without spans'),
        );

  let progress: StartupProgress = { waitingFor: 'broker', failedAttempts: 0, lastError: undefined };
  const waitFor = (waitingFor: StartupProgress['waitingFor']): void => {
    progress = { ...progress, waitingFor };
  };

  /**
   * A KAFKA_SESSION_TIMEOUT_MS the broker would refuse stops the start (not retriable: `serve`
   * exits 2): otherwise every consumer group member's join failed later, one subscription at a
   * time (INVALID_SESSION_TIMEOUT). Asked only when the setting is given (the default is within
   * Kafka's default bounds) and of every broker, the tightest bounds taken (any broker may
   * coordinate a group: transport/session-bounds.ts); skipped when no broker says (no
   * DESCRIBE_CONFIGS permission): a refused join still names the setting (transport/access-failure.ts).
   */
  async function checkSessionTimeout(): Promise<void> {
    const sessionTimeoutMs = config.kafka?.sessionTimeoutMs;
    if (sessionTimeoutMs === undefined || overrides.transport !== undefined || transport.groupSessionTimeoutBounds === undefined) return;
    const bounds = await transport.groupSessionTimeoutBounds();
    const refusal = bounds === undefined ? undefined : sessionTimeoutRefusal(sessionTimeoutMs, bounds);
    if (refusal === undefined || bounds === undefined) return;
    throw new GatewayError(
      'CEG_BROKER_UNAVAILABLE',
      refusal,
      { retriable: false, details: { reason: 'session-timeout', sessionTimeoutMs, minMs: bounds.minMs, maxMs: bounds.maxMs } },
    );
  }

  /** Creates the topics, registers the schemas and builds what serves events; one attempt. */
  async function bootstrapOnce(): Promise<void> {
    if (overrides.readOnly === true) {
      codec = new EventCodec(catalog, registry, new Map());
      log.debug('read-only: no topic created, no schema registered');
      waitFor('ready');
      return;
    }
    waitFor('broker');
    await transport.ensureTopics(catalog.topics);
    await checkSessionTimeout();
    waitFor('registry');
    const latest = await registerCatalog(registry, catalog);
    const fresh = new EventCodec(catalog, registry, latest);
    await fresh.loadVersions();
    // Each topic's max.message.bytes, read once: produce calls are cut by it and a record it
    // cannot take is refused at ingress with the limit named.
    waitFor('broker');
    const limits = new Map<string, number>();
    for (const t of catalog.topics) limits.set(t.name, await transport.maxMessageBytes(t.name));
    const maxMessageBytes = (topic: string): number | undefined => limits.get(topic);
    // An attempt close() stopped waiting for (bootstrap) may still finish: it must not start a
    // publisher (its timers and queue) on a gateway that is closed or closing.
    closing.signal.throwIfAborted();
    codec = fresh;
    records = new RecordPublisher(transport, { queueCapacity: config.publishQueueCapacity, maxBatch: 500, maxMessageBytes, retry: publishRetry, instruments: metrics }, log.child({ component: 'publisher' }));
    publisher = new Publisher(codec, records, { service: config.service, instance: config.instance, dataschemaBase: config.dataschemaBase });
    ingress = {
      codec,
      publisher: records,
      log: log.child({ component: 'ingress' }),
      instruments: metrics,
      tracing: () => tracing,
      options: { ...config.ingress, dataschemaBase: config.dataschemaBase, maxMessageBytes },
    };
    waitFor('ready');
    log.info({ topics: catalog.topics.length, kinds: catalog.kinds.length }, 'topics and schemas ready');
  }

  async function bootstrap(): Promise<void> {
    await tracingStarted;
    try {
      // Only what the adapters mark retriable (broker or registry unreachable) is waited out. A
      // schema the registry refuses (incompatible, invalid), a bad topic, credentials, an ACL or a
      // certificate the broker refuses, or an unknown error will not get better by waiting:
      // start-up fails with the reason instead of retrying forever.
      // close() also ends the attempt in progress (raceAbort): a Kafka client retrying an
      // unreachable broker inside one attempt held close() (and the caller's process) for as long
      // as its own retries took; the transport's close right after cuts the work it left behind.
      await retrying(() => raceAbort(bootstrapOnce(), closing.signal, () => (closing.signal.reason instanceof Error ? closing.signal.reason : new Error('gateway closing'))), {
        policy: bootstrapRetry,
        maxAttempts: Infinity,
        signal: closing.signal,
        onRetry: ({ attempt, error }) => {
          progress = { ...progress, failedAttempts: attempt, lastError: error };
          const err = errorMessage(error);
          const hint = progress.waitingFor === 'broker' && config.kafka !== undefined ? listenerHint(err, kafkaClientSecurity(config.kafka)) : undefined;
          log.warn({ attempt, waitingFor: progress.waitingFor, err, ...(hint === undefined ? {} : { hint }) }, 'bootstrap failed (broker or registry unreachable), retrying');
        },
      });
    } catch (err) {
      if (!closing.signal.aborted) log.error({ code: isGatewayError(err) ? err.code : undefined, err: errorMessage(err) }, 'bootstrap failed for good (retrying cannot help): fix the cause named, then restart');
      throw err;
    }
  }

  const ready = bootstrap();
  ready.catch((err: unknown) => {
    if (!closing.signal.aborted) log.error({ err: errorMessage(err) }, 'the gateway cannot serve events (see the error above)');
  });

  let httpAuthInUse: HttpAuth | undefined;
  /**
   * Whether a subscription's owner may read a kind now: the partners' `subscribe` from the
   * PARTNERS_FILE this instance loaded in listen() (every owner every kind until then, and without
   * authentication). Asked by the reconciler's desired set (push), the pull service, and the GET,
   * status and console tail answers (docs/security.md "Revoking a permission").
   */
  let mayRead: MayRead = ownerMayRead(undefined);
  /** The partners' ids (PARTNERS_FILE), set with `mayRead`; none without partners. */
  let partnerIds: ReadonlySet<string> = new Set();
  const { forbiddenKinds, heldKinds: kindsHeldFrom, subscriptionsApi, tailApi, operationsApi } = permissionViews({ catalog, mayRead: () => mayRead, service: () => service });
  const metrics = GatewayMetrics.for(overrides.metricsRegistry);
  const drain = new HttpDrain();
  // Counters of a subscription add up over its members (on demand, a member stops when idle and
  // another starts with the next records, issue 10), so they never go down while the process runs.
  const figures = (): SubscriptionFigures[] => {
    const rows = new Map<string, { up: boolean; stats: SubscriptionStats | undefined; partitions: number }>();
    for (const [name, stats] of retiredStats) {
      if (reconciler?.has(name) === true) rows.set(name, { up: true, stats, partitions: 0 });
      else forget(name);
    }
    for (const s of subscriptions) {
      const before = rows.get(s.name)?.stats;
      rows.set(s.name, { up: true, stats: before === undefined ? s.stats() : addStats(before, s.stats()), partitions: s.assignments().length });
    }
    // A failed member's counters stay in the sums: dropping them would make the counters go down.
    for (const name of failedSubscriptions.keys()) {
      const before = rows.get(name)?.stats;
      const last = failedStats.get(name);
      rows.set(name, { up: false, stats: before === undefined || last === undefined ? (before ?? last) : addStats(before, last), partitions: 0 });
    }
    return [...rows].map(([name, r]) => ({
      name,
      up: r.up,
      partitions: r.partitions,
      handled: r.stats?.handled ?? 0,
      retried: r.stats?.retried ?? 0,
      deadLettered: r.stats?.deadLettered ?? 0,
      skipped: r.stats?.skipped ?? 0,
      filtered: r.stats?.filtered ?? 0,
    }));
  };
  // Partitions the group has committed nothing on have no lag figure (Kafka's tools show "-"): left out of the gauge.
  const lagOf = async (s: Subscription): Promise<readonly PartitionLag[] | undefined> =>
    // The same lag as /status: a kind added by PATCH counts from its kept start positions.
    subscriptionLag(transport, s.name, s.topics, service?.startPositions(s.name)).then(
      (l) => l.partitions.flatMap((p) => (p.lag === null ? [] : [{ topic: p.topic, partition: p.partition, lag: p.lag }])),
      () => undefined,
    );
  /**
   * The subscriptions the lag gauge covers, by consumer group, with the topics and start positions
   * `GET /subscriptions/{name}/status` reads for each (targetTopics): every stored subscription
   * (push and pull, whatever its state and whether or not a member runs here) and every connector
   * file's, then the library's running here. Not a stored one a connector file shadows: it is not
   * run (its group's series, when it shares the file's group, is the file's).
   */
  const lagTargets = (): LagTarget[] => {
    const out = new Map<string, LagTarget>();
    for (const v of service?.list() ?? []) {
      if (v.shadowedBy !== undefined || out.has(v.group)) continue;
      out.set(v.group, { group: v.group, ...targetTopics(v) });
    }
    for (const s of subscriptions) if (!out.has(s.name)) out.set(s.name, { group: s.name, topics: s.topics });
    return [...out.values()];
  };
  // Groups the previous scrape left out (its budget ran out, or a read failed): read first next time.
  let lagMissed: ReadonlySet<string> = new Set();
  const removeSource = metrics.addSource({
    auth: () => httpAuthInUse?.stats(),
    replayAudit: () => ({ writeFailures: replayAuditWrites.failures }),
    publisher: () => records?.stats(),
    ready: () => ingress !== undefined && !drain.draining,
    subscriptions: figures,
    // docs/observability.md "ce_gateway_subscription_lag": every subscription this instance knows,
    // running here or not (a pull subscription never has a member; an idle push one has none),
    // read in one batched pass within LAG_SCRAPE_BUDGET_MS.
    lag: async () => {
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), LAG_SCRAPE_BUDGET_MS);
      timer.unref();
      try {
        const targets = missedFirst(lagTargets(), lagMissed);
        const lags = await subscriptionLags(transport, targets, { concurrency: config.subscriptions.onDemand.concurrency, signal: ac.signal });
        lagMissed = new Set(targets.flatMap((t) => (lags.has(t.group) ? [] : [t.group])));
        const out = new Map<string, readonly PartitionLag[]>();
        for (const [group, l] of lags) out.set(group, l.partitions.flatMap((p) => (p.lag === null ? [] : [{ topic: p.topic, partition: p.partition, lag: p.lag }])));
        return out;
      } finally {
        clearTimeout(timer);
      }
    },
    members: () => reconciler?.members(),
    pull: () => pullService?.stats() ?? new Map(),
    // docs/subscriptions.md "When records vanish under a subscription": each reset also logs a warning.
    offsetResets: () => transport.offsetResets?.snapshot() ?? new Map(),
    // docs/security.md "Revoking a permission": per stored subscription (push and pull), the kinds
    // its owner may not read now; a connector file's (the file wins over a stored one) are never checked.
    forbiddenKinds: () => {
      const out = new Map<string, number>();
      if (service === undefined || store === undefined) return out;
      const files = new Set(declared.map((d) => d.group));
      for (const [group, st] of store.all()) {
        const n = files.has(group) ? 0 : forbiddenKinds(st).length;
        if (n > 0) out.set(group, n);
      }
      return out;
    },
  });

  async function readiness(): Promise<{ ready: boolean; checks: Record<string, boolean>; durable: boolean }> {
    const timeout = <T>(p: Promise<T>, fallback: T): Promise<T> =>
      Promise.race([p.catch(() => fallback), new Promise<T>((r) => setTimeout(() => r(fallback), config.readinessTimeoutMs).unref())]);
    const [broker, schemaRegistry] = await Promise.all([timeout(transport.isHealthy(), false), timeout(registry.isHealthy(), false)]);
    const bootstrapped = ingress !== undefined && !drain.draining;
    const subscriptionsOk = failedSubscriptions.size === 0;
    // A listening gateway also serves the subscription resources: ready once they are loaded, and
    // while it follows their topic (not while it reads it again after a broker outage: its view
    // may miss a pause or a delete made on another instance).
    const definitions = loaded === undefined || (service !== undefined && store?.following === true);
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
        log.warn({ host: config.http.host }, 'SUBSCRIPTION_SECRETS_KEY is not set: push subscriptions cannot be created (500 CEG_SECRETS_KEY_MISSING), and the gateway refuses to start when its definitions topic holds some');
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
      const loaded = loadPartners(a.partnersFile, catalog, process.env);
      partners = loaded.partners;
      // Told against what was read: an edit landing right after the load is warned of too.
      warnWhenPartnersFileChanges(a.partnersFile, loaded.stats, log, closing.signal);
      mayRead = ownerMayRead(partners);
      partnerIds = new Set(partners.map((p) => p.id));
      for (const [shorter, longer] of extendedPartnerIds(partnerIds)) {
        log.warn({ partner: shorter, extendedBy: longer }, "partner ids: one begins with another and '_', so the shorter one's subscription names may not contain '_' (Kafka treats '.' and '_' in topic names alike; docs/subscriptions.md, name)");
      }
      // Loaded, not refused: emptying a partner's keys revokes it, and a refused file would keep
      // its old keys valid wherever it stopped a restart (docs/security.md "The partners file").
      for (const p of partnersWithoutCredentials(partners, a.oidc !== undefined)) {
        log.warn({ file: a.partnersFile, partner: p.id, field: p.field }, withoutCredentialsMessage(p));
      }
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
      schemas: a.schemas,
      requestsPerSecond: a.requestsPerSecond,
      eventsPerSecond: a.eventsPerSecond,
      failuresPerMinute: a.failuresPerMinute,
      trustedProxies: a.trustedProxies,
      audit: log.child({ component: 'audit' }),
      log,
      // OIDC_JWKS_FILE is watched until the gateway closes (a key rotation needs no restart).
      ...(partners === undefined || a.oidc === undefined ? {} : { oidc: { ...a.oidc, stop: closing.signal, ...(overrides.oidcJwksTimings === undefined ? {} : { jwksTimings: overrides.oidcJwksTimings }) } }),
    });
  }

  /**
   * The key signing pull cursors: derived (HKDF) from the subscription secrets key, so every
   * instance that shares that key shares this one; a random key of this run where the development
   * key applies (developmentCursorKey); none otherwise (pulls answer 500 CEG_SECRETS_KEY_MISSING). Spec: issue 9 ("signed").
   */
  function cursorKey(): CursorSigner | undefined {
    const k = config.subscriptions.secretsKey;
    switch (secretsKeyDecision(k, transport.kind, config.http.host)) {
      case 'configured':
        return cursorSigner(deriveCursorKey(parseSecretsKey(k!)));
      case 'development':
        // Random per run, not derived from the well-known key: see developmentCursorKey.
        return cursorSigner(developmentCursorKey());
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
      classify: loadMayRetry,
      onRetry: ({ attempt, error }) => slog.warn({ attempt, err: errorMessage(error) }, 'loading the subscriptions failed, retrying'),
    });
    store = s;
    const audit = new ReplayLog(transport, replayAuditTopicOf(config.subscriptions.topic), slog);
    await retrying(() => audit.start(), {
      policy: bootstrapRetry,
      maxAttempts: Infinity,
      signal: closing.signal,
      classify: loadMayRetry,
      onRetry: ({ attempt, error }) => slog.warn({ attempt, err: errorMessage(error) }, 'loading the replay audit log failed, retrying'),
    });
    replayLog = audit;
    const sealed = [...s.all().values()].filter((st) => st.delivery.mode === 'push').length;
    if (box === undefined && sealed > 0) {
      throw secretsKeyMissing(`the definitions topic ${s.topic} holds ${sealed} push subscription(s) whose secrets are sealed, and this gateway (bound to ${config.http.host}, Kafka) has no key`);
    }
    const fileViews = new Map(declared.filter((d) => d.view !== undefined).map((d) => [d.group, d.view!] as const));
    const svc = new SubscriptionService({ store: s, box, catalog, transport, checkTarget: targetChecker(allow, undefined, slog), declared: () => fileViews, connectors: listedConnectors, mayRead: (owner, kind) => mayRead(owner, kind), partners: () => partnerIds });
    const topicsOf = (kinds: readonly string[]): string[] => topicsOfKinds(catalog, kinds);
    // BUS_ROLE=publisher: this instance takes events and serves the API, but runs no subscription
    // member (push, connectors): deliveries run on the other instances (the two-process layout of
    // docs/deploy.md, so that deliveries and their GC never share a thread with ingress; issue 8).
    if (config.role !== 'publisher') {
      const r = new Reconciler<RuntimeSubscription>(
        // PUSH_FETCH_LINGER_MS (default none, as Kafka's fetch.min.bytes 1): 5 ms cut CPU per pushed
        // event by 8–18 % at 1,000 events/s, for a p50 up to 5 ms higher (BENCHMARKS.md, issue 8).
        {
          subscribe: (o) => {
            reconciled.add(o.subscription);
            return startMember({ ...o, fetchLingerMs: config.subscriptions.fetchLingerMs });
          },
          partitionCount: (t) => transport.partitionCount(t),
          topicsOf,
        },
        runtimeSinkFactory({ log: slog, allow, origin: config.subscriptions.requestOrigin, codec: need(codec, 'codec'), tracing: () => tracing }),
        slog,
        (group, reason) => {
          // The 410 is this instance's last error too: the attempt that got it is held, not retried, so the member never counts it.
          retainActivity(group, { lastError: { atMs: Date.now(), reason } });
          return svc.setState(group, 'gone', reason);
        },
        { source: transport, options: config.subscriptions.onDemand },
      );
      // Opened once per stored generation: unchanged subscriptions keep their identity (no update).
      const cache = new Map<string, { readonly stored: StoredSubscription; readonly runtime: RuntimeSubscription }>();
      // One object per runtime while its permissions are unchanged (they are fixed for the process): no needless update.
      const narrowed = new WeakMap<RuntimeSubscription, RuntimeSubscription>();
      const permitted = (rt: RuntimeSubscription): RuntimeSubscription => {
        const gone = new Set(forbiddenKinds(rt));
        if (gone.size === 0) return rt;
        let n = narrowed.get(rt);
        if (n === undefined) {
          const kinds = rt.kinds.filter((k) => !gone.has(kindNameOf(catalog, k)));
          const topics = new Set(topicsOf(kinds));
          n = {
            ...rt,
            kinds,
            heldKinds: rt.kinds.filter((k) => !kinds.includes(k)),
            ...(rt.startAt === undefined ? {} : { startAt: rt.startAt.filter((p) => topics.has(p.topic)) }),
            ...(kinds.length === 0 ? { state: 'paused' as const } : {}),
          };
          narrowed.set(rt, n);
          // Error level: events of these kinds wait unseen (held) until the permission returns or
          // the subscription is changed, and an owner the partners file no longer names reads nothing.
          slog.error({ subscription: rt.group, owner: rt.owner, forbiddenKinds: [...gone] }, kinds.length === 0 ? 'subscription runs no member: its owner may no longer read any of its kinds (is the owner in PARTNERS_FILE?)' : 'subscription runs without the kinds its owner may no longer read');
        }
        return n;
      };
      const shadowed = new Set<string>();
      const desired = (all: ReadonlyMap<string, StoredSubscription>): Map<string, RuntimeSubscription> => {
        const out = new Map<string, RuntimeSubscription>();
        // A replay under way pauses its subscription here until it ends or its lease runs out (issue 9).
        const now = Date.now();
        let leaseEnd = Number.POSITIVE_INFINITY;
        for (const d of declared) out.set(d.group, d);
        for (const [group, st] of all) {
          // (A file's subscription without a view still takes its own group.)
          const shadow = shadowingFile(st, fileViews) ?? (out.has(group) ? { name: st.name, owner: st.owner, group, reason: '' } : undefined);
          if (shadow !== undefined) {
            // A file declares its group, or its name for the anonymous owner: the file wins
            // (docs/subscriptions.md "Subscriptions in connector files"). Said once per stored
            // subscription, naming both: its sink silently stopped getting events. GET, the list
            // and the status show `shadowedBy`.
            if (!shadowed.has(group)) {
              shadowed.add(group);
              slog.warn(
                { subscription: group, owner: st.owner, name: st.name, fileOwner: shadow.owner, fileGroup: shadow.group },
                shadow.group === group
                  ? 'a connector file declares this subscription, so the one stored through the HTTP API (same owner and name) is not run: its sink gets nothing while the file does; rename one of them'
                  : `a connector file declares subscription ${st.name} of owner ${shadow.owner} (group ${shadow.group}), and one of that name is stored through the HTTP API by owner ${st.owner}, whose callers address files' subscriptions by name too: the file's wins, the stored one is not run (its sink gets nothing); delete the stored one, or rename one of them`,
              );
            }
            continue;
          }
          shadowed.delete(group);
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
          // The kinds its owner may read now (docs/security.md "Revoking a permission"): a revoked
          // kind's topic is not read by the member, so its commits stay where they are (held, as
          // Kafka ACLs leave a consumer's offsets) and delivery resumes there if the permission
          // returns. Nothing left: no member at all (paused here only; the stored state is untouched,
          // GET and status say why).
          const runtime = permitted(c.runtime);
          if (replayHolds(st.replay, now)) {
            out.set(group, { ...runtime, state: 'paused' });
            leaseEnd = Math.min(leaseEnd, Date.parse(st.replay!.leaseUntil));
          } else {
            out.set(group, runtime);
          }
        }
        for (const g of cache.keys()) if (!all.has(g)) cache.delete(g);
        clearTimeout(leaseTimer);
        if (Number.isFinite(leaseEnd)) {
          leaseTimer = setTimeout(() => r.apply(desired(s.all())), Math.max(0, leaseEnd - now) + 50);
          leaseTimer.unref();
        }
        return out;
      };
      s.onChange((all) => {
        r.apply(desired(all));
        settleFailures(r);
      });
      r.apply(desired(s.all()));
      reconciler = r;
    } else {
      slog.info('bus role publisher: this instance runs no subscription member; deliveries run on the other instances');
    }
    coordinator = new ReplayCoordinator({
      store: s,
      audit,
      transport,
      topicsOf,
      instance: processInstance,
      log: slog,
      declared: (group) => declared.some((d) => d.group === group),
      shadowedBy: (group) => svc.shadowedBy(group),
      background: replayAuditWrites,
    });
    pullService = new PullService({ ...(overrides.pullBrokerGraceMs === undefined ? {} : { brokerGraceMs: overrides.pullBrokerGraceMs }), subscription: (g) => s.get(g), catalog, codec: () => need(codec, 'codec'), transport, signer: cursorKey(), log: slog.child({ delivery: 'pull' }), mayRead: (owner, kind) => mayRead(owner, kind), declared: (group) => declared.some((d) => d.group === group), shadowedBy: (group) => svc.shadowedBy(group), onChange: (l) => s.onChange(l) });
    service = svc;
    // A stored subscription named as a short-form connector: said now, and when one appears later.
    warnConnectorClashes();
    s.onChange(() => warnConnectorClashes());
    await reconciler?.settled();
  }

  /**
   * The topics a stored or connector-file subscription's group reads and where it starts without a
   * commit: what its status's lag and the lag gauge read (one rule for both). A pull subscription
   * reads its kinds' topics (no member, no retry or redrive topic); a delivered one those and its
   * retry and redrive topics, whether or not they exist yet (the lag leaves a missing one out).
   */
  function targetTopics(v: SubscriptionView): { topics: string[]; startAt?: TopicPartitionOffset[] } {
    const topics = topicsOfKinds(catalog, v.kinds);
    if (v.delivery.mode === 'pull') return { topics };
    // A kind added by PATCH starts at the positions fixed then (its lag counts from there).
    const startAt = service?.startPositions(v.group) ?? [];
    // The retry topic whatever the ordering: under `key` its member still reads one left from an
    // earlier `none` (the reconciler), and the status leaves it out when it does not exist.
    return { topics: [...topics, retryTopic(v.group), redriveTopic(v.group)], ...(startAt.length === 0 ? {} : { startAt }) };
  }

  /**
   * A subscription by the name the routes take (issue 10): an HTTP resource or a connector file's
   * (by its name), else a subscription this process runs through the library or a connector (by its
   * subscription name, which is its consumer group).
   */
  function resolveTarget(name: string, owner: string): SubscriptionTarget | undefined {
    if (service !== undefined) {
      try {
        const v = service.get(name, owner);
        // A short-form connector runs as a library subscription of this process (below): its
        // status is that member's (running, failed). Before its member started: not running yet.
        // Its origin is the listing's (`file`: a connector file defines it), not `library`: one
        // subscription, one value in GET /subscriptions and …/status (docs/connectors.md).
        if (v.connector !== undefined && v.connector.kind !== 'subscription') {
          const member = libraryTarget(name);
          return member === undefined ? { name, owner: DEFAULT_OWNER, group: v.group, origin: 'file', state: 'active', topics: targetTopics(v).topics } : { ...member, origin: 'file' };
        }
        // docs/security.md "Revoking a permission": dead letters of these are not shown nor redriven
        // (SubscriptionOperations). Every kind the owner may not read, not only those still stored:
        // a kind PATCHed out (or a subscription deleted and created again under its name) leaves its
        // dead letters on the same dead-letter topic.
        const held = kindsHeldFrom(v);
        const heldKinds = { ...(held.length === 0 ? {} : { heldKinds: held }), ...(v.shadowedBy === undefined ? {} : { shadowedBy: v.shadowedBy }) };
        return { name: v.name, owner: v.owner, group: v.group, origin: v.origin, state: v.state, ...targetTopics(v), ...(v.delivery.mode === 'pull' ? { pull: true } : {}), ...heldKinds };
      } catch (err) {
        if (!isGatewayError(err, 'CEG_NOT_FOUND')) throw err;
      }
    }
    return libraryTarget(name);
  }

  /** A subscription this process runs through the library or a connector, by its name (its consumer group): running, or stopped on a failure. */
  function libraryTarget(name: string): SubscriptionTarget | undefined {
    const sub = [...subscriptions].find((s) => s.name === name);
    if (sub !== undefined) return { name, owner: DEFAULT_OWNER, group: name, origin: 'library', state: 'active', topics: sub.topics };
    const failed = failedSubscriptions.get(name);
    if (failed !== undefined) return { name, owner: DEFAULT_OWNER, group: name, origin: 'library', state: 'failed', topics: [], failure: failed };
    return undefined;
  }

  let operations: SubscriptionOperations | undefined;
  function operationsNow(): SubscriptionOperations | undefined {
    if (codec === undefined || (loaded !== undefined && service === undefined)) return undefined;
    const c = codec;
    operations ??= new SubscriptionOperations({
      transport,
      deadLetters: new DeadLetters({ transport: wakingOnRedrive(transport, (group) => reconciler?.wake(group)), codec: c }),
      resolve: resolveTarget,
      member: (group) => [...subscriptions].find((s) => s.name === group),
      earlier: earlierFigures,
      pullStats: (group) => pullService?.stats().get(group),
      instance: processInstance,
    });
    return operations;
  }

  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not available before the gateway is ready (await gateway.ready)`);
    return v;
  };

  /** One member of subscription `o.subscription` on this instance, restartable by a replay; its stats and failure are kept for status. */
  async function startMember(o: BusSubscribeOptions): Promise<Subscription> {
    await ready;
    // The subscriber names the subscription in each line itself (no child binding: no duplicate key).
    const c = need(codec, 'codec');
    // Restartable: a replay stops this member and starts a new one behind the same handle.
    const sub = await RestartableSubscription.start(o.subscription, o.kinds, (filters) => subscribe(transport, c, log, { instruments: metrics, tracing, ...o, ...(filters === undefined ? {} : { filters }), retry: o.retry ?? defaultHandlerRetry, instanceId: o.instanceId ?? processInstance }), o.filters);
    subscriptions.add(sub);
    failedSubscriptions.delete(sub.name);
    const failedBefore = failedStats.get(sub.name);
    failedStats.delete(sub.name);
    if (failedBefore !== undefined) retain(sub.name, failedBefore);
    sub.done.then(
      // Kept while the subscription exists on this instance (a later member adds to them).
      () => {
        subscriptions.delete(sub);
        retain(sub.name, sub.stats());
        retainActivity(sub.name, sub.activity());
      },
      (err: unknown) => {
        subscriptions.delete(sub);
        retainActivity(sub.name, sub.activity());
        failedStats.set(sub.name, sub.stats());
        failedSubscriptions.set(sub.name, { reason: errorMessage(err), atMs: Date.now() });
        log.error({ subscription: sub.name, err: errorMessage(err) }, 'subscription stopped on a failure');
        // A member failing as its subscription is deleted or paused leaves nothing to report.
        if (reconciler !== undefined) settleFailures(reconciler);
      },
    );
    return sub;
  }

  const gatewayApi: Gateway = {
    config,
    catalog,
    transport,
    registry,
    ready,
    startup: () => progress,
    codec: () => need(codec, 'codec'),
    publisher: () => need(publisher, 'publisher'),
    records: () => need(records, 'records'),
    async subscribe<K extends string>(typed: BusSubscribeOptions<K>) {
      const o = untypedSubscribeOptions(typed);
      // The groups of HTTP subscriptions are the reconciler's alone (it calls startMember): a
      // library or connector member joining one took its events away from the partner's sink.
      const reserved = reservedGroupProblem(String(o.subscription));
      if (reserved !== undefined) throw new GatewayError('CEG_INVALID_OPTIONS', `subscription: ${reserved}`, { retriable: false, details: { field: 'subscription' } });
      // A kind listed twice is refused as POST /subscriptions refuses it (not a list: the subscriber's own check names it).
      if (Array.isArray(o.kinds)) assertKindsOnce(catalog, o.kinds);
      return startMember(o);
    },
    declareSubscriptions(defs) {
      declared = [...defs];
    },
    declareConnectors(views) {
      connectorViews = [...views];
      warnConnectorClashes();
    },
    subscriptionService: () => service,
    replayCoordinator: () => coordinator,
    async replay(subscription, to, opts) {
      await ready;
      const members = [...subscriptions].filter((m): m is RestartableSubscription => m instanceof RestartableSubscription && m.name === subscription);
      const kinds = members[0]?.kinds ?? [];
      const topics = topicsOfKinds(catalog, kinds);
      // Audited as an HTTP replay is, in the same log keyed by the consumer group (docs/subscriptions.md
      // "What the audit log holds"): the log records what happened to a group's offsets, whoever moved them.
      replayAuditWriter ??= new ReplayAuditWriter(transport, replayAuditTopicOf(config.subscriptions.topic));
      return await replayLocal(transport, members, topics, to, opts, { sink: replayAuditWriter, background: replayAuditWrites });
    },
    operations: operationsNow,
    subscriptionsLoaded: () => loaded ?? Promise.reject(new Error('listen() first')),
    async listen(opts = {}) {
      const auth = httpAuth();
      httpAuthInUse = auth;
      const box = secretsBox();
      const allow = parseAllowList(config.subscriptions.allowedHosts, config.subscriptions.allowedPorts);
      loaded = startSubscriptions(box, allow);
      loaded.catch((err: unknown) => {
        if (!closing.signal.aborted) log.error({ err: errorMessage(err) }, 'the subscriptions could not be loaded');
      });
      const renderMetrics = overrides.renderMetrics ?? (() => metrics.render());
      server = createHttpServer({
        ingress: () => ingress,
        api: createApiApp({
          catalog,
          registry,
          pullMaxConcurrentPerPartner: config.subscriptions.pullMaxConcurrentPerPartner,
          retryAfterS: config.ingress.retryAfterS,
          docs: { kafkaBrokers: config.kafka?.brokers, registryUrl: config.registry?.url, publicBaseUrl: config.publicBaseUrl, dataschemaBase: config.dataschemaBase },
          subscriptions: () => subscriptionsApi(service),
          replays: () => coordinator,
          operations: () => operationsApi(operationsNow()),
          metricsPublic: config.auth.metrics === 'public' || config.auth.mode === 'none',
          schemasPublic: config.auth.schemas === 'public' || config.auth.mode === 'none',
          pull: () => (service === undefined ? undefined : pullService),
          log: log.child({ component: 'http' }),
          closing: closing.signal,
          console: { catalog, transport, codec: () => need(codec, 'codec'), subscriptions: () => tailApi(service), traceTimeoutMs: CONSOLE_TRACE_TIMEOUT_MS, log: log.child({ component: 'console' }) },
        }),
        ready: readiness,
        metrics: renderMetrics,
        retryAfterS: config.ingress.retryAfterS,
        http: { ...config.http, maxBodyBytes: config.ingress.maxBodyBytes, maxApiBodyBytes: MAX_API_BODY_BYTES },
        log: log.child({ component: 'http' }),
        instruments: metrics,
        drain,
        auth,
        ...(config.http.tls === undefined ? {} : { tls: config.http.tls }),
      });
      const s = server;
      // The same answers as the API port's routes (one implementation, http/server.ts), without
      // its TLS and partner authentication; it shares the API server's drain state.
      const ops = config.ops === undefined ? undefined : createOpsServerAnswering((path, res) => answerOperational(path, res, { ready: readiness, metrics: renderMetrics, retryAfterS: config.ingress.retryAfterS, log: log.child({ component: 'ops-server' }), drain }));
      // A loading failure is logged above and reported by subscriptionsLoaded(), as without the wait.
      if (opts.whenLoaded === true) await loaded.catch(() => undefined);
      const address = await listenOn(s, config.http.port, config.http.host);
      if (ops === undefined || config.ops === undefined) return address;
      try {
        // In a cluster worker this joins the one listening socket the primary holds for every
        // worker (node:cluster shares a port by address and port), so the process group has one
        // ops listener, and its /metrics are the aggregate (overrides.renderMetrics).
        await listenOn(ops, config.ops.port, config.ops.host);
      } catch (err) {
        // Not half up: the caller sees one failure and no listener stays behind.
        await new Promise<void>((resolve) => s.close(() => resolve()));
        throw new GatewayError('CEG_INVALID_OPTIONS', `cannot listen on the ops port ${config.ops.host}:${config.ops.port} (OPS_PORT, OPS_HOST): ${errorMessage(err)}`, { retriable: false, details: { field: 'OPS_PORT' } });
      }
      opsServer = ops;
      return address;
    },
    opsAddress: () => (opsServer?.address() ?? undefined) as AddressInfo | undefined,
    metrics,
    processInstance,
    async subscriptionFigures(opts = {}) {
      const base = figures();
      if (opts.lag !== true) return base;
      const lags = new Map<string, readonly PartitionLag[]>();
      await Promise.all([...subscriptions].map(async (s) => {
        const l = await lagOf(s);
        if (l !== undefined) lags.set(s.name, l);
      }));
      return base.map((f) => (lags.has(f.name) ? { ...f, lag: lags.get(f.name)! } : f));
    },
    async close() {
      // The budget (SHUTDOWN_TIMEOUT_MS): HTTP requests in progress get most of it, the rest is kept
      // for stopping the consumers (their stop deadline), sending what is queued and closing.
      const started = performance.now();
      const budget = config.shutdownTimeoutMs;
      const left = (): number => Math.max(0, budget - (performance.now() - started));
      const httpGraceMs = Math.max(0, Math.min(config.ingress.ackTimeoutMs, budget * 0.5));
      closing.abort(new Error('gateway closing'));
      const httpDrained = server ? drain.drain(server, httpGraceMs, Math.min(1000, budget * 0.1)) : Promise.resolve();
      const front = async (): Promise<void> => {
        await httpDrained;
        // Queued produces are sent while there is time; what is left fails with its fate.
        await records?.close(Math.max(0, left() - 1000));
      };
      const back = async (): Promise<void> => {
        await ready.catch(() => undefined);
        clearTimeout(leaseTimer);
        await reconciler?.stop();
        // A failed replay was answered at once and writes its `failed` state behind the answer
        // (coordinator.ts); that write reads its record back through the store, so the store stops
        // after it — and after the HTTP drain, where a replay still running may fail and start one
        // (a drain without requests in progress ends at once). Within the time left, then given up:
        // the pause then ends with its lease, as when an instance dies (the store's stop ends the write, logged).
        await httpDrained.catch(() => undefined);
        const replays = coordinator;
        if (replays !== undefined) {
          await raceAbort(replays.settled(), AbortSignal.timeout(Math.max(0, Math.floor(left() - 1000))), () => new Error('shutdown budget spent')).catch(() => log.warn({ pending: replays.ending }, 'closing: failed replays\' states still being written are given up; their pause ends with the lease'));
        }
        await store?.stop();
        // Failure entries of replays still being written behind their answers: within the time
        // left, then given up (their write ends with the log's stop or the transport's close, logged).
        await raceAbort(replayAuditWrites.settled(), AbortSignal.timeout(Math.max(0, Math.floor(left() - 1000))), () => new Error('shutdown budget spent')).catch(() => log.warn({ pending: replayAuditWrites.pending }, 'closing: replay audit entries still being written are given up'));
        await replayLog?.stop();
        // Consumers stop: records in hand finish (or stay uncommitted and come again), offsets are committed.
        await Promise.allSettled([...subscriptions].map((s) => s.unsubscribe()));
      };
      await Promise.all([front(), back()]);
      // Last of the HTTP side: the kubelet and the scraper saw the drain until now. A scrape in
      // progress is cut (the process is about to exit; close() alone would wait for it).
      const ops = opsServer;
      if (ops !== undefined) {
        const closed = new Promise<void>((resolve) => ops.close(() => resolve()));
        ops.closeAllConnections();
        await closed;
      }
      removeSource();
      // An injected transport belongs to the caller (it may serve other members too).
      if (overrides.transport === undefined) await transport.close();
      await shutdownTracing(tracing, Math.max(0, left() - TRACING_SHUTDOWN_MARGIN_MS), log);
    },
  };
  return gatewayApi;
}

/** Starts `server` listening; resolves with its bound address, rejects with the listen error (EADDRINUSE, EACCES…). */
function listenOn(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    // Left attached once listening: a later 'error' (an accept failure such as EMFILE) is then a
    // no-op rather than an unhandled event that ends the process.
    server.once('error', reject);
    server.listen(port, host, () => resolve(server.address() as AddressInfo));
  });
}

/** Kept of the shutdown budget after the spans' export, ms: the process still exits 0 in time. */
const TRACING_SHUTDOWN_MARGIN_MS = 250;

/**
 * Exports the last spans within `withinMs`: a collector that does not answer must not hold the
 * shutdown past SHUTDOWN_TIMEOUT_MS (the process would exit 1 without saying why). The spans not
 * exported by then are dropped, and the log says so. Never rejects.
 */
async function shutdownTracing(tracing: Tracing, withinMs: number, log: Logger): Promise<void> {
  const budget = AbortSignal.timeout(Math.max(0, Math.floor(withinMs)));
  try {
    await raceAbort(tracing.shutdown(), budget, () => new Error('shutdown budget spent'));
  } catch (err) {
    if (budget.aborted) log.warn({ waitedMs: withinMs }, 'tracing: the OTLP collector did not take the last spans within the shutdown budget (SHUTDOWN_TIMEOUT_MS); they are dropped');
    else log.warn({ err: errorMessage(err) }, 'tracing: exporting the last spans failed; they are dropped');
  }
}

/** Two members' record counters added up (one subscription's members over time). */
/** The later delivery and the later failure of two members' activities. */
function latestActivity(a: SubscriptionActivity | undefined, b: SubscriptionActivity): SubscriptionActivity {
  const lastDeliveryMs = Math.max(a?.lastDeliveryMs ?? -Infinity, b.lastDeliveryMs ?? -Infinity);
  const lastError = a?.lastError === undefined || (b.lastError !== undefined && b.lastError.atMs >= a.lastError.atMs) ? b.lastError : a.lastError;
  return { ...(Number.isFinite(lastDeliveryMs) ? { lastDeliveryMs } : {}), ...(lastError === undefined ? {} : { lastError }) };
}

function addStats(a: SubscriptionStats, b: SubscriptionStats): SubscriptionStats {
  return {
    handled: a.handled + b.handled,
    retried: a.retried + b.retried,
    deadLettered: a.deadLettered + b.deadLettered,
    skipped: a.skipped + b.skipped,
    filtered: a.filtered + b.filtered,
    duplicates: a.duplicates + b.duplicates,
    rebalances: a.rebalances + b.rebalances,
    lost: a.lost + b.lost,
  };
}

/**
 * The transport as the dead-letter service uses it: a produce to a subscription's redrive topic
 * also wakes that subscription's member on this instance (issue 10: an idle subscription has no
 * member, and the work check watches the kinds' topics, not the redrive topics).
 */
function wakingOnRedrive(t: Transport, wake: (group: string) => void): Transport {
  const suffix = redriveTopic('');
  return new Proxy(t, {
    get(target, prop) {
      if (prop === 'produce') {
        return async (...args: Parameters<Transport['produce']>) => {
          const positions = await target.produce(...args);
          if (args[0].endsWith(suffix)) wake(args[0].slice(0, -suffix.length));
          return positions;
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
