/**
 * Turns one window of {@link StageSamples} into stage figures (issue 14: where the single-event
 * p99 comes from): each stage's p50/p99/max, and for the slowest 1 % of requests the mean split
 * of their time, with how much of it GC pauses covered. All figures in ms.
 */
import type { IngressStages, PublisherStages, SenderStages } from '../../src/core/stage-channels.js';
import type { GcPause, StageSamples } from './stage-recorder.js';

/** p50 / p99 / max of a list of ms, and how many. */
export interface Spread {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

const r3 = (x: number): number => Number(x.toFixed(3));

export function spread(xs: readonly number[]): Spread {
  if (xs.length === 0) return { n: 0, p50: 0, p99: 0, max: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number): number => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
  return { n: s.length, p50: r3(at(50)), p99: r3(at(99)), max: r3(s[s.length - 1]!) };
}

/** The first element whose `key` is ≥ `t` (list sorted by key), or undefined. */
function firstAtOrAfter<T>(list: readonly T[], key: (x: T) => number, t: number): T | undefined {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (key(list[mid]!) < t) lo = mid + 1;
    else hi = mid;
  }
  return list[lo];
}

/** ms of GC pause inside [from, to]. */
function gcWithin(gc: readonly GcPause[], from: number, to: number): number {
  let ms = 0;
  for (const g of gc) ms += Math.max(0, Math.min(to, g.at + g.ms) - Math.max(from, g.at));
  return ms;
}

/** One request's time, split (ms). Gateway: body … answer; raw: senderWait and broker only. */
export interface Split {
  readonly total: number;
  readonly body: number;
  readonly prepare: number;
  readonly publisherWait: number;
  readonly senderWait: number;
  readonly broker: number;
  /** From the broker's answer to the request's promise settling (callbacks, loop). */
  readonly settle: number;
  readonly answer: number;
  /** GC pause time inside the request. */
  readonly gc: number;
}

const SPLIT_KEYS = ['total', 'body', 'prepare', 'publisherWait', 'senderWait', 'broker', 'settle', 'answer', 'gc'] as const;

function mean(splits: readonly Split[]): Split {
  const out = Object.fromEntries(SPLIT_KEYS.map((k) => [k, splits.length === 0 ? 0 : r3(splits.reduce((n, s) => n + s[k], 0) / splits.length)]));
  return out as unknown as Split;
}

/** Each ingress request's split: its produce attempt is the first one called at or after its records were handed over, its produce request the first sent at or after that call. */
export function gatewaySplits(s: StageSamples): Split[] {
  const attempts = [...s.publisher].sort((a, b) => a.calledAt - b.calledAt);
  const requests = [...s.sender].sort((a, b) => a.sentAt - b.sentAt);
  return s.ingress.map((r: IngressStages): Split => {
    const a: PublisherStages | undefined = firstAtOrAfter(attempts, (x) => x.calledAt, r.preparedAt);
    const q: SenderStages | undefined = a === undefined ? undefined : firstAtOrAfter(requests, (x) => x.sentAt, a.calledAt);
    const calledAt = a?.calledAt ?? r.preparedAt;
    const sentAt = q?.sentAt ?? calledAt;
    const answeredAt = Math.min(q?.answeredAt ?? r.ackedAt, r.ackedAt);
    return {
      total: r.answeredAt - r.arrivedAt,
      body: r.bodyAt - r.arrivedAt,
      prepare: r.preparedAt - r.bodyAt,
      publisherWait: calledAt - r.preparedAt,
      senderWait: sentAt - calledAt,
      broker: answeredAt - sentAt,
      settle: r.ackedAt - answeredAt,
      answer: r.answeredAt - r.ackedAt,
      gc: gcWithin(s.gc, r.arrivedAt, r.answeredAt),
    };
  });
}

/** Each raw call's split (one record per call): its wait for the request in flight, then its own request. */
export function rawSplits(s: StageSamples): Split[] {
  return s.sender.flatMap((q) =>
    q.queuedAt.map((at): Split => ({ total: q.answeredAt - at, body: 0, prepare: 0, publisherWait: 0, senderWait: q.sentAt - at, broker: q.answeredAt - q.sentAt, settle: 0, answer: 0, gc: gcWithin(s.gc, at, q.answeredAt) })),
  );
}

/** The figures of one side's window. */
export interface StageReport {
  /** Every stage's spread over all requests. */
  readonly stages: Readonly<Record<(typeof SPLIT_KEYS)[number], Spread>>;
  /** The mean split of the requests at or above the p99 of `total`. */
  readonly tail: Split;
  /** The mean split of all requests. */
  readonly all: Split;
  /** Produce requests to the broker: how many, records per request (mean), and their duration spread. */
  readonly produceRequests: { readonly n: number; readonly recordsMean: number; readonly ms: Spread };
  readonly gc: Readonly<Record<string, { readonly count: number; readonly totalMs: number; readonly maxMs: number }>>;
  readonly loopDelayMs: StageSamples['loopDelayMs'];
  /** Due time → handler, above its minimum (see {@link StageSamples.arrivalLag}); n 0 on the raw side. */
  readonly arrivalLag: Spread;
  /** The produce requests at or above their p99 duration: how many, mean ms, mean GC ms inside. */
  readonly slowRequests: { readonly n: number; readonly meanMs: number; readonly gcInsideMs: number };
}

export function report(s: StageSamples, splits: readonly Split[]): StageReport {
  const stages = Object.fromEntries(SPLIT_KEYS.map((k) => [k, spread(splits.map((x) => x[k]))])) as unknown as StageReport['stages'];
  const tail = splits.filter((x) => x.total >= stages.total.p99);
  const gc: Record<string, { count: number; totalMs: number; maxMs: number }> = {};
  for (const g of s.gc) {
    const k = (gc[g.kind] ??= { count: 0, totalMs: 0, maxMs: 0 });
    k.count++;
    k.totalMs = r3(k.totalMs + g.ms);
    k.maxMs = r3(Math.max(k.maxMs, g.ms));
  }
  const recs = s.sender.reduce((n, q) => n + q.records, 0);
  const minLag = Math.min(...s.arrivalLag);
  const durations = spread(s.sender.map((q) => q.answeredAt - q.sentAt));
  const slow = s.sender.filter((q) => q.answeredAt - q.sentAt >= durations.p99);
  const avg = (xs: readonly number[]): number => (xs.length === 0 ? 0 : r3(xs.reduce((a, b) => a + b, 0) / xs.length));
  return {
    stages,
    tail: mean(tail),
    all: mean(splits),
    produceRequests: { n: s.sender.length, recordsMean: s.sender.length === 0 ? 0 : r3(recs / s.sender.length), ms: durations },
    gc,
    loopDelayMs: s.loopDelayMs,
    arrivalLag: spread(s.arrivalLag.map((x) => x - minLag)),
    slowRequests: { n: slow.length, meanMs: avg(slow.map((q) => q.answeredAt - q.sentAt)), gcInsideMs: avg(slow.map((q) => gcWithin(s.gc, q.sentAt, q.answeredAt))) },
  };
}

/** A node of V8's sampling heap profile (`HeapProfiler.stopSampling`). */
interface HeapNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

/** The `n` allocation sites with the most bytes sampled (self size, with their caller), and the total. */
export function heapTop(profile: { readonly head: HeapNode }, n: number): { readonly totalBytes: number; readonly top: readonly { readonly site: string; readonly bytes: number; readonly share: number }[] } {
  const bySite = new Map<string, number>();
  let total = 0;
  const frame = (f: HeapNode['callFrame']): string => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|src)\//, '$1/')}:${f.lineNumber + 1}`;
  const walk = (node: HeapNode, parent: string): void => {
    if (node.selfSize > 0) {
      const site = `${frame(node.callFrame)} ← ${parent}`;
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const c of node.children) walk(c, frame(node.callFrame));
  };
  walk(profile.head, '(root)');
  const top = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, n).map(([site, bytes]) => ({ site, bytes, share: r3(bytes / total) }));
  return { totalBytes: total, top };
}
