/**
 * The push scenarios (issue 8), against the gateway child process:
 * - push latency: single events POSTed at a fixed offered rate (default 1,000/s, each request on
 *   its own schedule, not waiting for the previous one); a push subscription delivers them to a
 *   webhook sink in this process; latency = sink receipt − the moment the POST was sent, per event
 *   id (one clock). HTTP in → Kafka → consumer group → signed webhook out.
 * - push throughput: a push subscription created with `start: earliest` on the bench topic; time
 *   until the sink has received its first N events (distinct ids), N / time. The same N records
 *   are read by a raw kafkajs consumer (no-op, `rawConsume`) and by a raw kafkajs consumer that
 *   POSTs each record to the same sink (`rawConsumePost`: the webhook's own cost without the
 *   gateway), both in this process.
 * The sink runs in a process of its own (node:http on 127.0.0.1, bench/lib/remote-sink.ts; with
 * `BENCH_SINK=inprocess` in this process): it shares the machine, not the event loop, with the load
 * generator.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EachBatchPayload } from 'kafkajs';
import { Agent, request } from 'undici';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import { singleTemplates, STRUCTURED } from './events.js';
import { startRemoteSink } from './remote-sink.js';
import { runtimeWindow, scrape } from './runtime-metrics.js';
import type { RuntimeWindow } from './runtime-metrics.js';
import { Latency } from './stats.js';

const { Kafka, logLevel } = kafkajs();

export interface BenchSink {
  readonly url: string;
  /** Receipt time (performance.now()) of the first delivery of each event id. */
  readonly firstSeen: Map<string, number>;
  deliveries(): number;
  close(): Promise<void>;
}

/**
 * A webhook sink that accepts the handshake and every delivery (200), recording first receipts by
 * `ce-id`; `delayMs` > 0 answers each delivery that much later (a sink with real work or distance);
 * `onFirst` hears of each first receipt (performance.now() of this process).
 */
export async function startBenchSink(delayMs = 0, onFirst?: (id: string, receivedAt: number) => void): Promise<BenchSink> {
  const firstSeen = new Map<string, number>();
  let deliveries = 0;
  const server = createServer((req, res) => {
    if (req.method === 'OPTIONS') {
      res.writeHead(200, { 'webhook-allowed-origin': String(req.headers['webhook-request-origin'] ?? '*') });
      res.end();
      return;
    }
    const id = String(req.headers['ce-id'] ?? '');
    const at = performance.now();
    req.resume();
    req.on('end', () => {
      const answer = (): void => {
        deliveries++;
        if (!firstSeen.has(id)) {
          firstSeen.set(id, at);
          onFirst?.(id, at);
        }
        res.writeHead(200, { 'content-length': '0' });
        res.end();
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    firstSeen,
    deliveries: () => deliveries,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/** The sink the push scenarios use: a process of its own (bench/lib/remote-sink.ts, the default), or this process's with `BENCH_SINK=inprocess`. */
export const startSink = (delayMs = 0): Promise<BenchSink> => (process.env.BENCH_SINK === 'inprocess' ? startBenchSink(delayMs) : startRemoteSink(delayMs));

export async function api(gwUrl: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${gwUrl}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/** Creates a push subscription to `sinkUrl`; returns its name (delete it with {@link deleteSubscription}). */
export async function createPush(gwUrl: string, sinkUrl: string, start: 'latest' | 'earliest', concurrency: number, ordering: 'key' | 'none' = 'key'): Promise<string> {
  const name = `bench-${randomUUID().slice(0, 8)}`;
  await api(gwUrl, 'POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], start, ordering, concurrency, delivery: { mode: 'push', url: sinkUrl } });
  return name;
}

export async function deleteSubscription(gwUrl: string, name: string): Promise<void> {
  await api(gwUrl, 'DELETE', `/subscriptions/${name}`);
}

export interface PushLatencyResult {
  readonly name: string;
  readonly offeredPerS: number;
  readonly sent: number;
  readonly delivered: number;
  readonly durationS: number;
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  /**
   * The warm-up's events (same rate, before the window): what the first seconds of load on a new
   * subscription cost (a cold delivery path: JIT, new sink connections). Context, not the figure.
   */
  readonly warmupLatencyMs: { readonly p99: number; readonly max: number };
  /**
   * Seconds of warm-up at the full rate before the window: the minimum asked for, or more while the
   * subscription had over 100 ms of the offered events undelivered (a cold gateway catching up), up
   * to the maximum. Above the minimum, this is how long a new gateway took to keep up.
   */
  readonly warmupS: number;
  /** Warm-up events not yet delivered when the window began (≤ rate/10 unless the maximum was reached). */
  readonly behindAtWindow: number;
  readonly postErrors: number;
  /**
   * Where each event's time went, ms: `ingress` = POST sent → its 202 (the gateway produced it and
   * the broker acknowledged, acks=all), `delivery` = that 202 → the sink's receipt (fetch, decode,
   * signed POST; negative when the sink heard of it before the bench read the 202). `tail` is the
   * events at or above the window's p99: how many, and the mean of each part over them, so a tail
   * can be put on the ingress side or the delivery side.
   */
  readonly split: {
    readonly ingressMs: { readonly p50: number; readonly p99: number; readonly max: number };
    readonly deliveryMs: { readonly p50: number; readonly p99: number; readonly max: number };
    readonly tail: { readonly events: number; readonly ingressMeanMs: number; readonly deliveryMeanMs: number };
  };
  /**
   * The delivering gateway during the window (its /metrics before and after): event-loop delay, GC
   * pauses by kind, produce requests, `POST /events` answers. Which of them a p99 tail lines up with
   * says where it comes from (a major GC, a slow produce, a blocked loop).
   */
  readonly runtime: RuntimeWindow;
}

/** How a bench subscription delivers: ordering and `concurrency` (key: partitions at once; none: deliveries in flight). */
export interface PushShape {
  readonly ordering: 'key' | 'none';
  readonly concurrency: number;
}

/**
 * HTTP in → webhook out at `ratePerS` for `durationS` (after at least `warmupS` at the same rate,
 * longer while the subscription is catching up, at most `maxWarmupS`; reported apart as
 * `warmupLatencyMs` and `warmupS`). The subscription is created on `gwUrl`, events are POSTed to `ingressUrl` (another
 * gateway on the same definitions topic in the two-process layout; default the same one).
 */
export async function pushLatency(gwUrl: string, ratePerS: number, durationS: number, warmupS: number, shape: PushShape = { ordering: 'key', concurrency: 6 }, ingressUrl = gwUrl, maxWarmupS = 30): Promise<PushLatencyResult> {
  const sink = await startSink();
  const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const name = await createPush(gwUrl, sink.url, 'latest', shape.concurrency, shape.ordering);
  try {
    const templates = singleTemplates(36);
    const sentAt = new Map<string, number>();
    const warmupSentAt = new Map<string, number>();
    const ackedAt = new Map<string, number>();
    let errors = 0;
    const inflight = new Set<Promise<void>>();
    const run = async (seconds: number, record: Map<string, number> | undefined, perS = ratePerS): Promise<void> => {
      const total = Math.round(seconds * perS);
      const t0 = performance.now();
      for (let i = 0; i < total; i++) {
        const due = t0 + (i * 1000) / perS;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const body = templates[i % templates.length]!.render();
        const id = (JSON.parse(body) as { id: string }).id;
        const at = performance.now();
        record?.set(id, at);
        const p = request(`${ingressUrl}/events`, { method: 'POST', headers: { 'content-type': STRUCTURED }, body, dispatcher: agent }).then(
          async (res) => {
            if (record === sentAt) ackedAt.set(id, performance.now());
            await res.body.dump();
            if (res.statusCode !== 202) {
              errors++;
              // Never accepted, so never delivered: it must not keep the warm-up "behind".
              if (record === warmupSentAt) record.delete(id);
            }
          },
          () => {
            errors++;
            if (record === warmupSentAt) record.delete(id);
          },
        );
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      await Promise.all([...inflight]);
    };
    // The subscription delivers once its member has joined: probe with one event per 100 ms until
    // the sink sees one, then warm up at the full rate. Probing at the full rate made the join time
    // (1–3 s) a backlog of thousands of events that the window then measured draining (2026-12-02:
    // p99 0.5 s, all of it in the window's first second).
    const deadline0 = performance.now() + 60_000;
    while (sink.deliveries() === 0 && performance.now() < deadline0) await run(0.1, undefined, 10);
    await run(warmupS, warmupSentAt);
    // A cold gateway (its delivery path not yet compiled by V8's JIT, on cores shared with the broker
    // and this process) delivers below the offered rate for its first seconds: each webhook call took
    // 19 ms on average in the first 0.5 s against 2.5 ms once warm (2026-12-04), so with 6 calls in
    // flight it delivered ~300 events/s and ran up a backlog the window then measured draining. The
    // window measures the steady state: the warm-up goes on, a second at a time, until fewer than
    // 100 ms of its events are undelivered (at most `maxWarmupS`); how long that took is reported.
    const behind = (): number => {
      let n = 0;
      for (const id of warmupSentAt.keys()) if (!sink.firstSeen.has(id)) n++;
      return n;
    };
    let warmedS = warmupS;
    while (behind() > ratePerS / 10 && warmedS < maxWarmupS) {
      await run(1, warmupSentAt);
      warmedS++;
    }
    const behindAtWindow = behind();
    const before = await scrape(gwUrl);
    const started = performance.now();
    await run(durationS, sentAt);
    const elapsedS = (performance.now() - started) / 1000;
    const runtime = runtimeWindow(before, await scrape(gwUrl));
    const deadline = performance.now() + 30_000;
    while ([...sentAt.keys()].some((id) => !sink.firstSeen.has(id)) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const lat = new Latency();
    const ingress = new Latency();
    const delivery: number[] = [];
    const parts: { total: number; ingress: number; delivery: number }[] = [];
    let delivered = 0;
    for (const [id, at] of sentAt) {
      const got = sink.firstSeen.get(id);
      if (got === undefined) continue;
      delivered++;
      lat.recordMs(got - at);
      const acked = ackedAt.get(id);
      if (acked === undefined) continue;
      ingress.recordMs(acked - at);
      delivery.push(got - acked);
      parts.push({ total: got - at, ingress: acked - at, delivery: got - acked });
    }
    delivery.sort((a, b) => a - b);
    const pick = (q: number): number => Number((delivery[Math.min(delivery.length - 1, Math.floor((q / 100) * delivery.length))] ?? 0).toFixed(3));
    const tail = parts.filter((x) => x.total >= lat.percentileMs(99));
    const mean = (xs: number[]): number => Number((xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)).toFixed(2));
    const warm = new Latency();
    for (const [id, at] of warmupSentAt) {
      const got = sink.firstSeen.get(id);
      if (got !== undefined) warm.recordMs(got - at);
    }
    return {
      name: `ordering ${shape.ordering}, concurrency ${shape.concurrency}`,
      offeredPerS: ratePerS,
      sent: sentAt.size,
      delivered,
      durationS: elapsedS,
      latencyMs: { p50: lat.percentileMs(50), p90: lat.percentileMs(90), p99: lat.percentileMs(99), max: lat.maxMs },
      warmupLatencyMs: { p99: warm.percentileMs(99), max: warm.maxMs },
      warmupS: warmedS,
      behindAtWindow,
      postErrors: errors,
      split: {
        ingressMs: { p50: ingress.percentileMs(50), p99: ingress.percentileMs(99), max: ingress.maxMs },
        deliveryMs: { p50: pick(50), p99: pick(99), max: pick(100) },
        tail: { events: tail.length, ingressMeanMs: mean(tail.map((x) => x.ingress)), deliveryMeanMs: mean(tail.map((x) => x.delivery)) },
      },
      runtime,
    };
  } finally {
    await deleteSubscription(gwUrl, name).catch(() => undefined);
    await agent.close();
    await sink.close();
  }
}

export interface PushThroughputResult {
  readonly name: string;
  readonly records: number;
  readonly elapsedS: number;
  readonly eventsPerS: number;
}

/**
 * A push subscription from the earliest offset: time until the sink has received `records`
 * deliveries (the bench topic repeats its events' ids, so deliveries are counted, not distinct ids;
 * nothing fails, so nothing is delivered twice).
 */
export async function pushThroughput(gwUrl: string, records: number, shape: PushShape = { ordering: 'key', concurrency: 6 }, sinkDelayMs = 0): Promise<PushThroughputResult> {
  const sink = await startSink(sinkDelayMs);
  const t0 = performance.now();
  const name = await createPush(gwUrl, sink.url, 'earliest', shape.concurrency, shape.ordering);
  try {
    while (sink.deliveries() < records) await new Promise((r) => setTimeout(r, 20));
    const elapsedS = (performance.now() - t0) / 1000;
    return { name: `gateway push subscription (ordering ${shape.ordering}, concurrency ${shape.concurrency})${sinkDelayMs > 0 ? `, sink answering after ${sinkDelayMs} ms` : ''}`, records, elapsedS, eventsPerS: records / elapsedS };
  } finally {
    await deleteSubscription(gwUrl, name).catch(() => undefined);
    await sink.close();
  }
}

/**
 * A raw kafkajs consumer that POSTs every record's value to a sink: `inFlight` undefined = one at a
 * time per partition, 6 partitions at once; a number = up to that many POSTs in flight over the
 * consumer (each batch's records launched as slots free up, the batch returned when they are done).
 */
export async function rawConsumePost(brokers: readonly string[], topic: string, records: number, inFlight?: number): Promise<PushThroughputResult> {
  const sink = await startSink();
  const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const slots = { used: 0, waiters: [] as (() => void)[] };
  const kafka = new Kafka({ clientId: 'ce-gateway-bench-raw-post', brokers: [...brokers], logLevel: logLevel.WARN });
  const consumer = kafka.consumer({ groupId: `bench-raw-post-${randomBytes(6).toString('hex')}`, maxWaitTimeInMs: 1000 });
  const t0 = performance.now();
  let seen = 0;
  let finish: () => void = () => {};
  const done = new Promise<void>((r) => (finish = r));
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 6,
    eachBatch: async (payload: EachBatchPayload) => {
      const pending = new Set<Promise<void>>();
      for (const m of payload.batch.messages) {
        if (!payload.isRunning() || payload.isStale() || seen >= records) break;
        const post = async (): Promise<void> => {
          const res = await request(sink.url, { method: 'POST', headers: { 'content-type': 'application/avro', 'ce-id': `${payload.batch.partition}-${m.offset}` }, body: m.value ?? Buffer.alloc(0), dispatcher: agent });
          await res.body.dump();
          if (++seen === records) finish();
        };
        if (inFlight === undefined) {
          await post();
          payload.resolveOffset(m.offset);
          continue;
        }
        while (slots.used >= inFlight) await new Promise<void>((r) => slots.waiters.push(r));
        slots.used++;
        const p = post().finally(() => {
          slots.used--;
          slots.waiters.shift()?.();
          pending.delete(p);
        });
        pending.add(p);
      }
      await Promise.all([...pending]);
      if (inFlight !== undefined && payload.batch.messages.length > 0) payload.resolveOffset(payload.batch.lastOffset());
      await payload.heartbeat();
    },
  });
  await done;
  const elapsedS = (performance.now() - t0) / 1000;
  await consumer.disconnect();
  await agent.close();
  await sink.close();
  return { name: inFlight === undefined ? 'raw kafkajs consumer + POST per record (one at a time per partition)' : `raw kafkajs consumer + POST per record (${inFlight} in flight)`, records, elapsedS, eventsPerS: records / elapsedS };
}

/** Throughput ratios of the push-consume scenario as numbers (null when a side was not run), for the results JSON. */
export function pushRatios(runs: readonly PushThroughputResult[]): Record<string, number | null> {
  const find = (pred: (name: string) => boolean): number | undefined => runs.find((r) => pred(r.name))?.eventsPerS;
  const gateway = (ordering: string, slow: boolean): number | undefined => find((n) => n.startsWith('gateway') && n.includes(`ordering ${ordering}`) && n.includes('sink answering after') === slow);
  const noop = find((n) => n === 'raw kafkajs consume');
  const postSerial = find((n) => n.includes('POST') && n.includes('one at a time per partition'));
  const postWindow = find((n) => n.includes('POST') && n.includes('in flight)'));
  const ratio = (a: number | undefined, b: number | undefined): number | null => (a === undefined || b === undefined || b === 0 ? null : Number((a / b).toFixed(3)));
  return {
    keyVsRawNoop: ratio(gateway('key', false), noop),
    keyVsRawPostPerPartition: ratio(gateway('key', false), postSerial),
    keyVsRawPostWindow: ratio(gateway('key', false), postWindow),
    noneVsRawNoop: ratio(gateway('none', false), noop),
    noneVsRawPostWindow: ratio(gateway('none', false), postWindow),
    noneVsKeySlowSink: ratio(gateway('none', true), gateway('key', true)),
  };
}
