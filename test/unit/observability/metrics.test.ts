/**
 * Issue 15 "Metrics": the family names are a contract; labels are bounded whatever the clients
 * send; one set of instruments per registry (a library user passes their own, or reads the bus's).
 */
import fc from 'fast-check';
import { AggregatorRegistry, Registry, collectDefaultMetrics } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { GatewayMetrics, HTTP_ROUTES, methodOf, routeOf } from '../../../src/observability/index.js';

const CONTRACT = [
  'ce_gateway_http_requests_total', 'ce_gateway_http_request_duration_seconds', 'ce_gateway_ingress_events_total', 'ce_gateway_ingress_bytes_total',
  'ce_gateway_ingress_refusals_total', 'ce_gateway_produce_duration_seconds', 'ce_gateway_produce_errors_total', 'ce_gateway_publish_queue_records',
  'ce_gateway_subscription_lag', 'ce_gateway_delivery_duration_seconds', 'ce_gateway_retries_total', 'ce_gateway_dead_letters_total',
  'ce_gateway_outbox_backlog_rows', 'ce_gateway_outbox_oldest_row_age_seconds',
];

describe('GatewayMetrics', () => {
  it('registers every family the issue names, with Node process metrics, once per registry', async () => {
    const registry = new Registry();
    const m = GatewayMetrics.for(registry);
    expect(GatewayMetrics.for(registry)).toBe(m);
    const names = (await registry.getMetricsAsJSON()).map((x) => x.name);
    for (const n of CONTRACT) expect(names, n).toContain(n);
    expect(names).toContain('process_cpu_user_seconds_total');
    expect(names.some((n) => n.startsWith('nodejs_'))).toBe(true);
  });

  it('ce_gateway_subscription_forbidden_kinds is the same figure on every worker: the cluster aggregate takes the highest, not the sum', async () => {
    const worker = async (): Promise<Awaited<ReturnType<Registry['getMetricsAsJSON']>>> => {
      const m = GatewayMetrics.for(new Registry(), { defaultMetrics: false });
      m.addSource({ forbiddenKinds: () => new Map([['g', 3]]) });
      return await m.registry.getMetricsAsJSON();
    };
    const all = AggregatorRegistry.aggregate([await worker(), await worker()]);
    expect(await all.metrics()).toContain('ce_gateway_subscription_forbidden_kinds{subscription="g"} 3');
  });

  it('ce_gateway_offset_resets_total: every source\'s resets by subscription and reason, summed over sources', async () => {
    const m = GatewayMetrics.for(new Registry(), { defaultMetrics: false });
    m.addSource({ offsetResets: () => new Map([['g', new Map([['below-log-start', 2], ['past-end', 1]])]]) });
    m.addSource({ offsetResets: () => new Map([['g', new Map([['below-log-start', 1]])]]) });
    const text = await m.registry.metrics();
    expect(text).toContain('ce_gateway_offset_resets_total{subscription="g",reason="below-log-start"} 3');
    expect(text).toContain('ce_gateway_offset_resets_total{subscription="g",reason="past-end"} 1');
  });

  it('ce_gateway_subscription_lag has the labels issue 15 names, {subscription,partition}, a partition\'s lag summed over the subscription\'s topics', async () => {
    const m = GatewayMetrics.for(new Registry(), { defaultMetrics: false });
    m.addSource({ lag: () => Promise.resolve(new Map([['g', [{ topic: 'a', partition: 0, lag: 3 }, { topic: 'a', partition: 1, lag: 4 }, { topic: 'g.retry', partition: 0, lag: 2 }]]])) });
    const samples = (await m.registry.getSingleMetric('ce_gateway_subscription_lag')!.get()).values;
    for (const s of samples) expect(Object.keys(s.labels).sort()).toEqual(['partition', 'subscription']);
    expect(samples.map((s) => [s.labels, s.value])).toEqual([[{ subscription: 'g', partition: '0' }, 5], [{ subscription: 'g', partition: '1' }, 4]]);
  });

  it('takes a registry that has the default collectors already', () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    expect(() => GatewayMetrics.for(registry)).not.toThrow();
  });

  it('reads scrape-time figures from every source and forgets a removed one', async () => {
    const m = GatewayMetrics.for(new Registry());
    const remove = m.addSource({
      subscriptions: () => [{ name: 's1', up: true, partitions: 3, handled: 5, retried: 2, deadLettered: 1, skipped: 0, filtered: 0 }],
      lag: () => Promise.resolve(new Map([['s1', [{ topic: 't', partition: 0, lag: 7 }]]])),
      outbox: () => Promise.resolve({ backlogRows: 4, oldestRowAgeSeconds: 12.5 }),
      forbiddenKinds: () => new Map([['s1', 2], ['s0', 0]]),
    });
    let text = (await m.render()).body;
    expect(text).toContain('ce_gateway_subscription_forbidden_kinds{subscription="s1"} 2');
    expect(text).not.toContain('subscription="s0"');
    expect(text).toContain('ce_gateway_subscription_lag{subscription="s1",partition="0"} 7');
    expect(text).toContain('ce_gateway_retries_total{subscription="s1"} 2');
    expect(text).toContain('ce_gateway_dead_letters_total{subscription="s1"} 1');
    expect(text).toContain('ce_gateway_outbox_backlog_rows 4');
    expect(text).toContain('ce_gateway_outbox_oldest_row_age_seconds 12.5');
    remove();
    text = (await m.render()).body;
    expect(text).not.toContain('subscription="s1"');
  });

  it('outbox database unreachable: the backlog gauges have no sample (not 0), ce_gateway_outbox_database_up is 0; back: the figures and 1', async () => {
    const m = GatewayMetrics.for(new Registry(), { defaultMetrics: false });
    let down = true;
    m.addSource({
      outbox: () => (down ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })) : Promise.resolve({ backlogRows: 0, oldestRowAgeSeconds: 0 })),
      outboxRelay: () => ({ published: 0, failedAttempts: 0, tooLargeRows: 0, heldKeys: 0, dbErrors: 7 }),
    });
    const samples = (text: string): Map<string, string> => new Map(text.split('\n').filter((l) => l.startsWith('ce_gateway_outbox_')).map((l) => l.split(' ') as [string, string]));
    let s = samples((await m.render()).body);
    expect(s.has('ce_gateway_outbox_backlog_rows')).toBe(false);
    expect(s.has('ce_gateway_outbox_oldest_row_age_seconds')).toBe(false);
    expect(s.get('ce_gateway_outbox_database_up')).toBe('0');
    expect(s.get('ce_gateway_outbox_database_errors_total')).toBe('7');
    down = false;
    s = samples((await m.render()).body);
    expect(s.get('ce_gateway_outbox_backlog_rows')).toBe('0');
    expect(s.get('ce_gateway_outbox_oldest_row_age_seconds')).toBe('0');
    expect(s.get('ce_gateway_outbox_database_up')).toBe('1');
  });

  it('without an outbox source the outbox gauges have no sample', async () => {
    const m = GatewayMetrics.for(new Registry(), { defaultMetrics: false });
    const text = (await m.render()).body;
    expect(text).not.toMatch(/^ce_gateway_outbox_(backlog_rows|oldest_row_age_seconds|database_up) /m);
  });

  it('no ce_gateway_outbox_* sample at all without a relay (an absent() alert fires), the relay\'s figures once one runs, none again once it is gone', async () => {
    const m = GatewayMetrics.for(new Registry(), { defaultMetrics: false });
    // A serve-only gateway: publisher and subscriptions, no relay (the walkthrough found all six relay families at 0 here).
    m.addSource({ ready: () => true, publisher: () => ({ enqueued: 1, published: 1, failed: 0, rejected: 0, retried: 0, queued: 0 }) });
    const samples = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('ce_gateway_outbox_'));
    expect(samples((await m.render()).body)).toEqual([]);
    const remove = m.addSource({ outboxRelay: () => ({ published: 5, failedAttempts: 1, tooLargeRows: 0, invalidRows: 0, heldKeys: 2, dbErrors: 0 }) });
    expect(samples((await m.render()).body).sort()).toEqual([
      'ce_gateway_outbox_database_errors_total 0',
      'ce_gateway_outbox_held_keys 2',
      'ce_gateway_outbox_invalid_rows_total 0',
      'ce_gateway_outbox_publish_failures_total 1',
      'ce_gateway_outbox_published_total 5',
      'ce_gateway_outbox_too_large_rows_total 0',
    ]);
    remove();
    expect(samples((await m.render()).body)).toEqual([]);
  });

  it('route and method labels stay within a fixed set whatever the request', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (path, method) => {
        expect(HTTP_ROUTES).toContain(routeOf(`/${path}`));
        expect(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other']).toContain(methodOf(method));
      }),
    );
    expect(routeOf('/subscriptions/abc-123/status')).toBe('/subscriptions');
    expect(routeOf('/schemas/ids/42')).toBe('/schemas');
    expect(routeOf('/events/../x')).toBe('other');
  });
});
