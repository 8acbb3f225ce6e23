/**
 * Prometheus metrics (text format, base units, bounded labels: never an event id). Values are
 * read from the components' counters at scrape time, so the hot path pays nothing.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { PublisherStats } from '../bus/publisher/index.js';
import type { SubscriptionStats } from '../bus/subscriber/index.js';
import type { AuthStats } from '../http/auth/index.js';
import type { PullStats } from '../bus/subscriptions/index.js';

export interface MetricsSources {
  readonly publisher: () => PublisherStats | undefined;
  readonly ready: () => boolean;
  /** Subscriptions of this process; `up: false` = its consumer stopped on a failure. */
  readonly subscriptions: () => readonly { readonly name: string; readonly up: boolean; readonly stats: SubscriptionStats | undefined; readonly partitions?: number }[];
  /** Authentication counts (issue 11); undefined before the server listens. */
  readonly auth?: () => AuthStats | undefined;
  /** Pull subscriptions served by this instance, by group (issue 9); absent: none. */
  readonly pull?: () => ReadonlyMap<string, PullStats>;
}

export function createMetrics(src: MetricsSources): { registry: Registry; render: () => Promise<{ contentType: string; body: string }> } {
  const registry = new Registry();
  const fromStats = (name: string, help: string, pick: (s: PublisherStats) => number): void => {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const s = src.publisher();
        this.reset();
        if (s) this.inc(pick(s));
      },
    });
  };
  fromStats('ce_gateway_publish_enqueued_total', 'Records accepted into the outbound queue.', (s) => s.enqueued);
  fromStats('ce_gateway_publish_acknowledged_total', 'Records the broker acknowledged (acks=all).', (s) => s.published);
  fromStats('ce_gateway_publish_failed_total', 'Records whose retry budget ran out.', (s) => s.failed);
  fromStats('ce_gateway_publish_rejected_total', 'Records refused because the outbound queue was full.', (s) => s.rejected);
  fromStats('ce_gateway_publish_retried_total', 'Record send attempts retried after a transient failure.', (s) => s.retried);
  new Gauge({
    name: 'ce_gateway_publish_queue_records',
    help: 'Records waiting in the outbound queue.',
    registers: [registry],
    collect() {
      this.set(src.publisher()?.queued ?? 0);
    },
  });
  new Counter({
    name: 'ce_gateway_auth_failures_total',
    help: 'Requests refused 401: no, a malformed or an unknown credential.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(src.auth?.()?.failures ?? 0);
    },
  });
  new Counter({
    name: 'ce_gateway_rate_limited_total',
    help: 'Requests refused 429, by policy: requests (a partner\'s requests/s), events (its events/s), failures (failed attempts from one address).',
    labelNames: ['policy'],
    registers: [registry],
    collect() {
      this.reset();
      const l = src.auth?.()?.limited;
      for (const policy of ['requests', 'events', 'failures'] as const) this.inc({ policy }, l?.[policy] ?? 0);
    },
  });
  new Gauge({
    name: 'ce_gateway_ready',
    help: '1 when the gateway has its topics and schemas and serves events.',
    registers: [registry],
    collect() {
      this.set(src.ready() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'ce_gateway_subscription_up',
    help: '1 while a subscription consumes; 0 when its consumer stopped on a failure.',
    labelNames: ['subscription'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of src.subscriptions()) this.set({ subscription: s.name }, s.up ? 1 : 0);
    },
  });
  new Gauge({
    name: 'ce_gateway_subscription_partitions',
    help: 'Partitions this instance holds in the subscription\'s consumer group (instances share a group\'s partitions).',
    labelNames: ['subscription'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of src.subscriptions()) this.set({ subscription: s.name }, s.partitions ?? 0);
    },
  });
  new Counter({
    name: 'ce_gateway_subscription_records_total',
    help: 'Records per subscription and outcome (handled, retried, dead_lettered, skipped: other kinds, filtered: refused by the attribute filters).',
    labelNames: ['subscription', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of src.subscriptions()) {
        if (s.stats === undefined) continue;
        this.inc({ subscription: s.name, outcome: 'handled' }, s.stats.handled);
        this.inc({ subscription: s.name, outcome: 'retried' }, s.stats.retried);
        this.inc({ subscription: s.name, outcome: 'dead_lettered' }, s.stats.deadLettered);
        this.inc({ subscription: s.name, outcome: 'skipped' }, s.stats.skipped);
        this.inc({ subscription: s.name, outcome: 'filtered' }, s.stats.filtered);
      }
    },
  });
  new Counter({
    name: 'ce_gateway_pull_records_total',
    help: 'Records of pull subscriptions answered by this instance, per outcome (delivered: handed out, again each time it is pulled again; skipped: other kinds or refused by the filters; dead_lettered: poison, written to <group>.dlq).',
    labelNames: ['subscription', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [group, s] of src.pull?.() ?? []) {
        this.inc({ subscription: group, outcome: 'delivered' }, s.delivered);
        this.inc({ subscription: group, outcome: 'skipped' }, s.skipped);
        this.inc({ subscription: group, outcome: 'dead_lettered' }, s.deadLettered);
      }
    },
  });
  new Counter({
    name: 'ce_gateway_pull_commits_total',
    help: 'Pull cursors committed through this instance.',
    labelNames: ['subscription'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [group, s] of src.pull?.() ?? []) this.inc({ subscription: group }, s.commits);
    },
  });
  return { registry, render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }) };
}
