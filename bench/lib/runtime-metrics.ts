/**
 * Where a gateway's latency goes during a window, from its own `GET /metrics` (prom-client's
 * default metrics and the gateway's histograms): event-loop delay, GC pauses by kind, produce and
 * HTTP times. prom-client resets the event-loop delay monitor at each scrape, so a scrape before
 * and one after a window give that window's delay; counters and histograms are differenced.
 * Issue 14: "find where the single-event added p99 comes from".
 */

/** One scrape: the figures read, by metric and label set. */
export type Scrape = ReadonlyMap<string, number>;

/** GETs `<url>/metrics` and reads every sample line into name{labels} → value. */
export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** What happened in the gateway between two scrapes (the window), in ms. */
export interface RuntimeWindow {
  /**
   * Event-loop delay over the window, p99 and max, ms, as prom-client reports it (monitorEventLoopDelay
   * sampled every 10 ms: the figures include that interval, so an idle gateway reads about 10–13 ms).
   */
  readonly eventLoopDelayMs: { readonly p99: number; readonly max: number };
  /** GC pauses by kind (minor = scavenge, major = mark-compact, incremental, weakcb): count, total ms, mean ms. */
  readonly gc: Readonly<Record<string, { readonly count: number; readonly totalMs: number; readonly meanMs: number }>>;
  /** Produce requests to the broker: count and mean duration, ms. */
  readonly produce: { readonly count: number; readonly meanMs: number };
  /** `POST /events` answers: count and mean time from headers to the end of the answer, ms. */
  readonly ingressHttp: { readonly count: number; readonly meanMs: number };
}

const delta = (a: Scrape, b: Scrape, key: string): number => (b.get(key) ?? 0) - (a.get(key) ?? 0);

/** The window between `before` and `after` (scrapes of one gateway). */
export function runtimeWindow(before: Scrape, after: Scrape): RuntimeWindow {
  const gc: Record<string, { count: number; totalMs: number; meanMs: number }> = {};
  for (const key of after.keys()) {
    const m = /^nodejs_gc_duration_seconds_count\{kind="([a-z]+)"\}$/.exec(key);
    if (m === null) continue;
    const count = delta(before, after, key);
    const totalMs = delta(before, after, `nodejs_gc_duration_seconds_sum{kind="${m[1]}"}`) * 1000;
    if (count > 0) gc[m[1]!] = { count, totalMs: Number(totalMs.toFixed(1)), meanMs: Number((totalMs / count).toFixed(3)) };
  }
  const mean = (sumKey: string, countKey: string): { count: number; meanMs: number } => {
    const count = delta(before, after, countKey);
    return { count, meanMs: count === 0 ? 0 : Number(((delta(before, after, sumKey) * 1000) / count).toFixed(3)) };
  };
  const route = [...after.keys()].find((k) => k.startsWith('ce_gateway_http_request_duration_seconds_count{') && k.includes('/events'));
  return {
    eventLoopDelayMs: { p99: Number(((after.get('nodejs_eventloop_lag_p99_seconds') ?? 0) * 1000).toFixed(2)), max: Number(((after.get('nodejs_eventloop_lag_max_seconds') ?? 0) * 1000).toFixed(2)) },
    gc,
    produce: mean('ce_gateway_produce_duration_seconds_sum', 'ce_gateway_produce_duration_seconds_count'),
    ingressHttp: route === undefined ? { count: 0, meanMs: 0 } : mean(route.replace('_count{', '_sum{'), route),
  };
}

/** GC pauses of a window as text: `minor 105 × 0.798 ms, major 1 × 3.056 ms`, or `–`. */
export function describeGc(w: RuntimeWindow): string {
  return Object.entries(w.gc).map(([k, g]) => `${k} ${g.count} × ${g.meanMs} ms`).join(', ') || '–';
}

/** A window as one log line: event-loop delay, GC pauses, produce requests, `POST /events` answers. */
export function describeRuntime(w: RuntimeWindow): string {
  return `event-loop delay p99 ${w.eventLoopDelayMs.p99} ms, max ${w.eventLoopDelayMs.max} ms; GC ${describeGc(w)}; produce ${w.produce.count} × ${w.produce.meanMs} ms mean; POST /events ${w.ingressHttp.count} × ${w.ingressHttp.meanMs} ms mean`;
}
