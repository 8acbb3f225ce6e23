/**
 * `npx tsx bench/push-probe.ts`: where the time of one push delivery goes, stage by stage, at a
 * fixed offered rate (BENCH_PUSH_RATE, default 1,000 events/s, for BENCH_DURATION_S, default 5 s).
 * Per event id, one clock (this process):
 *   sent      — the POST /events leaves the load generator;
 *   acked     — its 202 arrives (ingress: parse, validate, encode, produce with acks=all);
 *   visible   — a raw kafkajs consumer in this process (own group, maxWaitTimeInMs 100) sees the record;
 *   delivered — the webhook sink (a process of its own; BENCH_SINK=inprocess: this one) receives the signed POST.
 * Prints p50/p90/p99 of acked−sent, visible−sent and delivered−sent. A diagnostic, not the bench
 * of record (that is `npm run bench`, written to BENCHMARKS.md).
 * Settings: BENCH_GATEWAY_ROOT (the gateway from another built checkout), BENCH_PUSH_ORDERING (key), BENCH_PUSH_CONCURRENCY (6), BENCH_PROFILE_DIR (CPU profile of the gateway child),
 * BENCH_WARMUP_S (5: seconds at the full rate before the window), BENCH_PROBE_VISIBLE (0: no raw consumer), BENCH_PROBE_DUMP (a file: every
 * event's sent/acked/visible/delivered times as JSON rows, for a timeline of the tail).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { readStackEnv } from '../scripts/stack/index.js';
import { loadCatalog } from '../src/catalog/index.js';
import { PRICE_LOADING_COMPLETED } from '../src/catalog/generated/index.js';
import { kafkajs } from '../src/transport/kafka/kafkajs.js';
import { catalogWithOwnTopics } from '../test/helpers/catalog-copy.js';
import { STRUCTURED, rawRecords, singleTemplates } from './lib/events.js';
import { startGatewayProcess } from './lib/gateway-process.js';
import { createPush, deleteSubscription, startSink } from './lib/push-load.js';
import { Latency } from './lib/stats.js';

const { Kafka, logLevel } = kafkajs();

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const num = (name: string, d: number): number => (process.env[name] ? Number(process.env[name]) : d);

async function main(): Promise<void> {
  const file = readStackEnv();
  const brokers = process.env.KAFKA_BROKERS ?? file?.KAFKA_BROKERS;
  const registryUrl = process.env.SCHEMA_REGISTRY_URL ?? file?.SCHEMA_REGISTRY_URL;
  if (!brokers || !registryUrl) throw new Error('no stack');
  const rate = num('BENCH_PUSH_RATE', 1000);
  const durationS = num('BENCH_DURATION_S', 5);
  const ordering = process.env.BENCH_PUSH_ORDERING === 'none' ? 'none' : 'key';
  const concurrency = num('BENCH_PUSH_CONCURRENCY', 6);
  const cat = catalogWithOwnTopics(`probe-${Date.now().toString(36)}`);
  const topic = loadCatalog(cat.dir).byEventId(PRICE_LOADING_COMPLETED.eventId)!.topic.name;
  const gw = await startGatewayProcess({
    root: process.env.BENCH_GATEWAY_ROOT ? resolve(process.env.BENCH_GATEWAY_ROOT) : ROOT,
    env: {
      KAFKA_BROKERS: brokers,
      SCHEMA_REGISTRY_URL: registryUrl,
      LOG_LEVEL: 'warn',
      CATALOG_DIR: cat.dir,
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      SUBSCRIPTIONS_TOPIC: `${topic}.subscriptions`,
      SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
    },
    readyTimeoutMs: 60_000,
    preferTsx: false, // dist/: run `npm run build` first
    ...(process.env.BENCH_PROFILE_DIR ? { cpuProfileDir: process.env.BENCH_PROFILE_DIR } : {}),
  });
  const sink = await startSink();
  const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const kafka = new Kafka({ clientId: 'push-probe', brokers: brokers.split(','), logLevel: logLevel.WARN });
  const consumer = kafka.consumer({ groupId: `push-probe-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 100 });
  const visible = new Map<string, number>();
  // BENCH_PROBE_VISIBLE=0: no raw consumer (its fetches load the broker and this process).
  const watchVisible = process.env.BENCH_PROBE_VISIBLE !== '0';
  try {
    if (watchVisible) {
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await consumer.run({
        partitionsConsumedConcurrently: 6,
        eachMessage: async ({ message }) => {
          const at = performance.now();
          const id = message.headers?.ce_id?.toString();
          if (id !== undefined && !visible.has(id)) visible.set(id, at);
        },
      });
    }
    if (process.env.BENCH_PROBE_MODE === 'throughput') {
      // Fill the topic through the gateway (batches of 100), then push it all from the earliest offset.
      const n = num('BENCH_PUSH_RECORDS', 20_000);
      // The records as the gateway writes them, produced by a raw producer (the gateway's CPU profile then shows delivery only).
      const records = await rawRecords(1000, registryUrl, 'http://127.0.0.1:8080/schemas/ids/', cat.dir, topic);
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      for (let i = 0; i < n; i += 500) {
        await producer.send({ topic, acks: -1, messages: records.slice(0, 500).map((r) => ({ key: r.key === null ? null : Buffer.from(r.key), value: r.value === null ? null : Buffer.from(r.value), headers: Object.fromEntries(r.headers.map(([k, v]) => [k, Buffer.from(v)])) })) });
      }
      await producer.disconnect();
      const t0 = performance.now();
      const sub = await createPush(gw.url, sink.url, 'earliest', concurrency, ordering);
      while (sink.deliveries() < n) await new Promise((r) => setTimeout(r, 10));
      const s = (performance.now() - t0) / 1000;
      process.stdout.write(`push throughput: ${n} events in ${s.toFixed(2)} s = ${Math.round(n / s)} events/s (ordering ${ordering}, concurrency ${concurrency})\n`);
      await deleteSubscription(gw.url, sub);
      return;
    }
    // BENCH_PROBE_MODE=ingress: no subscription (what the ingress alone costs at this rate).
    const ingressOnly = process.env.BENCH_PROBE_MODE === 'ingress';
    const name = ingressOnly ? undefined : await createPush(gw.url, sink.url, 'latest', concurrency, ordering);
    const templates = singleTemplates(36);
    const sent = new Map<string, number>();
    const acked = new Map<string, number>();
    const inflight = new Set<Promise<void>>();
    const run = async (seconds: number, record: boolean, perS = rate): Promise<void> => {
      const total = Math.round(seconds * perS);
      const t0 = performance.now();
      for (let i = 0; i < total; i++) {
        const wait = t0 + (i * 1000) / perS - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const body = templates[i % templates.length]!.render();
        const id = (JSON.parse(body) as { id: string }).id;
        if (record) sent.set(id, performance.now());
        const p = request(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': STRUCTURED }, body, dispatcher: agent }).then(async (res) => {
          await res.body.dump();
          if (record) acked.set(id, performance.now());
        });
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      await Promise.all([...inflight]);
    };
    // Until the member has joined, one event per 100 ms: at the full rate the join time (seconds)
    // became a backlog that the window then measured (2026-12-02: p99 0.5 s, all of it in the
    // window's first second; steady state after it).
    while (!ingressOnly && sink.deliveries() === 0) await run(0.1, false, 10);
    await run(num('BENCH_WARMUP_S', 5), false);
    const cpu0 = gw.cpuMs();
    await run(durationS, true);
    const cpuUsPerEvent = ((gw.cpuMs() - cpu0) * 1000) / (durationS * rate);
    const deadline = performance.now() + 30_000;
    while (!ingressOnly && [...sent.keys()].some((id) => !sink.firstSeen.has(id)) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const stage = (label: string, m: Map<string, number>): void => {
      const l = new Latency();
      for (const [id, t] of sent) {
        const at = m.get(id);
        if (at !== undefined) l.recordMs(at - t);
      }
      process.stdout.write(`${label.padEnd(22)} n=${String(l.count).padStart(6)} p50 ${l.percentileMs(50).toFixed(1)} ms  p90 ${l.percentileMs(90).toFixed(1)} ms  p99 ${l.percentileMs(99).toFixed(1)} ms  max ${l.maxMs.toFixed(1)} ms\n`);
    };
    process.stdout.write(`rate ${rate}/s, ${durationS} s, ordering ${ordering}, concurrency ${concurrency}; gateway CPU in the window ${cpuUsPerEvent.toFixed(0)} µs per event offered (all threads)\n`);
    stage('acked (202)', acked);
    stage('visible (raw consumer)', visible);
    stage('delivered (sink)', sink.firstSeen);
    // Where the tail is in time: a backlog at the window's start (a short warm-up) reads as high
    // maxima in its first seconds only; a steady tail is spread over the window.
    const t0 = sent.values().next().value ?? 0; // the first sent (the map is in send order)
    const maxBySecond: number[] = [];
    for (const [id, t] of sent) {
      const at = sink.firstSeen.get(id);
      if (at === undefined) continue;
      const s = Math.floor((t - t0) / 1000);
      maxBySecond[s] = Math.max(maxBySecond[s] ?? 0, at - t);
    }
    process.stdout.write(`delivered, max per second of the window (ms): ${Array.from(maxBySecond, (m) => (m ?? 0).toFixed(0)).join(' ')}\n`);
    if (process.env.BENCH_PROBE_DUMP) {
      // Per event: sent, acked, visible, delivered (ms, this process's clock): for timelines of the tail.
      const rows = [...sent].map(([id, t]) => [t, acked.get(id) ?? null, visible.get(id) ?? null, sink.firstSeen.get(id) ?? null]);
      writeFileSync(process.env.BENCH_PROBE_DUMP, JSON.stringify(rows));
    }
    if (name !== undefined) await deleteSubscription(gw.url, name);
  } finally {
    if (watchVisible) await consumer.disconnect();
    await agent.close();
    await sink.close();
    await gw.stop();
    cat.cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`probe failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
