/**
 * The gateway's Prometheus instruments (issue 15 "Metrics"): one set of metric families per
 * prom-client `Registry`, created once and shared by every component that records into it.
 * Families named in issue 15 are a contract for dashboards: keep their names and labels.
 *
 * Conventions (DESIGN "Conventions users already know"): base units in names (`_seconds`,
 * `_bytes`, `_total`), bounded labels only — an event kind's business name, a subscription's
 * name, a route from a fixed list, a status code, an error code; never an event id, a path with
 * ids in it or a partner's free text.
 *
 * Cost: recording is a counter increment or a histogram observation on a label set prom-client
 * looks up in a map; figures that components already count (publisher and subscription stats)
 * are read at scrape time instead (see `ScrapeSource`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Buckets (seconds) of the latency histograms: 1 ms … 30 s. */
export const LATENCY_BUCKETS_S: readonly number[] = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);

/** Routes of the HTTP surface, the values of the `route` label (anything else is `other`). */
export const HTTP_ROUTES = ['/events', '/healthz', '/readyz', '/metrics', '/catalog', '/asyncapi', '/schemas', '/subscriptions', 'other'] as const;
export type HttpRoute = (typeof HTTP_ROUTES)[number];

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The `route` label of a request path (origin-form, no query): the first segment, bounded to {@link HTTP_ROUTES}. */
export function routeOf(path: string): HttpRoute {
  if (path === '/events' || path === '/healthz' || path === '/readyz' || path === '/metrics' || path === '/catalog') return path;
  if (path === '/asyncapi.json' || path === '/asyncapi.yaml') return '/asyncapi';
  if (path.startsWith('/schemas/')) return '/schemas';
  if (path === '/subscriptions' || path.startsWith('/subscriptions/')) return '/subscriptions';
  return 'other';
}

/** The `method` label: a standard method, else `other` (a client cannot grow the label set). */
export function methodOf(method: string | undefined): string {
  return method !== undefined && METHODS.has(method) ? method : 'other';
}

/** Codes of `ce_gateway_produce_errors_total` present (at 0) from the start: the transport's retriable failures. */
export const PRODUCE_ERROR_CODES: readonly string[] = Object.freeze(['CEG_BROKER_UNAVAILABLE', 'CEG_DELIVERY_TIMEOUT']);

/** Outcomes of an event at ingress (`ce_gateway_ingress_events_total{outcome}`). */
export type IngressOutcome = 'accepted' | 'refused' | 'failed';

/** A subscription's figures at scrape time (also what `GET /subscriptions/{name}/status` reads). */
export interface SubscriptionFigures {
  readonly name: string;
  /** false = its consumer stopped on a failure. */
  readonly up: boolean;
  /** Partitions this instance holds in the group. */
  readonly partitions: number;
  readonly handled: number;
  readonly retried: number;
  readonly deadLettered: number;
  readonly skipped: number;
  readonly filtered: number;
}

/** One partition's lag of a subscription: records between the group's committed offset and the end, at the time of reading. */
export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  /** Records not yet committed by the group (end offset − committed offset; − the subscription's start position where nothing is committed yet). */
  readonly lag: number;
}

/**
 * What a component exposes for scraping; every method is called at scrape time only, and must
 * not throw (`lag` may reject: that subscription's lag is left out of that scrape).
 */
export interface ScrapeSource {
  readonly publisher?: () => { readonly enqueued: number; readonly published: number; readonly failed: number; readonly rejected: number; readonly retried: number; readonly queued: number } | undefined;
  readonly ready?: () => boolean;
  readonly subscriptions?: () => readonly SubscriptionFigures[];
  readonly lag?: () => Promise<ReadonlyMap<string, readonly PartitionLag[]>>;
  /**
   * The outbox backlog, read from the table at scrape time; rejects when the table cannot be read
   * (the backlog gauges then have no sample and `ce_gateway_outbox_database_up` is 0).
   */
  readonly outbox?: () => Promise<{ readonly backlogRows: number; readonly oldestRowAgeSeconds: number } | undefined>;
  /**
   * The outbox relay's own counts (the `outbox relay` process): rows published, produce calls that
   * failed, rows found too large for their topic (each time met), rows that cannot be made a record
   * (each time met), (topic, key) pairs held back now, failures on its database.
   */
  readonly outboxRelay?: () => { readonly published: number; readonly failedAttempts: number; readonly tooLargeRows: number; readonly invalidRows?: number; readonly heldKeys: number; readonly dbErrors?: number } | undefined;
  /**
   * Out-of-range resets of subscriptions' positions (records deleted before they were read, a topic
   * created again) since the transport was made, by group then reason (src/transport/out-of-range.ts).
   */
  readonly offsetResets?: () => ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** Pull subscriptions served by this instance, by group (issue 9). */
  readonly pull?: () => ReadonlyMap<string, { readonly delivered: number; readonly skipped: number; readonly deadLettered: number; readonly commits: number }>;
  /** Authentication counts (issue 11): 401s, and 429s by policy; undefined before the server listens. */
  readonly auth?: () => { readonly failures: number; readonly limited: { readonly requests: number; readonly events: number; readonly failures: number } } | undefined;
  /** Active subscriptions of this instance with a consumer-group member now, and waiting for work without one (issue 10). */
  readonly members?: () => { readonly running: number; readonly idle: number } | undefined;
  /**
   * Subscriptions (by group) some of whose stored kinds their owner may not read now, with how many
   * (docs/security.md "Revoking a permission"); the others are left out.
   */
  readonly forbiddenKinds?: () => ReadonlyMap<string, number>;
  /** Replay audit entries that could not be written behind a failed replay's answer (each logged at error). */
  readonly replayAudit?: () => { readonly writeFailures: number };
}

/** Options of {@link GatewayMetrics.for}. */
export interface MetricsOptions {
  /** Add prom-client's default process collectors (`process_*`, `nodejs_*`) to the registry; default true. Only once per registry. */
  readonly defaultMetrics?: boolean;
}

const byRegistry = new WeakMap<Registry, GatewayMetrics>();

/**
 * The instruments of one registry. `GatewayMetrics.for(registry)` returns the same instance for
 * the same registry (families are registered once; a second gateway sharing the registry adds
 * its counts to the same series).
 */
export class GatewayMetrics {
  readonly registry: Registry;
  readonly #sources = new Set<ScrapeSource>();
  readonly #httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly #httpDuration: Histogram<'route'>;
  readonly #ingressEvents: Counter<'kind' | 'outcome'>;
  readonly #ingressBytes: Counter<'kind'>;
  readonly #refusals: Counter<'code'>;
  readonly #produceDuration: Histogram;
  readonly #produceErrors: Counter<'code'>;
  readonly #deliveryDuration: Histogram<'subscription'>;
  readonly #deliveryBySubscription = new Map<string, Histogram.Internal<'subscription'>>();

  /** The instruments of `registry` (a new registry when omitted). */
  static for(registry: Registry = new Registry(), opts: MetricsOptions = {}): GatewayMetrics {
    let m = byRegistry.get(registry);
    if (m === undefined) {
      m = new GatewayMetrics(registry, opts);
      byRegistry.set(registry, m);
    }
    return m;
  }

  private constructor(registry: Registry, opts: MetricsOptions) {
    this.registry = registry;
    const registers = [registry];
    // A library user's registry may carry the default collectors already: registering twice throws.
    if (opts.defaultMetrics !== false && registry.getSingleMetric('process_cpu_user_seconds_total') === undefined) collectDefaultMetrics({ register: registry });
    this.#httpRequests = new Counter({ name: 'ce_gateway_http_requests_total', help: 'HTTP requests answered, by route (a fixed list), method and status.', labelNames: ['route', 'method', 'status'], registers });
    this.#httpDuration = new Histogram({ name: 'ce_gateway_http_request_duration_seconds', help: 'Time from a request\'s headers to the end of its answer, seconds.', labelNames: ['route'], buckets: [...LATENCY_BUCKETS_S], registers });
    this.#ingressEvents = new Counter({ name: 'ce_gateway_ingress_events_total', help: 'Events received on POST /events by kind (business name; "unknown" when not in the catalog or internal: internal kinds are never accepted over HTTP and never named here) and outcome (accepted: on Kafka; refused: invalid, nothing produced; failed: not confirmed by the broker in time).', labelNames: ['kind', 'outcome'], registers });
    this.#ingressBytes = new Counter({ name: 'ce_gateway_ingress_bytes_total', help: 'Bytes of accepted events as written to Kafka (key, value and headers), by kind.', labelNames: ['kind'], registers });
    this.#refusals = new Counter({ name: 'ce_gateway_ingress_refusals_total', help: 'HTTP requests refused (problem+json) or aborted by the client, by error code ("aborted" for a client that hung up).', labelNames: ['code'], registers });
    this.#produceDuration = new Histogram({ name: 'ce_gateway_produce_duration_seconds', help: 'Duration of one produce request to the broker (acks=all), seconds, failed ones included.', buckets: [...LATENCY_BUCKETS_S], registers });
    this.#produceErrors = new Counter({ name: 'ce_gateway_produce_errors_total', help: 'Failed produce requests by error code (each retry attempt counts).', labelNames: ['code'], registers });
    this.#deliveryDuration = new Histogram({ name: 'ce_gateway_delivery_duration_seconds', help: 'Duration of one delivery to a subscription\'s handler or sink (webhook call included), seconds, whatever its outcome.', labelNames: ['subscription'], buckets: [...LATENCY_BUCKETS_S], registers });
    // Series exist from the start (a dashboard's rate() needs a 0 before the first failure).
    for (const code of PRODUCE_ERROR_CODES) this.#produceErrors.inc({ code }, 0);
    this.#scraped();
  }

  /** Adds a source read at scrape time; returns its remover (call it when the component closes). */
  addSource(src: ScrapeSource): () => void {
    this.#sources.add(src);
    return () => void this.#sources.delete(src);
  }

  /** One HTTP answer: its route label (see {@link routeOf}), method, status and duration. */
  httpRequest(route: HttpRoute, method: string | undefined, status: number, seconds: number): void {
    this.#httpRequests.inc({ route, method: methodOf(method), status: String(status) });
    this.#httpDuration.observe({ route }, seconds);
  }

  /** `n` events of `kind` at ingress with `outcome`; `bytes` (accepted ones) as written to Kafka. */
  ingressEvents(kind: string, outcome: IngressOutcome, n: number, bytes = 0): void {
    if (n > 0) this.#ingressEvents.inc({ kind, outcome }, n);
    if (bytes > 0) this.#ingressBytes.inc({ kind }, bytes);
  }

  /** One refused or aborted request; `code` is a CEG_* code or `aborted`. */
  refusal(code: string): void {
    this.#refusals.inc({ code });
  }

  /** One produce request's duration, seconds, and its error code when it failed. */
  produce(seconds: number, errorCode?: string): void {
    this.#produceDuration.observe(seconds);
    if (errorCode !== undefined) this.#produceErrors.inc({ code: errorCode });
  }

  /** One delivery (handler call) of a subscription, seconds. */
  delivery(subscription: string, seconds: number): void {
    // The labelled child per subscription, found once: `observe({ subscription })` hashes the
    // labels into a key on every call (one per delivered event). Bounded like the label itself.
    let child = this.#deliveryBySubscription.get(subscription);
    if (child === undefined) {
      child = this.#deliveryDuration.labels({ subscription });
      if (this.#deliveryBySubscription.size < 10_000) this.#deliveryBySubscription.set(subscription, child);
    }
    child.observe(seconds);
  }

  /**
   * Drops a subscription's `ce_gateway_delivery_duration_seconds` series (17 per subscription) once
   * the subscription is gone from this process (deleted, or a library subscription unsubscribed),
   * so the label set stays bounded by the subscriptions that exist (issue 10). The scrape-time
   * families drop theirs by themselves.
   */
  forgetSubscription(subscription: string): void {
    this.#deliveryBySubscription.delete(subscription);
    this.#deliveryDuration.remove({ subscription });
  }

  /** Text format, for `GET /metrics`. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** The families whose values are read from the sources at scrape time. */
  #scraped(): void {
    const registers = [this.registry];
    const sources = this.#sources;
    const publisherTotal = (name: string, help: string, pick: (s: NonNullable<ReturnType<NonNullable<ScrapeSource['publisher']>>>) => number): void => {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          for (const src of sources) {
            const s = src.publisher?.();
            if (s !== undefined) this.inc(pick(s));
          }
        },
      });
    };
    publisherTotal('ce_gateway_publish_enqueued_total', 'Records accepted into the outbound queue.', (s) => s.enqueued);
    publisherTotal('ce_gateway_publish_acknowledged_total', 'Records the broker acknowledged (acks=all).', (s) => s.published);
    publisherTotal('ce_gateway_publish_failed_total', 'Records whose retry budget ran out.', (s) => s.failed);
    publisherTotal('ce_gateway_publish_rejected_total', 'Records refused because the outbound queue was full.', (s) => s.rejected);
    publisherTotal('ce_gateway_publish_retried_total', 'Record send attempts retried after a transient failure.', (s) => s.retried);
    new Gauge({
      name: 'ce_gateway_publish_queue_records',
      help: 'Records waiting in the outbound queue (its depth).',
      registers,
      collect() {
        let n = 0;
        for (const src of sources) n += src.publisher?.()?.queued ?? 0;
        this.set(n);
      },
    });
    new Gauge({
      name: 'ce_gateway_ready',
      // GATEWAY_WORKERS > 1 (cluster-metrics.ts): ready when every worker is.
      aggregator: 'min',
      help: '1 when the gateway has its topics and schemas and serves events (0 while starting or draining).',
      registers,
      collect() {
        const rs = [...sources].flatMap((s) => (s.ready === undefined ? [] : [s.ready()]));
        this.set(rs.length > 0 && rs.every(Boolean) ? 1 : 0);
      },
    });
    const subs = (): SubscriptionFigures[] => [...sources].flatMap((s) => s.subscriptions?.() ?? []);
    new Gauge({
      name: 'ce_gateway_subscription_up',
      // Across workers: 0 when any worker's member stopped on a failure.
      aggregator: 'min',
      help: '1 while a subscription consumes; 0 when its consumer stopped on a failure.',
      labelNames: ['subscription'],
      registers,
      collect() {
        this.reset();
        for (const s of subs()) this.set({ subscription: s.name }, s.up ? 1 : 0);
      },
    });
    new Gauge({
      name: 'ce_gateway_subscription_partitions',
      help: 'Partitions this instance holds in the subscription\'s consumer group (instances share a group\'s partitions).',
      labelNames: ['subscription'],
      registers,
      collect() {
        this.reset();
        for (const s of subs()) this.set({ subscription: s.name }, s.partitions);
      },
    });
    const auths = (): { failures: number; limited: { requests: number; events: number; failures: number } }[] =>
      [...sources].flatMap((src) => {
        const a = src.auth?.();
        return a === undefined ? [] : [a];
      });
    new Counter({
      name: 'ce_gateway_auth_failures_total',
      help: 'Requests refused 401: no, a malformed or an unknown credential.',
      registers,
      collect() {
        this.reset();
        this.inc(auths().reduce((n, a) => n + a.failures, 0));
      },
    });
    new Counter({
      name: 'ce_gateway_rate_limited_total',
      help: "Requests refused 429, by policy: requests (a partner's requests/s), events (its events/s), failures (failed attempts from one address).",
      labelNames: ['policy'],
      registers,
      collect() {
        this.reset();
        for (const policy of ['requests', 'events', 'failures'] as const) this.inc({ policy }, auths().reduce((n, a) => n + a.limited[policy], 0));
      },
    });
    new Gauge({
      name: 'ce_gateway_subscription_members',
      help: 'Active subscriptions of this instance by member state: running (a consumer-group member consumes) or idle (no member; started when the group has lag).',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const ms = [...sources].flatMap((src) => {
          const m = src.members?.();
          return m === undefined ? [] : [m];
        });
        if (ms.length === 0) return;
        this.set({ state: 'running' }, ms.reduce((a, m) => a + m.running, 0));
        this.set({ state: 'idle' }, ms.reduce((a, m) => a + m.idle, 0));
      },
    });
    new Gauge({
      name: 'ce_gateway_subscription_forbidden_kinds',
      // Every worker reads the same definitions and partners file: the same figure, not a share to sum.
      aggregator: 'max',
      help: "Stored kinds of a subscription its owner may not read now (not in its subscribe permission, or an owner PARTNERS_FILE no longer names): not delivered (their topics' positions held, unless a permitted kind shares the topic). Only subscriptions with some.",
      labelNames: ['subscription'],
      registers,
      collect() {
        // Rebuilt at each scrape: a subscription repaired, its permission restored or deleted has no series.
        this.reset();
        for (const src of sources) for (const [subscription, n] of src.forbiddenKinds?.() ?? []) if (n > 0) this.set({ subscription }, n);
      },
    });
    new Counter({
      name: 'ce_gateway_subscription_records_total',
      help: 'Records per subscription and outcome (handled, retried, dead_lettered, skipped: other kinds, filtered: refused by the attribute filters).',
      labelNames: ['subscription', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const s of subs()) {
          this.inc({ subscription: s.name, outcome: 'handled' }, s.handled);
          this.inc({ subscription: s.name, outcome: 'retried' }, s.retried);
          this.inc({ subscription: s.name, outcome: 'dead_lettered' }, s.deadLettered);
          this.inc({ subscription: s.name, outcome: 'skipped' }, s.skipped);
          this.inc({ subscription: s.name, outcome: 'filtered' }, s.filtered);
        }
      },
    });
    new Counter({
      name: 'ce_gateway_retries_total',
      help: 'Delivery attempts of a subscription that ended in a retry (the event comes again later).',
      labelNames: ['subscription'],
      registers,
      collect() {
        this.reset();
        for (const s of subs()) this.inc({ subscription: s.name }, s.retried);
      },
    });
    new Counter({
      name: 'ce_gateway_dead_letters_total',
      help: 'Events a subscription moved to its dead-letter topic (<subscription>.dlq).',
      labelNames: ['subscription'],
      registers,
      collect() {
        this.reset();
        for (const s of subs()) this.inc({ subscription: s.name }, s.deadLettered);
      },
    });
    new Gauge({
      name: 'ce_gateway_subscription_lag',
      // Every worker reads the same group-wide lag from Kafka: not a share to sum.
      aggregator: 'max',
      help: 'Records not yet committed by a subscription\'s consumer group (end offset minus committed offset) on partition N of the topics it reads, summed over those topics, at scrape time.',
      // Issue 15 names the labels {subscription,partition}: a contract for dashboards. A
      // subscription reading several topics (several kinds, its retry and redrive topics) has one
      // sample per partition number, the sum over its topics; per topic: GET …/status
      // (docs/observability.md).
      labelNames: ['subscription', 'partition'],
      registers,
      async collect() {
        this.reset();
        for (const src of sources) {
          if (src.lag === undefined) continue;
          const all = await src.lag().catch(() => new Map<string, readonly PartitionLag[]>());
          for (const [subscription, parts] of all) {
            for (const [partition, lag] of lagByPartition(parts)) this.set({ subscription, partition: String(partition) }, lag);
          }
        }
      },
    });
    new Counter({
      name: 'ce_gateway_offset_resets_total',
      help: 'Positions of a subscription found outside their partition\'s log (OFFSET_OUT_OF_RANGE) and moved to the log start, by subscription (its consumer group) and reason (below-log-start: records deleted before they were read; past-end: the topic created again; position-unknown).',
      labelNames: ['subscription', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const src of sources) for (const [subscription, byReason] of src.offsetResets?.() ?? []) for (const [reason, n] of byReason) this.inc({ subscription, reason }, n);
      },
    });
    new Counter({
      name: 'ce_gateway_pull_records_total',
      help: 'Records of pull subscriptions answered by this instance, per outcome (delivered: handed out, again each time it is pulled again; skipped: other kinds or refused by the filters; dead_lettered: poison, written to <group>.dlq).',
      labelNames: ['subscription', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const src of sources) {
          for (const [group, s] of src.pull?.() ?? []) {
            this.inc({ subscription: group, outcome: 'delivered' }, s.delivered);
            this.inc({ subscription: group, outcome: 'skipped' }, s.skipped);
            this.inc({ subscription: group, outcome: 'dead_lettered' }, s.deadLettered);
          }
        }
      },
    });
    new Counter({
      name: 'ce_gateway_replay_audit_write_failures_total',
      help: 'Replay audit entries that could not be written (of failed replays, written behind the error\'s answer; of finished replays, whose answer carries auditFailure; each logged at error): the audit log lacks them.',
      registers,
      collect() {
        this.reset();
        this.inc([...sources].reduce((n, src) => n + (src.replayAudit?.().writeFailures ?? 0), 0));
      },
    });
    new Counter({
      name: 'ce_gateway_pull_commits_total',
      help: 'Pull cursors committed through this instance.',
      labelNames: ['subscription'],
      registers,
      collect() {
        this.reset();
        for (const src of sources) for (const [group, s] of src.pull?.() ?? []) this.inc({ subscription: group }, s.commits);
      },
    });
    // Only where a relay runs (the `outbox relay` process): a gateway without one has no sample of
    // these, not 0, so an `absent()` alert fires for a deployment that forgot its relay (a 0
    // there read as "a relay that has published nothing yet").
    const relayFamily = (name: string, help: string, pick: (r: NonNullable<ReturnType<NonNullable<ScrapeSource['outboxRelay']>>>) => number, kind: 'counter' | 'gauge'): void => {
      const collect = function (this: Counter | Gauge): void {
        this.reset();
        let relays = 0;
        for (const src of sources) {
          const r = src.outboxRelay?.();
          if (r === undefined) continue;
          relays++;
          this.inc(pick(r));
        }
        if (relays === 0) this.remove();
      };
      if (kind === 'counter') new Counter({ name, help, registers, collect });
      else new Gauge({ name, help, registers, collect });
    };
    relayFamily('ce_gateway_outbox_published_total', 'Outbox rows the relay published (acknowledged by the broker) and marked sent.', (r) => r.published, 'counter');
    relayFamily('ce_gateway_outbox_publish_failures_total', 'Produce calls of the outbox relay that failed (their rows stay in the outbox and are retried).', (r) => r.failedAttempts, 'counter');
    relayFamily('ce_gateway_outbox_too_large_rows_total', 'Outbox rows found larger than their topic\'s max.message.bytes, each time the relay met one (not produced; its key is held back on that topic).', (r) => r.tooLargeRows, 'counter');
    relayFamily('ce_gateway_outbox_invalid_rows_total', 'Outbox rows that cannot be made a Kafka record (NULL or mismatched header arrays, a bad timestamp), each time the relay met one (not produced; its key is held back on that topic).', (r) => r.invalidRows ?? 0, 'counter');
    relayFamily('ce_gateway_outbox_held_keys', '(topic, partition key) pairs the outbox relay holds back now (a row could not be produced or is too large); retried after backoff.', (r) => r.heldKeys, 'gauge');
    relayFamily('ce_gateway_outbox_database_errors_total', 'Failures of the outbox relay on its database (cycles, LISTEN connections, purges, idle pooled connections lost); the relay backs off and retries.', (r) => r.dbErrors ?? 0, 'counter');
    /**
     * One reading of the outbox sources: the summed backlog of those that answered, or undefined
     * when none has an outbox or one failed (the backlog is then unknown, not 0); `up`: whether
     * every source's table could be read (undefined when none has an outbox).
     */
    type OutboxReading = { readonly backlog: { backlogRows: number; oldestRowAgeSeconds: number } | undefined; readonly up: boolean | undefined };
    const outbox = async (): Promise<OutboxReading> => {
      let out: { backlogRows: number; oldestRowAgeSeconds: number } | undefined;
      let up: boolean | undefined;
      for (const src of sources) {
        if (src.outbox === undefined) continue;
        let o: { readonly backlogRows: number; readonly oldestRowAgeSeconds: number } | undefined;
        try {
          o = await src.outbox();
        } catch {
          up = false;
          continue;
        }
        up ??= true;
        if (o === undefined) continue;
        out = { backlogRows: (out?.backlogRows ?? 0) + o.backlogRows, oldestRowAgeSeconds: Math.max(out?.oldestRowAgeSeconds ?? 0, o.oldestRowAgeSeconds) };
      }
      return { backlog: up === false ? undefined : out, up };
    };
    /** A gauge without labels shows no sample at all (rather than 0) while its value is unknown. */
    const setOrAbsent = (g: Gauge, v: number | undefined): void => {
      g.reset();
      if (v === undefined) g.remove();
      else g.set(v);
    };
    // Read once per scrape by the first of the three families; the others use the same reading
    // (prom-client calls every collect() synchronously up to its first await, in this order).
    let lastOutbox: Promise<OutboxReading> | undefined;
    new Gauge({
      name: 'ce_gateway_outbox_backlog_rows',
      // The same table read by every worker.
      aggregator: 'max',
      help: 'Committed outbox rows not yet published by the relay (no sample while the outbox database cannot be read).',
      registers,
      async collect() {
        lastOutbox = outbox();
        setOrAbsent(this, (await lastOutbox).backlog?.backlogRows);
      },
    });
    new Gauge({
      name: 'ce_gateway_outbox_oldest_row_age_seconds',
      // The same table read by every worker.
      aggregator: 'max',
      help: 'Age of the oldest outbox row not yet published, seconds (0 when none; no sample while the outbox database cannot be read).',
      registers,
      async collect() {
        setOrAbsent(this, (await (lastOutbox ?? outbox())).backlog?.oldestRowAgeSeconds);
      },
    });
    new Gauge({
      name: 'ce_gateway_outbox_database_up',
      // Down when any worker cannot read it.
      aggregator: 'min',
      help: 'Whether the outbox relay could read its outbox table at this scrape (1) or not (0).',
      registers,
      async collect() {
        const reading = lastOutbox ?? outbox();
        lastOutbox = undefined;
        const up = (await reading).up;
        setOrAbsent(this, up === undefined ? undefined : up ? 1 : 0);
      },
    });
  }
}

/**
 * A subscription's lag per partition number, summed over its topics (`ce_gateway_subscription_lag`
 * has no `topic` label: issue 15 names `{subscription,partition}`), in the order first met. Pure.
 */
export function lagByPartition(parts: readonly PartitionLag[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of parts) out.set(p.partition, (out.get(p.partition) ?? 0) + p.lag);
  return out;
}
