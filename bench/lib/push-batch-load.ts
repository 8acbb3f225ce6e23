/**
 * Batched push delivery (issue 8, batchpush) against a raw kafkajs consumer on the same records,
 * in one run: a push subscription with `delivery.batch` created with `start: earliest` on the
 * bench topic; time until its sink has received N events (counted inside the batched requests'
 * JSON arrays), N / time. The raw no-op kafkajs consumer reads the same first N records. Raw and
 * gateway runs alternate (raw, batch, raw, batch), so a change of the machine's load hits both;
 * the ratio is mean gateway ÷ mean raw. A single-event push subscription (`ordering: none`,
 * `concurrency` 32: push-consume's) runs in the same alternation, as the A of this A/B.
 * Apart from push-load.ts (single deliveries) so that the two evolve without touching each other.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { rawConsume } from './consumer-load.js';
import { procCpuMs } from './gateway-process.js';
import { api, deleteSubscription, pushThroughput } from './push-load.js';
import type { PushThroughputResult } from './push-load.js';

/** How the batch subscription delivers. */
export interface PushBatchShape {
  readonly ordering: 'key' | 'none';
  readonly concurrency: number;
  readonly maxEvents: number;
}

/** A sink answering 200 to everything, counting the events of batched requests (JSON arrays). */
async function startBatchSink(): Promise<{ readonly url: string; events(): number; requests(): number; firstAtMs(): number; close(): Promise<void> }> {
  let events = 0;
  let requests = 0;
  let firstAtMs = 0;
  const server = createServer((req, res) => {
    if (req.method === 'OPTIONS') {
      res.writeHead(200, { 'webhook-allowed-origin': String(req.headers['webhook-request-origin'] ?? '*') });
      res.end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      if (events === 0) firstAtMs = performance.now();
      events += Array.isArray(body) ? body.length : 1;
      requests++;
      res.writeHead(200, { 'content-length': '0' });
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    events: () => events,
    requests: () => requests,
    firstAtMs: () => firstAtMs,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/** The time until a batch subscription's sink has `records` events; also the mean events per request. */
export async function pushBatchThroughput(gwUrl: string, records: number, shape: PushBatchShape, gatewayPid?: number): Promise<BatchRun> {
  const sink = await startBatchSink();
  const t0 = performance.now();
  const cpu0 = gatewayPid === undefined ? Number.NaN : procCpuMs(gatewayPid);
  const name = `bench-batch-${randomUUID().slice(0, 8)}`;
  await api(gwUrl, 'POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], start: 'earliest', ordering: shape.ordering, concurrency: shape.concurrency, delivery: { mode: 'push', url: sink.url, batch: { maxEvents: shape.maxEvents } } });
  try {
    while (sink.events() < records) await new Promise((r) => setTimeout(r, 20));
    const elapsedS = (performance.now() - t0) / 1000;
    const firstS = (sink.firstAtMs() - t0) / 1000;
    const cpuMs = gatewayPid === undefined ? Number.NaN : procCpuMs(gatewayPid) - cpu0;
    return {
      name: `gateway push subscription, batched (ordering ${shape.ordering}, concurrency ${shape.concurrency}, batch.maxEvents ${shape.maxEvents})`,
      records,
      elapsedS,
      eventsPerS: records / elapsedS,
      eventsPerRequest: sink.events() / sink.requests(),
      firstEventS: firstS,
      ...(Number.isNaN(cpuMs) ? {} : { gatewayCpuUsPerEvent: Number(((cpuMs * 1000) / records).toFixed(1)) }),
    };
  } finally {
    await deleteSubscription(gwUrl, name).catch(() => undefined);
    await sink.close();
  }
}

/** One batched run: with the mean events per request, and seconds from the create to the first delivery (group join, handshake). */
export type BatchRun = PushThroughputResult & {
  readonly eventsPerRequest: number;
  readonly firstEventS: number;
  /** The gateway process's CPU (user + system) per delivered event over the run, µs, start included; absent without its pid. */
  readonly gatewayCpuUsPerEvent?: number;
};

/** A batched run (not a raw or single-event one). */
export const isBatchRun = (r: PushThroughputResult | BatchRun): r is BatchRun => 'firstEventS' in r;

export interface PushBatchBench {
  readonly shape: PushBatchShape;
  readonly runs: readonly (PushThroughputResult | BatchRun)[];
  /** Mean batched push events/s ÷ mean single-event push events/s (ordering none, concurrency 32); null when the single-event runs were left out. */
  readonly ratioToSinglePush: number | null;
  /** Mean batched push events/s ÷ mean raw no-op kafkajs consumer events/s (the issue's goal: ≥ 0.5). */
  readonly ratioToRawConsumer: number;
}

/** Raw no-op consumer and batched push (and, unless `withSingle` is false, single-event push), alternating `rounds` times each, on the first `records` records of `topic`. */
export async function pushBatchBench(gwUrl: string, brokers: readonly string[], topic: string, records: number, shape: PushBatchShape, rounds = 2, log: (line: string) => void = () => undefined, withSingle = true, gatewayPid?: number): Promise<PushBatchBench> {
  const runs: (PushThroughputResult | BatchRun)[] = [];
  const single = { ordering: 'none', concurrency: 32 } as const;
  for (let i = 0; i < rounds; i++) {
    for (const run of [() => rawConsume(brokers, topic, records), () => pushBatchThroughput(gwUrl, records, shape, gatewayPid), ...(withSingle ? [() => pushThroughput(gwUrl, records, single)] : [])]) {
      const r: PushThroughputResult | BatchRun = await run();
      const base: PushThroughputResult = { name: r.name, records: r.records, elapsedS: r.elapsedS, eventsPerS: r.eventsPerS };
      const kept: PushThroughputResult | BatchRun = isBatchRun(r) ? { ...base, eventsPerRequest: r.eventsPerRequest, firstEventS: r.firstEventS, ...(r.gatewayCpuUsPerEvent === undefined ? {} : { gatewayCpuUsPerEvent: r.gatewayCpuUsPerEvent }) } : base;
      runs.push(kept);
      log(`  ${r.name}: ${Math.round(r.eventsPerS)} events/s (${r.records} records in ${r.elapsedS.toFixed(1)} s${isBatchRun(kept) ? `, ${kept.eventsPerRequest.toFixed(1)} events per request, first after ${kept.firstEventS.toFixed(1)} s${kept.gatewayCpuUsPerEvent === undefined ? '' : `, gateway CPU ${kept.gatewayCpuUsPerEvent} µs/event`}` : ''})`);
    }
  }
  const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const ratio = (a: number, b: number): number => (b === 0 ? 0 : Number((a / b).toFixed(3)));
  const batched = mean(runs.filter(isBatchRun).map((r) => r.eventsPerS));
  const raw = mean(runs.filter((r) => r.name.startsWith('raw')).map((r) => r.eventsPerS));
  const one = mean(runs.filter((r) => r.name.startsWith('gateway') && !isBatchRun(r)).map((r) => r.eventsPerS));
  return { shape, runs, ratioToRawConsumer: ratio(batched, raw), ratioToSinglePush: withSingle ? ratio(batched, one) : null };
}
