/**
 * Prometheus metrics (text format, base units, bounded labels: never an event id). Values are
 * read from the components' counters at scrape time, so the hot path pays nothing.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { PublisherStats } from '../bus/publisher/index.js';

export interface MetricsSources {
  readonly publisher: () => PublisherStats | undefined;
  readonly ready: () => boolean;
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
  new Gauge({
    name: 'ce_gateway_ready',
    help: '1 when the gateway has its topics and schemas and serves events.',
    registers: [registry],
    collect() {
      this.set(src.ready() ? 1 : 0);
    },
  });
  return { registry, render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }) };
}
