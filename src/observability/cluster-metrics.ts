/**
 * `GET /metrics` of a gateway that runs as several worker processes behind one port
 * (`GATEWAY_WORKERS`, node:cluster): whichever worker a scrape reaches, it answers the figures of
 * every worker, aggregated by the cluster primary with prom-client's `AggregatorRegistry.aggregate`
 * (counters and histograms summed; gauges by their `aggregator`: `ce_gateway_ready` and
 * `ce_gateway_subscription_up` the minimum, lags the maximum, the rest summed). A Prometheus
 * target is the pod's port, not one process: a scrape that showed one worker's share would make
 * `rate()` jump between workers.
 *
 * Which workers count:
 * - Only workers listening on the port. A replacement still starting (it joins once ready,
 *   cli/workers.ts) takes no requests, so it neither answers a scrape nor pulls `ce_gateway_ready`
 *   to 0 while `/readyz` answers 200.
 * - A worker that died keeps its counters and histograms, as of the last scrape it answered, in
 *   every later sum. Dropping them would make the pod's counters go down, which Prometheus reads
 *   as a reset and `rate()` as a jump of everything the others ever counted. What it counted after
 *   that last scrape is lost, as with any process that dies.
 * - A worker that does not answer within the collection timeout counts with the counters and
 *   histograms of its last answer (a blocked event loop must not make the counters go down
 *   either; its old gauges are left out); never answered before, it is left out.
 * - The per-subscription counters a worker rebuilds at each scrape add up over that
 *   subscription's members, also one that stopped on a failure (app/gateway.ts), so they do not go
 *   down either; a library subscription's start again with a new `subscribe()` on that worker.
 *
 * The exchanges, over the cluster's IPC channel:
 * - worker → primary `{ type: 'ce-gateway:metrics-request', id }`; the primary answers
 *   `{ type: 'ce-gateway:metrics', id, contentType, body }` or `{ …, error }`;
 * - primary → worker `{ type: 'ce-gateway:metrics-collect', id }`; the worker answers
 *   `{ type: 'ce-gateway:metrics-collected', id, metrics }` (its registry's `getMetricsAsJSON()`)
 *   or `{ …, error }`.
 */
import cluster from 'node:cluster';
import type { Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { Registry } from 'prom-client';
import { GatewayError, errorMessage } from '../core/errors.js';
import type { Logger } from './logger.js';

const REQUEST = 'ce-gateway:metrics-request';
const ANSWER = 'ce-gateway:metrics';
const COLLECT = 'ce-gateway:metrics-collect';
const COLLECTED = 'ce-gateway:metrics-collected';

/** One registry's figures as `getMetricsAsJSON()` gives them (what `AggregatorRegistry.aggregate` takes). */
type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

interface Message {
  readonly type: string;
  readonly id: number;
}
interface MetricsAnswer extends Message {
  readonly contentType?: string;
  readonly body?: string;
  readonly error?: string;
}
interface Collected extends Message {
  readonly metrics?: MetricsJson;
  readonly error?: string;
}

const isMessage = (m: unknown, type: string): m is Message => typeof m === 'object' && m !== null && (m as { type?: unknown }).type === type && typeof (m as { id?: unknown }).id === 'number';

/** A rendered scrape: the text format and its content type. */
export interface RenderedMetrics {
  readonly contentType: string;
  readonly body: string;
}

/**
 * In a cluster worker: answers the primary's collections with `registry`'s figures and returns the
 * renderer `GET /metrics` uses, which asks the primary for the figures of all workers.
 * Call once per process, before the server listens.
 * Errors (of the renderer's promise): CEG_INTERNAL (retriable) when the primary does not answer
 * within `timeoutMs` (ms; default 6,000: the primary's own collection waits 5,000 per worker) or
 * cannot be asked.
 * Throws (at once) when called outside a cluster worker.
 */
export function clusterMetricsRenderer(registry: Registry, timeoutMs = 6000): () => Promise<RenderedMetrics> {
  if (!cluster.isWorker || process.send === undefined) throw new Error('clusterMetricsRenderer: not a cluster worker');
  const send = (m: Message | Collected, onError: (err: Error) => void): void => {
    process.send!(m, undefined, undefined, (err: Error | null) => {
      if (err !== null) onError(err);
    });
  };
  const pending = new Map<number, { resolve: (m: RenderedMetrics) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  let next = 0;
  process.on('message', (m: unknown) => {
    if (isMessage(m, COLLECT)) {
      const id = m.id;
      registry.getMetricsAsJSON().then(
        (metrics) => send({ type: COLLECTED, id, metrics }, () => undefined),
        (err: unknown) => send({ type: COLLECTED, id, error: errorMessage(err) }, () => undefined),
      );
      return;
    }
    if (!isMessage(m, ANSWER)) return;
    const a = m as MetricsAnswer;
    const p = pending.get(a.id);
    if (p === undefined) return;
    pending.delete(a.id);
    clearTimeout(p.timer);
    if (a.error !== undefined || a.body === undefined) p.reject(new GatewayError('CEG_INTERNAL', `the workers' metrics could not be collected: ${a.error ?? 'no body'}`, { retriable: true }));
    else p.resolve({ contentType: a.contentType ?? registry.contentType, body: a.body });
  });
  return () =>
    new Promise<RenderedMetrics>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new GatewayError('CEG_INTERNAL', `the cluster primary did not answer with the workers' metrics within ${timeoutMs} ms`, { retriable: true }));
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      send({ type: REQUEST, id }, (err) => {
        pending.delete(id);
        clearTimeout(timer);
        reject(new GatewayError('CEG_INTERNAL', `cannot ask the cluster primary for the metrics: ${err.message}`, { retriable: true }));
      });
    });
}

/** Dead workers' figures kept apart before they are summed into one entry. */
const RETIRED_COMPACT_AT = 8;

/** Counters and histograms: what a dead worker keeps contributing to the sums (see the module comment). */
const cumulative = (metrics: MetricsJson): MetricsJson => metrics.filter((m) => String(m.type) === 'counter' || String(m.type) === 'histogram');

/** Settings of {@link serveClusterMetrics}. */
export interface ClusterMetricsOptions {
  /** How long the primary waits for one worker's figures, ms (default 5,000). */
  readonly collectTimeoutMs?: number;
  /** Where a worker's failed collection and a failed summing of dead workers' figures are logged (warn); default nowhere. */
  readonly log?: Logger;
}

/**
 * In the cluster primary: answers the workers' metrics requests with the aggregate of the
 * listening workers, plus the counters and histograms of the dead ones (see the module comment).
 * Call once, before forking. Returns a remover of its listeners. Never throws; a failed
 * aggregation is answered as `{ error }` (the worker's scrape then answers 500).
 */
export function serveClusterMetrics(o: ClusterMetricsOptions = {}): () => void {
  const collectTimeoutMs = o.collectTimeoutMs ?? 5000;
  const listening = new Set<number>();
  /** Each live worker's figures as of its last answer. */
  const last = new Map<number, MetricsJson>();
  /** The counters and histograms of the workers that died (summed into one entry now and then). */
  let retired: MetricsJson[] = [];
  const waiting = new Map<number, (c: Collected | undefined) => void>();
  let next = 0;

  /**
   * Asks one worker for its figures; resolves true when it answered in time (its `last` entry is
   * then fresh), false otherwise. An answer from a worker that has exited meanwhile is dropped: its
   * figures are retired already and must not come back as a live worker's.
   */
  const collect = (w: Worker): Promise<boolean> =>
    new Promise((resolve) => {
      const id = next++;
      const done = (c: Collected | undefined): void => {
        waiting.delete(id);
        clearTimeout(timer);
        const fresh = c !== undefined && Array.isArray(c.metrics) && listening.has(w.id);
        if (fresh) last.set(w.id, c.metrics);
        else if (c?.error !== undefined) o.log?.warn({ worker: w.id, err: c.error }, 'a worker could not collect its metrics; its last counters are used');
        resolve(fresh);
      };
      const timer = setTimeout(() => done(undefined), collectTimeoutMs);
      waiting.set(id, done);
      w.send({ type: COLLECT, id }, undefined, (err: Error | null) => {
        if (err !== null) done(undefined);
      });
    });

  const render = async (): Promise<RenderedMetrics> => {
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && listening.has(w.id) && w.isConnected());
    const answered = await Promise.all(workers.map(async (w) => ((await collect(w)) ? w.id : undefined)));
    const fresh = new Set(answered);
    // Built after the waits, from the state now: a worker that exited meanwhile is in `retired`,
    // no longer in `last`, so it counts once. A worker that did not answer counts with its last
    // counters and histograms only (its old gauges would hide it, `ce_gateway_ready` among them).
    const live = [...last.entries()].map(([id, figures]) => (fresh.has(id) ? figures : cumulative(figures)));
    const registry = AggregatorRegistry.aggregate([...live, ...retired]);
    return { contentType: registry.contentType, body: await registry.metrics() };
  };

  const onMessage = (worker: Worker, m: unknown): void => {
    if (isMessage(m, COLLECTED)) {
      waiting.get(m.id)?.(m);
      return;
    }
    if (!isMessage(m, REQUEST)) return;
    const id = m.id;
    const reply = (a: MetricsAnswer): void => {
      // A worker gone meanwhile has no one waiting for the answer.
      if (worker.isConnected()) worker.send(a, undefined, () => undefined);
    };
    render().then(
      (r) => reply({ type: ANSWER, id, contentType: r.contentType, body: r.body }),
      (err: unknown) => reply({ type: ANSWER, id, error: errorMessage(err) }),
    );
  };
  const onListening = (w: Worker): void => void listening.add(w.id);
  const onExit = (w: Worker): void => {
    listening.delete(w.id);
    const dead = last.get(w.id);
    last.delete(w.id);
    if (dead === undefined) return;
    // Kept at once (a scrape right after the exit must still count it); summed into one entry once
    // there are several, so a long-lived primary does not keep one per worker it ever ran.
    retired.push(cumulative(dead));
    if (retired.length < RETIRED_COMPACT_AT) return;
    const snapshot = retired.slice();
    // Never throws into the cluster's 'exit' listeners (cli/workers.ts runs after this one).
    Promise.resolve()
      .then(() => AggregatorRegistry.aggregate(snapshot).getMetricsAsJSON())
      .then(
        (sum) => void (retired = [sum, ...retired.slice(snapshot.length)]),
        (err: unknown) => o.log?.warn({ err: errorMessage(err) }, 'could not sum the dead workers\' counters; kept apart'),
      );
  };
  cluster.on('message', onMessage);
  cluster.on('listening', onListening);
  cluster.on('exit', onExit);
  return () => {
    cluster.off('message', onMessage);
    cluster.off('listening', onListening);
    cluster.off('exit', onExit);
  };
}
