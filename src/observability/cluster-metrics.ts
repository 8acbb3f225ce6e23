/**
 * `GET /metrics` of a gateway that runs as several worker processes behind one port
 * (`GATEWAY_WORKERS`, node:cluster): whichever worker a scrape reaches, it answers the figures of
 * every worker, aggregated by the cluster primary with prom-client's `AggregatorRegistry`
 * (counters and histograms summed; gauges by their `aggregator`: `ce_gateway_ready` and
 * `ce_gateway_subscription_up` the minimum, lags the maximum, the rest summed). A Prometheus
 * target is the pod's port, not one process: a scrape that showed one worker's share would make
 * `rate()` jump between workers.
 *
 * The exchange, over the cluster's IPC channel: the worker sends
 * `{ type: 'ce-gateway:metrics-request', id }`; the primary asks every worker (prom-client's own
 * messages) and answers `{ type: 'ce-gateway:metrics', id, contentType, body }` or `{ …, error }`.
 */
import cluster from 'node:cluster';
import type { Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { Registry } from 'prom-client';
import { GatewayError, errorMessage } from '../core/errors.js';

const REQUEST = 'ce-gateway:metrics-request';
const ANSWER = 'ce-gateway:metrics';

interface MetricsRequest {
  readonly type: typeof REQUEST;
  readonly id: number;
}
interface MetricsAnswer {
  readonly type: typeof ANSWER;
  readonly id: number;
  readonly contentType?: string;
  readonly body?: string;
  readonly error?: string;
}

const isRequest = (m: unknown): m is MetricsRequest => typeof m === 'object' && m !== null && (m as { type?: unknown }).type === REQUEST && typeof (m as { id?: unknown }).id === 'number';
const isAnswer = (m: unknown): m is MetricsAnswer => typeof m === 'object' && m !== null && (m as { type?: unknown }).type === ANSWER && typeof (m as { id?: unknown }).id === 'number';

/** A rendered scrape: the text format and its content type. */
export interface RenderedMetrics {
  readonly contentType: string;
  readonly body: string;
}

/**
 * In a cluster worker: hands `registry` to prom-client's cluster listener (the primary collects it
 * for every scrape) and returns the renderer `GET /metrics` uses, which asks the primary for the
 * figures of all workers.
 * Errors (of the renderer's promise): CEG_INTERNAL (retriable) when the primary does not answer
 * within `timeoutMs` (ms; default 6,000: prom-client's own collection timeout is 5,000) or a
 * worker's collection failed.
 * Throws (at once) when called outside a cluster worker.
 */
export function clusterMetricsRenderer(registry: Registry, timeoutMs = 6000): () => Promise<RenderedMetrics> {
  if (!cluster.isWorker || process.send === undefined) throw new Error('clusterMetricsRenderer: not a cluster worker');
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's worker-side listener (its answer to the primary's collection).
  new AggregatorRegistry();
  const pending = new Map<number, { resolve: (m: RenderedMetrics) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  let next = 0;
  process.on('message', (m: unknown) => {
    if (!isAnswer(m)) return;
    const p = pending.get(m.id);
    if (p === undefined) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.error !== undefined || m.body === undefined) p.reject(new GatewayError('CEG_INTERNAL', `the workers' metrics could not be collected: ${m.error ?? 'no body'}`, { retriable: true }));
    else p.resolve({ contentType: m.contentType ?? registry.contentType, body: m.body });
  });
  return () =>
    new Promise<RenderedMetrics>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new GatewayError('CEG_INTERNAL', `the cluster primary did not answer with the workers' metrics within ${timeoutMs} ms`, { retriable: true }));
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      const request: MetricsRequest = { type: REQUEST, id };
      process.send!(request, undefined, undefined, (err: Error | null) => {
        if (err === null) return;
        pending.delete(id);
        clearTimeout(timer);
        reject(new GatewayError('CEG_INTERNAL', `cannot ask the cluster primary for the metrics: ${err.message}`, { retriable: true }));
      });
    });
}

/**
 * In the cluster primary: answers the workers' metrics requests with the aggregate of all workers
 * (see the module comment). Call once, before forking. Returns a remover of the listener.
 */
export function serveClusterMetrics(): () => void {
  const aggregator = new AggregatorRegistry();
  const onMessage = (worker: Worker, m: unknown): void => {
    if (!isRequest(m)) return;
    const reply = (a: MetricsAnswer): void => {
      // A worker gone meanwhile has no one waiting for the answer.
      if (worker.isConnected()) worker.send(a);
    };
    aggregator.clusterMetrics().then(
      (body) => reply({ type: ANSWER, id: m.id, contentType: aggregator.contentType, body }),
      (err: unknown) => reply({ type: ANSWER, id: m.id, error: errorMessage(err) }),
    );
  };
  cluster.on('message', onMessage);
  return () => void cluster.off('message', onMessage);
}
