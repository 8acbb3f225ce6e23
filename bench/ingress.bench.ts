/**
 * `npm run bench`: HTTP ingress of the gateway vs the raw kafkajs producer, in one run on the same
 * broker (see BENCHMARKS.md).
 *
 * Four scenarios, each a warm-up then a measured window:
 *   raw single     — kafkajs, 1 pre-encoded record per send, N sends in flight
 *   gateway single — POST /events, structured mode, 1 event per request, N connections
 *   raw batch      — kafkajs, B pre-encoded records per send, M sends in flight
 *   gateway batch  — POST /events, application/cloudevents-batch+json of B events, M connections
 * The gateway runs as a child process (`ce-gateway serve`); autocannon and the raw producer run
 * here. The raw records are the same events encoded once by the gateway's own ingress code.
 *
 * Settings (environment): BENCH_CONNECTIONS (32), BENCH_BATCH_CONNECTIONS (8), BENCH_BATCH_SIZE
 * (100), BENCH_DURATION_S (10), BENCH_WARMUP_S (2), BENCH_TSX=1 to run the gateway from src with tsx,
 * BENCH_SCENARIOS (comma list of raw-single, gateway-single, raw-batch, gateway-batch, raw-consume,
 * raw-decode-consume, gateway-consume, single-latency, rss, rss-lean (a gateway with the lean heap settings
 * of README "Memory"), each of those four with a -platformatic twin, …; default all), BENCH_CONSUME_RECORDS (200000: records read by the consume
 * scenarios; the topic is filled up to that many first), BENCH_CONSUME_CLIENTS (kafkajs,platformatic: the
 * clients gateway-consume runs on, each in this process from the checkout's dist/, and from
 * BENCH_BASELINE_ROOT's right after when set; `--profile` profiles each read into <profile>/consume/),
 * BENCH_PROFILE_DIR (the gateway child writes a V8 .cpuprofile there on exit),
 * BENCH_PUSH_RATE (1000 events/s offered in push-latency), BENCH_PUSH_WARMUP_S (5: push-latency's warm-up on
 * each new subscription, reported apart; at least this long), BENCH_PUSH_WARMUP_MAX_S (30: the warm-up
 * goes on while the subscription has over 100 ms of events undelivered, up to this), BENCH_PUSH_RECORDS (20000, push-consume),
 * BENCH_PUSH_WINDOW (32: `concurrency` of the ordering-none push subscription and the raw consumer
 * + POST it is compared with), BENCH_PUSH_CLIENT (kafkajs or platformatic: the gateway child the push
 * scenarios measure; default: the gateway's default client), BENCH_PUSH_LAYOUT (both: push-latency on one gateway
 * process and on two — ingress on a BUS_ROLE=publisher gateway, delivery on another; single or split
 * for one of them; with BENCH_BASELINE_ROOT the baseline's one-process gateway too), BENCH_SINK (the push sink runs in a process of its own;
 * `inprocess` for the old sink in this process). `bench/push-probe.ts` splits one push delivery's
 * latency into stages.
 * push-batch (batched push delivery vs the raw no-op kafkajs consumer, alternating):
 * BENCH_PUSH_BATCH (500: `batch.maxEvents`), BENCH_PUSH_BATCH_RECORDS (200000: records each push-batch run reads), BENCH_PUSH_BATCH_ORDERING (none),
 * BENCH_PUSH_BATCH_CONCURRENCY (2 × BENCH_PUSH_BATCH, at most 1000: the subscription's `concurrency`), BENCH_PUSH_BATCH_SINGLE (1; 0 leaves out
 * the single-event push runs, e.g. to profile batched push alone).
 * Prints a Markdown table and writes bench/results/<timestamp>.json.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchStack, intEnv, preferTsx, rssBytes } from './lib/setup.js';
import { gatewayPoster, runFixedRate } from './lib/fixed-rate.js';
import { startRawHttpProducer } from './lib/raw-http-child.js';
import type { RawHttpChild } from './lib/raw-http-child.js';
import type { FixedRateResult } from './lib/fixed-rate.js';
import { profileSummary, writeFlameGraph } from './lib/profile.js';
import { BATCH, STRUCTURED, batchTemplates, rawRecords, singleTemplates } from './lib/events.js';
import { loadCatalog } from '../src/catalog/index.js';
import { PRICE_LOADING_COMPLETED } from '../src/catalog/generated/index.js';
import { catalogWithOwnTopics } from '../test/helpers/catalog-copy.js';

// The bench writes hundreds of thousands of records: to topics of its own run (a catalog copy),
// never to the stack's real catalog topics that tests and other tools read.
const benchCatalog = catalogWithOwnTopics(`bench-${Date.now().toString(36)}`);
const TOPIC = loadCatalog(benchCatalog.dir).byEventId(PRICE_LOADING_COMPLETED.eventId)!.topic.name;
import type { GatewayProcess } from './lib/gateway-process.js';
import { procCpuMs, startGatewayProcess } from './lib/gateway-process.js';
import { runHttpLoad } from './lib/http-load.js';
import { describeGc, describeRuntime, runtimeWindow, scrape } from './lib/runtime-metrics.js';
import type { RuntimeWindow, Scrape } from './lib/runtime-metrics.js';
import type { ConsumeResult } from './lib/consumer-load.js';
import { gatewayConsume, rawConsume } from './lib/consumer-load.js';
import type { PushLatencyResult, PushThroughputResult } from './lib/push-load.js';
import { writeBackDirtyPages } from './lib/settle.js';
import { pushLatency, pushRatios, pushThroughput, rawConsumePost } from './lib/push-load.js';
import type { PushBatchBench } from './lib/push-batch-load.js';
import { isBatchRun, pushBatchBench } from './lib/push-batch-load.js';
import { randomBytes } from 'node:crypto';
import type { RawClient } from './lib/raw-load.js';
import { PRODUCER_SETTINGS, connectRaw, rawSend, runRawLoad } from './lib/raw-load.js';
import type { Latency, ScenarioResult } from './lib/stats.js';
import { formatTable, latencySummary } from './lib/stats.js';
import type { JavaLimit } from './lib/java-limit.js';
import { javaProducerLimit } from './lib/java-limit.js';
import type { RawPlatformatic } from './lib/raw-platformatic.js';
import { connectRawPlatformatic, platformaticSender, runRawPlatformaticLoad } from './lib/raw-platformatic.js';
import { loadConfig } from '../src/config/index.js';

type Client = 'kafkajs' | 'platformatic';
/** The gateway's default client (config), written with every run. */
const DEFAULT_CLIENT: Client = loadConfig({ KAFKA_BROKERS: '127.0.0.1:1' }).kafka!.client;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Where the gateway children run from: this checkout, or BENCH_GATEWAY_ROOT (another built checkout, e.g. the base of an A/B). */
const GW_ROOT = process.env.BENCH_GATEWAY_ROOT ? resolve(process.env.BENCH_GATEWAY_ROOT) : ROOT;

const settings = {
  connections: intEnv('BENCH_CONNECTIONS', 32),
  batchConnections: intEnv('BENCH_BATCH_CONNECTIONS', 8),
  batchSize: intEnv('BENCH_BATCH_SIZE', 100),
  durationS: intEnv('BENCH_DURATION_S', 10),
  warmupS: intEnv('BENCH_WARMUP_S', 2),
  /**
   * push-latency: seconds at the full rate before the window, on each new subscription. A new
   * subscription's first 1–2 s at 1,000/s run on a cold delivery path (JIT, new sink connections)
   * and build a backlog that takes 2–3 s to clear (timeline in BENCHMARKS.md, 2026-12-02); the
   * warm-up's own p99 and max are reported beside the window's.
   */
  pushWarmupS: intEnv('BENCH_PUSH_WARMUP_S', 5),
  /**
   * push-latency: the warm-up goes on past BENCH_PUSH_WARMUP_S while the subscription has more than
   * 100 ms of events undelivered (a cold gateway catching up; bench/lib/push-load.ts), up to this.
   */
  pushWarmupMaxS: intEnv('BENCH_PUSH_WARMUP_MAX_S', 30),
  /** single-latency: the fixed offered rate, events/s (issue 14: 1,000). */
  latencyRate: intEnv('BENCH_LATENCY_RATE', 1000),
  /** rss: offered events/s, seconds, events per request (issue 14: 5,000/s for 60 s). */
  rssRate: intEnv('BENCH_RSS_RATE', 5000),
  rssDurationS: intEnv('BENCH_RSS_DURATION_S', 60),
  rssBatch: intEnv('BENCH_RSS_BATCH', 10),
  /** `gateway*-batch-workers`: GATEWAY_WORKERS of that gateway (the batch ingress on more than one core). */
  workers: intEnv('BENCH_GATEWAY_WORKERS', 2),
} as const;

/** `npm run bench -- --profile`: CPU profiles + flame graphs of the gateway children into bench/results/<time>-profile/. */
const args = parseArgs({ options: { profile: { type: 'boolean', default: false } }, strict: true }).values;
const STAMP = new Date().toISOString().replace(/[:.]/g, '-');
/** Where the gateway children write their .cpuprofile (per client); undefined = not profiled. */
const PROFILE_DIR = args.profile === true ? join(ROOT, 'bench/results', `${STAMP}-profile`) : process.env.BENCH_PROFILE_DIR ? resolve(process.env.BENCH_PROFILE_DIR) : undefined;
/**
 * BENCH_BASELINE_ROOT: another checkout of the project, built (`npm run build`): every gateway
 * scenario also runs against a gateway from there, right after this tree's, in the same run — the
 * A/B of a hot-path change on a noisy machine.
 */
const BASELINE_ROOT = process.env.BENCH_BASELINE_ROOT ? resolve(process.env.BENCH_BASELINE_ROOT) : undefined;

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const pct = (cpuMs: number, wallS: number): number => (cpuMs / (wallS * 1000)) * 100;
/** Pause after each scenario, ms, before the topic's end offsets are read. */
const SETTLE_MS = 1000;

interface Probe {
  readonly gw: GatewayProcess;
  /** By client, and by `<client>@baseline` when BENCH_BASELINE_ROOT is set. */
  readonly gws: Readonly<Record<string, GatewayProcess>>;
  readonly raw: RawClient;
  readonly rawPlt: RawPlatformatic;
  /** The broker's pid (stack pid file), for its CPU time; undefined when unknown. */
  readonly brokerPid: number | undefined;
  /** A new gateway child of `client` (from the baseline checkout with `build`), for scenarios that must not inherit another's heap. */
  readonly fresh: (client: Client, build?: 'baseline', extraEnv?: Record<string, string>) => Promise<GatewayProcess>;
  /** The like-for-like baseline of single-latency-platformatic: node:http + the raw producer in a child process. */
  readonly rawHttp: () => Promise<RawHttpChild>;
}

interface Window {
  readonly ok: number;
  readonly errors: number;
  readonly elapsedS: number;
  readonly latency: Latency;
}

/**
 * Warm-up, then the measured window with CPU sampling of the three processes, then a settle pause
 * so that late records (requests cut off when autocannon stops) land before the offsets are read.
 */
async function scenario(p: Probe, meta: { side: 'gateway' | 'raw'; client: Client; mode: 'single' | 'batch'; concurrency: number; eventsPerRequest: number; build?: 'baseline'; workers?: number }, run: (durationS: number) => Promise<Window>): Promise<ScenarioResult> {
  const before = await p.raw.endOffsetSum();
  const warm = await run(settings.warmupS);
  const gw0 = p.gw.cpuMs();
  const broker0 = p.brokerPid === undefined ? Number.NaN : procCpuMs(p.brokerPid);
  const me0 = process.cpuUsage();
  const r = await run(settings.durationS);
  const gwCpu = p.gw.cpuMs() - gw0;
  const brokerCpu = p.brokerPid === undefined ? Number.NaN : procCpuMs(p.brokerPid) - broker0;
  const me = process.cpuUsage(me0);
  await new Promise((ok) => setTimeout(ok, SETTLE_MS));
  const after = await p.raw.endOffsetSum();
  const n = meta.eventsPerRequest;
  const orNull = (cpuMs: number): number | null => (Number.isNaN(cpuMs) ? null : pct(cpuMs, r.elapsedS));
  return {
    name: `${meta.side === 'raw' ? `raw ${meta.client}` : `gateway (${meta.client}${meta.workers === undefined ? '' : `, ${meta.workers} workers`})`} ${meta.mode}${meta.build === 'baseline' ? ' [baseline]' : ''}`,
    ...meta,
    durationS: r.elapsedS,
    requests: r.ok,
    events: r.ok * n,
    eventsPerS: (r.ok * n) / r.elapsedS,
    requestsPerS: r.ok / r.elapsedS,
    latencyMs: latencySummary(r.latency),
    errors: r.errors + warm.errors,
    cpu: { gatewayPct: orNull(gwCpu), benchPct: pct((me.user + me.system) / 1000, r.elapsedS), brokerPct: orNull(brokerCpu) },
    cpuUsPerEvent: r.ok === 0 ? null : meta.side === 'raw' ? (me.user + me.system) / (r.ok * n) : Number.isNaN(gwCpu) ? null : (gwCpu * 1000) / (r.ok * n),
    recordsWritten: after - before,
    eventsAcknowledged: (warm.ok + r.ok) * n,
  };
}

function gatewayScenario(p0: Probe, mode: 'single' | 'batch', client: Client = 'kafkajs', build?: 'baseline', workers?: { readonly gw: GatewayProcess; readonly n: number }): Promise<ScenarioResult> {
  const p: Probe = { ...p0, gw: workers?.gw ?? p0.gws[build === undefined ? client : `${client}@baseline`]! };
  const single = mode === 'single';
  const concurrency = single ? settings.connections : settings.batchConnections;
  const load = {
    url: p.gw.url,
    contentType: single ? STRUCTURED : BATCH,
    templates: single ? singleTemplates(360) : batchTemplates(36, settings.batchSize),
    connections: concurrency,
  };
  return scenario(p, { side: 'gateway', client, mode, concurrency, eventsPerRequest: single ? 1 : settings.batchSize, ...(build === undefined ? {} : { build }), ...(workers === undefined ? {} : { workers: workers.n }) }, async (durationS) => {
    const r = await runHttpLoad({ ...load, durationS });
    if (Object.keys(r.statuses).length > 0) log(`  gateway ${mode}: non-2xx answers ${JSON.stringify(r.statuses)}`);
    return r;
  });
}

/**
 * Batch ingress on a gateway of `settings.workers` processes behind one port (GATEWAY_WORKERS,
 * node:cluster), started for this scenario and stopped after it; its CPU is the primary's and the
 * workers' together.
 */
async function gatewayWorkersScenario(p: Probe, client: Client): Promise<ScenarioResult> {
  const gw = await p.fresh(client, undefined, { GATEWAY_WORKERS: String(settings.workers) });
  try {
    return await gatewayScenario(p, 'batch', client, undefined, { gw, n: settings.workers });
  } finally {
    await gw.stop();
  }
}

function rawScenario(p: Probe, mode: 'single' | 'batch', client: Client = 'kafkajs'): Promise<ScenarioResult> {
  const single = mode === 'single';
  const concurrency = single ? settings.connections : settings.batchConnections;
  const perSend = single ? 1 : settings.batchSize;
  return scenario(p, { side: 'raw', client, mode, concurrency, eventsPerRequest: perSend }, (durationS) =>
    client === 'kafkajs' ? runRawLoad(p.raw, { topic: TOPIC, concurrency, perSend, durationS }) : runRawPlatformaticLoad(p.rawPlt, { concurrency, perSend, durationS }));
}

/** A fixed-rate run as figures: ms from each request's due time to its answer. */
interface FixedRateFigures {
  readonly sent: number;
  readonly ok: number;
  readonly errors: number;
  readonly latencyMs: ScenarioResult['latencyMs'];
}
const figures = (r: FixedRateResult): FixedRateFigures => ({ sent: r.sent, ok: r.ok, errors: r.errors, latencyMs: latencySummary(r.latency) });

/** Single events at a fixed offered rate: a raw send of one record vs `POST /events` of one event (issue 14: added p99 ≤ 1 ms at 1,000/s). */
export interface SingleLatencyResult {
  readonly client: Client;
  /** Set on the twin run against BENCH_BASELINE_ROOT's gateway. */
  readonly build?: 'baseline';
  readonly offeredPerS: number;
  readonly raw: FixedRateFigures;
  readonly gateway: FixedRateFigures;
  /** Gateway p99 − raw p99, ms. */
  readonly addedP99Ms: number;
  /**
   * platformatic, this tree only: the like-for-like baseline — `POST` (same client, same body) to
   * node:http + the raw producer in a child process of its own (bench/lib/raw-http-producer.ts),
   * so HTTP and a second process are on both sides; and gateway p99 − its p99, ms.
   */
  readonly rawHttp?: FixedRateFigures;
  readonly addedP99OverHttpMs?: number;
  /** The gateway's event-loop delay, GC pauses, produce and HTTP times during its window (its /metrics). */
  readonly runtime: RuntimeWindow;
}

/** Warm-up, then the measured window, at `settings.latencyRate`; raw first, then the gateway of the same client. */
async function singleLatency(p: Probe, client: Client, build?: 'baseline'): Promise<SingleLatencyResult> {
  const rate = settings.latencyRate;
  let i = 0;
  const sendPlt = platformaticSender(p.rawPlt);
  const rawOne =
    client === 'kafkajs'
      ? () => rawSend(p.raw, TOPIC, [p.raw.messages[i++ % p.raw.messages.length]!]).then(() => true, () => false)
      : () => sendPlt([p.rawPlt.messages[i++ % p.rawPlt.messages.length]!]);
  const gwUrl = p.gws[build === undefined ? client : `${client}@baseline`]!.url;
  const poster = gatewayPoster(gwUrl, STRUCTURED, singleTemplates(360));
  const measured = async (send: () => Promise<boolean>, beforeWindow?: () => Promise<void>): Promise<FixedRateResult> => {
    await runFixedRate({ ratePerS: rate, durationS: settings.warmupS, send });
    await beforeWindow?.();
    return runFixedRate({ ratePerS: rate, durationS: settings.durationS, send });
  };
  try {
    const raw = figures(await measured(rawOne));
    let rawHttp: FixedRateFigures | undefined;
    if (client === 'platformatic' && build === undefined) {
      const child = await p.rawHttp();
      const httpPoster = gatewayPoster(child.url, STRUCTURED, singleTemplates(360));
      try {
        rawHttp = figures(await measured(httpPoster.send));
      } finally {
        await httpPoster.close();
        await child.stop();
      }
    }
    // The gateway's own view of the window (event-loop delay, GC pauses, produce and HTTP times): where the added p99 comes from.
    let before: Scrape | undefined;
    const gateway = figures(await measured(poster.send, async () => void (before = await scrape(gwUrl))));
    const runtime = runtimeWindow(before!, await scrape(gwUrl));
    const r = {
      client,
      ...(build === undefined ? {} : { build }),
      offeredPerS: rate,
      raw,
      gateway,
      addedP99Ms: Number((gateway.latencyMs.p99 - raw.latencyMs.p99).toFixed(3)),
      ...(rawHttp === undefined ? {} : { rawHttp, addedP99OverHttpMs: Number((gateway.latencyMs.p99 - rawHttp.latencyMs.p99).toFixed(3)) }),
      runtime,
    };
    if (rawHttp !== undefined) log(`  ${client}: raw HTTP + producer p50 ${rawHttp.latencyMs.p50.toFixed(2)} ms, p99 ${rawHttp.latencyMs.p99.toFixed(2)} ms (errors ${rawHttp.errors}); gateway p99 over it ${r.addedP99OverHttpMs?.toFixed(2)} ms`);
    log(`  ${client}${build === undefined ? '' : ' [baseline]'}: raw p99 ${raw.latencyMs.p99.toFixed(2)} ms, gateway p99 ${gateway.latencyMs.p99.toFixed(2)} ms, added ${r.addedP99Ms.toFixed(2)} ms (errors ${raw.errors} / ${gateway.errors})`);
    log(`    gateway in the window: ${describeRuntime(runtime)}`);
    return r;
  } finally {
    await poster.close();
  }
}

/** The gateway child's memory while it sustains a fixed rate (issue 14: RSS ≤ 150 MB at 5,000 events/s for 60 s). */
export interface RssResult {
  readonly client: Client;
  /** Set on the twin run against BENCH_BASELINE_ROOT's gateway. */
  readonly build?: 'baseline';
  /** `lean`: the gateway ran with {@link LEAN_HEAP_ENV} (README "Memory"). */
  readonly heap?: 'lean';
  readonly offeredEventsPerS: number;
  readonly eventsPerRequest: number;
  readonly durationS: number;
  /** Events answered 202 ÷ elapsed time. */
  readonly acceptedEventsPerS: number;
  readonly requests: FixedRateFigures;
  /** VmRSS of the gateway child, MiB: before the load, the most seen (sampled every ~0.5 s), at the end. */
  readonly rssMiB: { readonly start: number; readonly peak: number; readonly final: number };
}

/** The lean heap settings (README "Memory"): V8's old generation grows by 20 % per full GC, semi-spaces of 8 MiB. */
const LEAN_HEAP_ENV = { HEAP_GROWING_PERCENT: '20', NODE_OPTIONS: '--max-semi-space-size=8' };

async function rssScenario(p: Probe, client: Client, build?: 'baseline', heap?: 'lean'): Promise<RssResult> {
  // A gateway of its own: the shared children's RSS carried what the earlier scenarios left
  // (start 127–281 MiB), so the peak said more about the run's order than about 5,000 events/s.
  const gw = await p.fresh(client, build, heap === 'lean' ? LEAN_HEAP_ENV : {});
  try {
    return { ...(await rssWindow(gw, client, build, heap)), ...(heap === undefined ? {} : { heap }) };
  } finally {
    await gw.stop();
  }
}

async function rssWindow(gw: GatewayProcess, client: Client, build?: 'baseline', heap?: 'lean'): Promise<RssResult> {
  const n = settings.rssBatch;
  const poster = gatewayPoster(gw.url, n === 1 ? STRUCTURED : BATCH, n === 1 ? singleTemplates(360) : batchTemplates(36, n));
  const mib = (b: number): number => Number((b / 2 ** 20).toFixed(1));
  const start = rssBytes(gw.pid);
  let peak = start;
  const sample = (): void => void (peak = Math.max(peak, rssBytes(gw.pid)));
  try {
    log(`  ${client}${heap === undefined ? '' : ` (${heap} heap)`}: ${settings.rssRate} events/s (${n} per request) for ${settings.rssDurationS} s …`);
    const r = await runFixedRate({ ratePerS: settings.rssRate / n, durationS: settings.rssDurationS, send: poster.send, onTick: sample });
    sample();
    const res = { client, ...(build === undefined ? {} : { build }), offeredEventsPerS: settings.rssRate, eventsPerRequest: n, durationS: r.elapsedS, acceptedEventsPerS: (r.ok * n) / r.elapsedS, requests: figures(r), rssMiB: { start: mib(start), peak: mib(peak), final: mib(rssBytes(gw.pid)) } };
    log(`  ${client}${heap === undefined ? '' : ` (${heap} heap)`}${build === undefined ? '' : ' [baseline]'}: ${Math.round(res.acceptedEventsPerS)} events/s accepted, RSS ${res.rssMiB.start} → peak ${res.rssMiB.peak} → final ${res.rssMiB.final} MiB, p99 ${res.requests.latencyMs.p99.toFixed(1)} ms, errors ${r.errors}`);
    return res;
  } finally {
    await poster.close();
  }
}

/** The batched ÷ single-event push ratio as printed: `–` when the single-event runs were left out (BENCH_PUSH_BATCH_SINGLE=0). */
const singlePushRatio = (r: PushBatchBench): string => (r.ratioToSinglePush === null ? '–' : `${r.ratioToSinglePush}×`);

/**
 * push-batch: batched push delivery (`ordering` BENCH_PUSH_BATCH_ORDERING (none), `batch.maxEvents`
 * BENCH_PUSH_BATCH (500), `concurrency` BENCH_PUSH_BATCH_CONCURRENCY (twice that, at most 1000: two
 * batches in flight, so the next one fills while the sink answers the last, as docs/subscriptions.md
 * advises for throughput)) against the raw no-op kafkajs consumer on the same first
 * BENCH_PUSH_BATCH_RECORDS (200000) records, alternating twice.
 */
async function runPushBatch(gwUrl: string, brokers: readonly string[], raw: RawClient, gatewayPid?: number): Promise<PushBatchBench> {
  // 200,000 by default: with 20,000 the subscription's start (group join, handshake: 0.6–1.7 s) was
  // a third of each batched run, so the figure measured the start more than the delivery.
  const records = intEnv('BENCH_PUSH_BATCH_RECORDS', 200_000);
  const size = intEnv('BENCH_PUSH_BATCH', 500);
  const concurrency = intEnv('BENCH_PUSH_BATCH_CONCURRENCY', Math.min(1000, 2 * size));
  const ordering = process.env.BENCH_PUSH_BATCH_ORDERING === 'key' ? 'key' : 'none';
  while ((await raw.endOffsetSum()) < records) await runRawLoad(raw, { topic: TOPIC, concurrency: 8, perSend: 100, durationS: 2 });
  log(`running push-batch (ordering ${ordering}, concurrency ${concurrency}, batch.maxEvents ${size}) against the raw kafkajs consumer, ${records} records, twice each …`);
  const r = await pushBatchBench(gwUrl, brokers, TOPIC, records, { ordering, concurrency, maxEvents: size }, 2, log, process.env.BENCH_PUSH_BATCH_SINGLE !== '0', gatewayPid);
  log(`  batched push ÷ raw kafkajs consumer: ${r.ratioToRawConsumer}×; ÷ single-event push: ${singlePushRatio(r)}`);
  return r;
}

function pushBatchTable(r: PushBatchBench): string {
  const rows = r.runs.map((x) => `| ${x.name} | ${x.records} | ${Math.round(x.eventsPerS)} | ${isBatchRun(x) ? `${x.eventsPerRequest.toFixed(1)} | ${x.firstEventS.toFixed(1)} s | ${x.gatewayCpuUsPerEvent ?? '–'}` : '– | – | –'} |`).join('\n');
  return `| push throughput, batched (alternating runs) | records | events/s | events per request | first delivery after | gateway CPU µs/event |\n|---|---:|---:|---:|---:|---:|\n${rows}\n\nbatched push ÷ raw kafkajs consumer (means): ${r.ratioToRawConsumer}×; ÷ single-event push (ordering none, concurrency 32): ${singlePushRatio(r)}`;
}

async function main(): Promise<void> {
  const stack = benchStack();
  const { brokers, brokerList, registryUrl, machine } = stack;
  const dataschemaBase = 'http://127.0.0.1:8080/schemas/ids/';
  const how = preferTsx(GW_ROOT);
  if (how.note !== undefined) log(`note: ${how.note}`);

  log(`machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}, Kafka ${machine.kafka}`);
  log(`settings: ${JSON.stringify(settings)}`);
  const secretsKey = randomBytes(32).toString('base64');
  const startGw = (client: Client, root = GW_ROOT, extraEnv: Record<string, string> = {}, profiled = true): Promise<GatewayProcess> =>
    // A gateway of several workers is ready once each of them answers (2 rounds of the round-robin).
    startGatewayProcess({
      root,
      env: {
        KAFKA_BROKERS: brokers,
        SCHEMA_REGISTRY_URL: registryUrl,
        LOG_LEVEL: 'warn',
        DATASCHEMA_BASE_URL: dataschemaBase,
        CATALOG_DIR: benchCatalog.dir,
        KAFKA_CLIENT: client,
        // Push scenarios (on the kafkajs gateway): the sink is in this process on loopback; each
        // gateway has a definitions topic of its own, so a bench subscription runs on one instance.
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
        SUBSCRIPTIONS_TOPIC: `${TOPIC}.subscriptions.${client}${root === ROOT ? '' : '.baseline'}`,
        SUBSCRIPTION_SECRETS_KEY: secretsKey,
        ...extraEnv,
      },
      readyTimeoutMs: 60_000,
      readyAnswers: 2 * Number(extraEnv.GATEWAY_WORKERS ?? 1),
      preferTsx: root === ROOT ? how.tsx : false,
      // Profiled: the long-lived children of this tree (not the fresh RSS ones: one profile per client folder).
      ...(PROFILE_DIR === undefined || root !== ROOT || !profiled ? {} : { cpuProfileDir: join(PROFILE_DIR, client) }),
    });
  const gw = await startGw('kafkajs');
  const gwPlt = await startGw('platformatic');
  // The push scenarios follow the gateway's default client unless BENCH_PUSH_CLIENT names one.
  const pushClient: Client = process.env.BENCH_PUSH_CLIENT === 'platformatic' || process.env.BENCH_PUSH_CLIENT === 'kafkajs' ? process.env.BENCH_PUSH_CLIENT : DEFAULT_CLIENT;
  /**
   * BENCH_PUSH_LAYOUT: `single` (one gateway does ingress and delivery), `split` (ingress on a
   * gateway with BUS_ROLE=publisher, delivery on the push client's gateway: the two-process layout
   * of docs/deploy.md), or `both` (default: each push-latency shape on both layouts, in turn).
   */
  const pushLayout = (process.env.BENCH_PUSH_LAYOUT ?? 'both') as 'single' | 'split' | 'both';
  if (!['single', 'split', 'both'].includes(pushLayout)) throw new Error(`BENCH_PUSH_LAYOUT: single, split or both, not ${pushLayout}`);
  log(`gateway: ${gw.command} (pids ${gw.pid} kafkajs, ${gwPlt.pid} platformatic), ready`);
  const baseline: Record<string, GatewayProcess> = {};
  if (BASELINE_ROOT !== undefined) {
    for (const c of ['kafkajs', 'platformatic'] as const) baseline[`${c}@baseline`] = await startGw(c, BASELINE_ROOT);
    log(`baseline gateways from ${BASELINE_ROOT}: ready`);
  }
  const singleLatencies: SingleLatencyResult[] = [];
  const rssResults: RssResult[] = [];
  let raw: RawClient | undefined;
  let rawPlt: RawPlatformatic | undefined;
  let javaLimit: JavaLimit | { readonly error: string } | undefined;
  const results: ScenarioResult[] = [];
  const consumed: ConsumeResult[] = [];
  const pushed: PushLatencyResult[] = [];
  const pushThroughputs: PushThroughputResult[] = [];
  let pushBatch: PushBatchBench | undefined;
  try {
    const records = await rawRecords(1800, registryUrl, dataschemaBase, benchCatalog.dir, TOPIC);
    raw = await connectRaw(brokerList, TOPIC, records);
    const partitions = (await raw.admin.fetchTopicMetadata({ topics: [TOPIC] })).topics[0]!.partitions.length;
    rawPlt = connectRawPlatformatic(brokerList, TOPIC, partitions, records);
    const probe: Probe = { gw, gws: { kafkajs: gw, platformatic: gwPlt, ...baseline }, raw, rawPlt, brokerPid: stack.brokerPid, fresh: (client, build, extraEnv = {}) => startGw(client, build === undefined ? GW_ROOT : BASELINE_ROOT!, extraEnv, false), rawHttp: () => startRawHttpProducer({ brokers, registryUrl, catalogDir: benchCatalog.dir, topic: TOPIC, partitions, dataschemaBase }) };
    const sample = raw.messages[0]!;
    log(`record: key ${sample.key?.length ?? 0} B, value ${(sample.value as Buffer).length} B, ${Object.keys(sample.headers ?? {}).length} headers`);
    const producerScenarios: [string, () => Promise<ScenarioResult>][] = [
      ['raw-single', () => rawScenario(probe, 'single')],
      ['gateway-single', () => gatewayScenario(probe, 'single')],
      ['raw-batch', () => rawScenario(probe, 'batch')],
      ['gateway-batch', () => gatewayScenario(probe, 'batch')],
      ['raw-platformatic-single', () => rawScenario(probe, 'single', 'platformatic')],
      ['gateway-platformatic-single', () => gatewayScenario(probe, 'single', 'platformatic')],
      ['raw-platformatic-batch', () => rawScenario(probe, 'batch', 'platformatic')],
      ['gateway-platformatic-batch', () => gatewayScenario(probe, 'batch', 'platformatic')],
      ['gateway-batch-workers', () => gatewayWorkersScenario(probe, 'kafkajs')],
      ['gateway-platformatic-batch-workers', () => gatewayWorkersScenario(probe, 'platformatic')],
    ];
    // With a baseline, each gateway scenario is followed by its twin on the baseline gateway (same run, same load).
    const all = producerScenarios.flatMap(([n, run]): [string, () => Promise<ScenarioResult>][] => {
      if (BASELINE_ROOT === undefined || !n.startsWith('gateway-') || n.endsWith('-workers')) return [[n, run]];
      const [, client, mode] = /^gateway(-platformatic)?-(single|batch)$/.exec(n)!;
      const twin: [string, () => Promise<ScenarioResult>] = [`${n}@baseline`, () => gatewayScenario(probe, mode as 'single' | 'batch', client === undefined ? 'kafkajs' : 'platformatic', 'baseline')];
      // BENCH_BASELINE_FIRST=1: the baseline first, to see whether the order (a warmer broker, a busier machine) favours one.
      return process.env.BENCH_BASELINE_FIRST === '1' ? [twin, [n, run]] : [[n, run], twin];
    });
    const fixedRateScenarios = ([
      ['single-latency', async () => void singleLatencies.push(await singleLatency(probe, 'kafkajs'))],
      ['single-latency-platformatic', async () => void singleLatencies.push(await singleLatency(probe, 'platformatic'))],
      ['rss', async () => void rssResults.push(await rssScenario(probe, 'kafkajs'))],
      ['rss-platformatic', async () => void rssResults.push(await rssScenario(probe, 'platformatic'))],
      ['rss-lean', async () => void rssResults.push(await rssScenario(probe, 'kafkajs', undefined, 'lean'))],
      ['rss-lean-platformatic', async () => void rssResults.push(await rssScenario(probe, 'platformatic', undefined, 'lean'))],
    ] as [string, () => Promise<void>][]).flatMap(([n, run]): [string, () => Promise<void>][] => {
      // With a baseline, the baseline gateway runs each fixed-rate scenario right after this tree's (`[baseline]` rows).
      if (BASELINE_ROOT === undefined) return [[n, run]];
      const client: Client = n.endsWith('-platformatic') ? 'platformatic' : 'kafkajs';
      const heap = n.startsWith('rss-lean') ? 'lean' : undefined;
      const twin: [string, () => Promise<void>] = [
        `${n}@baseline`,
        n.startsWith('rss') ? async () => void rssResults.push(await rssScenario(probe, client, 'baseline', heap)) : async () => void singleLatencies.push(await singleLatency(probe, client, 'baseline')),
      ];
      return process.env.BENCH_BASELINE_FIRST === '1' ? [twin, [n, run]] : [[n, run], twin];
    });
    const wanted = (process.env.BENCH_SCENARIOS ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
    const unknown = wanted.filter((w) => !producerScenarios.some(([n]) => n === w) && !fixedRateScenarios.some(([n]) => n === w.replace(/@baseline$/, '')) && !['raw-consume', 'raw-decode-consume', 'gateway-consume', 'java-limit', 'push-latency', 'push-consume', 'push-batch'].includes(w));
    if (unknown.length > 0) throw new Error(`BENCH_SCENARIOS: unknown ${unknown.join(', ')}`);
    const plan = wanted.length === 0 ? all : all.filter(([n]) => wanted.includes(n.replace(/@baseline$/, '')));
    const consumeRecords = intEnv('BENCH_CONSUME_RECORDS', 200_000);
    const consumeClients = (process.env.BENCH_CONSUME_CLIENTS ?? 'kafkajs,platformatic').split(',').map((c) => c.trim()).filter((c): c is Client => c === 'kafkajs' || c === 'platformatic');
    const consumeScenarios: [string, () => Promise<ConsumeResult>][] = [
      ['raw-consume', () => rawConsume(brokerList, TOPIC, consumeRecords)],
      ['raw-decode-consume', () => rawConsume(brokerList, TOPIC, consumeRecords, registryUrl)],
      // Per client (BENCH_CONSUME_CLIENTS, default both), each followed by its baseline twin when BENCH_BASELINE_ROOT is set.
      ...consumeClients.flatMap((client) =>
        [ROOT, ...(BASELINE_ROOT === undefined ? [] : [BASELINE_ROOT])].map((root): [string, () => Promise<ConsumeResult>] => [
          'gateway-consume',
          () =>
            gatewayConsume({ KAFKA_BROKERS: brokers, SCHEMA_REGISTRY_URL: registryUrl, CATALOG_DIR: benchCatalog.dir, DATASCHEMA_BASE_URL: dataschemaBase }, consumeRecords, {
              root,
              client,
              ...(root === ROOT ? {} : { label: '@baseline' }),
              ...(PROFILE_DIR === undefined ? {} : { profileDir: join(PROFILE_DIR, 'consume') }),
            }),
        ]),
      ),
    ];
    const consumePlan = wanted.length === 0 ? consumeScenarios : consumeScenarios.filter(([n]) => wanted.includes(n));
    // Every scenario starts with the page cache written back: what one scenario wrote to the log
    // must not be flushed inside another's window (bench/lib/settle.ts).
    const settleDisk = async (): Promise<void> => {
      const dirty = await writeBackDirtyPages();
      if (dirty !== null && dirty >= 16) log(`  wrote back ${dirty} MiB of dirty pages first (sync)`);
    };
    for (const [name, run] of plan) {
      await settleDisk();
      log(`running ${name}: ${settings.warmupS} s warm-up + ${settings.durationS} s …`);
      const res = await run();
      results.push(res);
      log(`  ${Math.round(res.eventsPerS)} events/s, ${res.cpuUsPerEvent?.toFixed(1) ?? '–'} CPU µs/event, p50 ${res.latencyMs.p50.toFixed(2)} ms, p99 ${res.latencyMs.p99.toFixed(2)} ms, errors ${res.errors}`);
      if (res.recordsWritten !== res.eventsAcknowledged) log(`  note: the topic grew by ${res.recordsWritten} records for ${res.eventsAcknowledged} acknowledged events`);
    }
    for (const [name, run] of wanted.length === 0 ? fixedRateScenarios : fixedRateScenarios.filter(([n]) => wanted.includes(n.replace(/@baseline$/, '')))) {
      await settleDisk();
      log(`running ${name} …`);
      await run();
    }
    if (wanted.length === 0 || wanted.includes('java-limit')) {
      const libs = stack.kafkaLibs;
      await settleDisk();
      log('running java-limit: ProducerPerformance, acks=all, idempotent, 300-byte records …');
      try {
        if (libs === undefined) throw new Error('KAFKA_LIBS unknown');
        javaLimit = await javaProducerLimit({ libs, version: machine.kafka ?? '4.1.1', brokers: brokerList, topic: TOPIC, records: intEnv('BENCH_JAVA_RECORDS', 2_000_000), recordSize: 300 });
        log(`  ${Math.round(javaLimit.eventsPerS)} records/s`);
      } catch (err) {
        javaLimit = { error: err instanceof Error ? err.message : String(err) };
        log(`  java-limit failed: ${javaLimit.error}`);
      }
    }
    if (consumePlan.length > 0) {
      // Fill the topic up to the records the consumers read (the producer scenarios may have written enough).
      let have = await raw.endOffsetSum();
      if (have < consumeRecords) log(`filling ${TOPIC} to ${consumeRecords} records …`);
      while (have < consumeRecords) {
        await runRawLoad(raw, { topic: TOPIC, concurrency: 8, perSend: 100, durationS: 2 });
        have = await raw.endOffsetSum();
      }
      for (const [name, run] of consumePlan) {
        await settleDisk();
        log(`running ${name}: the first ${consumeRecords} of ${have} records …`);
        const res = await run();
        consumed.push(res);
        log(`  ${Math.round(res.eventsPerS)} events/s in ${res.elapsedS.toFixed(1)} s, CPU ${res.cpuPct.toFixed(0)} %`);
      }
    }
    // The gateway child whose push subscriptions are measured: kafkajs (default) or BENCH_PUSH_CLIENT=platformatic.
    const pushGw = pushClient === 'platformatic' ? gwPlt : gw;
    const pushBaseline = baseline[`${pushClient}@baseline`];
    const pushRate = intEnv('BENCH_PUSH_RATE', 1000);
    const pushRecords = intEnv('BENCH_PUSH_RECORDS', 20_000);
    const pushWindow = intEnv('BENCH_PUSH_WINDOW', 32);
    const keyPerPartition = { ordering: 'key' as const, concurrency: 6 };
    const noneWindow = { ordering: 'none' as const, concurrency: pushWindow };
    const shapes = [keyPerPartition, noneWindow] as const;
    if (wanted.length === 0 || wanted.includes('push-latency')) {
      // The split layout: an ingress-only gateway (BUS_ROLE=publisher) on the delivering gateway's definitions topic.
      const wantsSplit = pushLayout !== 'single';
      const ingressOnly = wantsSplit
        ? await startGw(pushClient, GW_ROOT, { BUS_ROLE: 'publisher', SUBSCRIPTIONS_TOPIC: `${TOPIC}.subscriptions.${pushClient}` })
        : undefined;
      const targets: { readonly label: string; readonly api: string; readonly ingress: string }[] = [
        ...(pushLayout === 'split' ? [] : [{ label: `${pushClient}, one process`, api: pushGw.url, ingress: pushGw.url }]),
        ...(pushBaseline === undefined || pushLayout === 'split' ? [] : [{ label: `${pushClient}@baseline, one process`, api: pushBaseline.url, ingress: pushBaseline.url }]),
        ...(ingressOnly === undefined ? [] : [{ label: `${pushClient}, ingress and delivery in two processes`, api: pushGw.url, ingress: ingressOnly.url }]),
      ];
      try {
        // Per-key lanes let ordering key use the same window as none (different keys at once), so the
        // latency runs add key with the window: key/6 is the old one-per-partition shape.
        for (const shape of [keyPerPartition, { ordering: 'key' as const, concurrency: pushWindow }, noneWindow]) {
          for (const t of targets) {
            log(`running push-latency (${t.label}; ordering ${shape.ordering}, concurrency ${shape.concurrency}): ${pushRate} events/s offered, ${settings.pushWarmupS} s warm-up + ${settings.durationS} s …`);
            await settleDisk();
            const r = await pushLatency(t.api, pushRate, settings.durationS, settings.pushWarmupS, shape, t.ingress, settings.pushWarmupMaxS);
            pushed.push({ ...r, name: `${t.label}: ${r.name}` });
            log(`  delivered ${r.delivered}/${r.sent}, p50 ${r.latencyMs.p50.toFixed(2)} ms, p99 ${r.latencyMs.p99.toFixed(2)} ms (warm-up ${r.warmupS} s${r.behindAtWindow > 0 ? `, ${r.behindAtWindow} undelivered at the window` : ''}: p99 ${r.warmupLatencyMs.p99.toFixed(1)} ms, max ${r.warmupLatencyMs.max.toFixed(1)} ms), POST errors ${r.postErrors}; POST → 202 p99 ${r.split.ingressMs.p99.toFixed(2)} ms, 202 → sink p99 ${r.split.deliveryMs.p99.toFixed(2)} ms, tail (${r.split.tail.events} events ≥ p99) ${r.split.tail.ingressMeanMs} + ${r.split.tail.deliveryMeanMs} ms`);
            log(`    delivering gateway in the window: ${describeRuntime(r.runtime)}`);
          }
        }
      } finally {
        await ingressOnly?.stop();
      }
    }
    if (wanted.length === 0 || wanted.includes('push-consume')) {
      let have = await raw.endOffsetSum();
      while (have < pushRecords) {
        await runRawLoad(raw, { topic: TOPIC, concurrency: 8, perSend: 100, durationS: 2 });
        have = await raw.endOffsetSum();
      }
      // Interleaved, so that a change of the machine's load during the run hits raw and gateway alike.
      const runs = [
        () => rawConsume(brokerList, TOPIC, pushRecords),
        () => rawConsumePost(brokerList, TOPIC, pushRecords),
        () => pushThroughput(pushGw.url, pushRecords, shapes[0]),
        () => rawConsumePost(brokerList, TOPIC, pushRecords, pushWindow),
        () => pushThroughput(pushGw.url, pushRecords, shapes[1]),
      ];
      // A sink that takes 20 ms per answer: what the in-flight window of ordering none is for.
      const slow = intEnv('BENCH_PUSH_SLOW_RECORDS', 3000);
      runs.push(
        () => pushThroughput(pushGw.url, slow, shapes[0], 20),
        () => pushThroughput(pushGw.url, slow, shapes[1], 20),
      );
      for (const run of runs) {
        await settleDisk();
        const r = await run();
        pushThroughputs.push({ name: r.name, records: r.records, elapsedS: r.elapsedS, eventsPerS: r.eventsPerS });
        log(`  ${r.name}: ${Math.round(r.eventsPerS)} events/s (${r.records} records in ${r.elapsedS.toFixed(1)} s)`);
      }
    }
    if (wanted.length === 0 || wanted.includes('push-batch')) await settleDisk();
    if (wanted.length === 0 || wanted.includes('push-batch')) pushBatch = await runPushBatch(pushGw.url, brokerList, raw, pushGw.pid);
  } finally {
    await raw?.close();
    await rawPlt?.close();
    await Promise.all([gw.stop(), gwPlt.stop(), ...Object.values(baseline).map((b) => b.stop())]);
    benchCatalog.cleanup();
  }

  let table = formatTable(results);
  if (consumed.length > 0) {
    const w = consumed.find((c) => c.side === 'raw');
    table += `\n\n| consume scenario | records | events/s | CPU (bench process) |\n|---|---:|---:|---:|\n${consumed.map((c) => `| ${c.name} | ${c.records} | ${Math.round(c.eventsPerS)} | ${c.cpuPct.toFixed(0)} % |`).join('\n')}`;
    const d = consumed.find((c) => c.side === 'raw-decode');
    for (const gc of consumed.filter((c) => c.side === 'gateway')) {
      if (w) table += `\n\n${gc.name} ÷ raw: ${(gc.eventsPerS / w.eventsPerS).toFixed(2)}×`;
      if (d) table += `${w ? '; ' : '\n\n'}${gc.name} ÷ raw with Avro decoding: ${(gc.eventsPerS / d.eventsPerS).toFixed(2)}×`;
    }
  }
  if (pushed.length > 0) {
    table += `\n\n| push latency (HTTP in → webhook out), single events, 6 partitions | offered | delivered / sent | p50 | p90 | p99 | max | warm-up (≥ ${settings.pushWarmupS} s, until caught up): s, p99 / max |\n|---|---:|---:|---:|---:|---:|---:|---:|\n${pushed.map((p) => `| ${p.name} | ${p.offeredPerS}/s | ${p.delivered} / ${p.sent} | ${p.latencyMs.p50.toFixed(2)} ms | ${p.latencyMs.p90.toFixed(2)} ms | ${p.latencyMs.p99.toFixed(2)} ms | ${p.latencyMs.max.toFixed(1)} ms | ${p.warmupS} s, ${p.warmupLatencyMs.p99.toFixed(1)} / ${p.warmupLatencyMs.max.toFixed(1)} ms |`).join('\n')}`;
    table += `\n\n| where the push-latency window's time went | POST → 202 p50 / p99 / max | 202 → sink p50 / p99 / max | events ≥ p99: count, mean POST → 202, mean 202 → sink |\n|---|---:|---:|---:|\n${pushed.map((p) => `| ${p.name} | ${p.split.ingressMs.p50.toFixed(2)} / ${p.split.ingressMs.p99.toFixed(2)} / ${p.split.ingressMs.max.toFixed(1)} ms | ${p.split.deliveryMs.p50.toFixed(2)} / ${p.split.deliveryMs.p99.toFixed(2)} / ${p.split.deliveryMs.max.toFixed(1)} ms | ${p.split.tail.events}: ${p.split.tail.ingressMeanMs} ms + ${p.split.tail.deliveryMeanMs} ms |`).join('\n')}`;
    table += `\n\n| delivering gateway during the push-latency window (its /metrics) | event-loop delay p99 / max | GC pauses (count × mean) | produce requests (count × mean) | POST /events (count × mean) |\n|---|---:|---|---:|---:|\n${pushed.map((p) => `| ${p.name} | ${p.runtime.eventLoopDelayMs.p99} / ${p.runtime.eventLoopDelayMs.max} ms | ${describeGc(p.runtime)} | ${p.runtime.produce.count} × ${p.runtime.produce.meanMs} ms | ${p.runtime.ingressHttp.count} × ${p.runtime.ingressHttp.meanMs} ms |`).join('\n')}`;
  }
  if (pushThroughputs.length > 0) {
    table += `\n\n| push throughput (same first records of the topic) | records | events/s |\n|---|---:|---:|\n${pushThroughputs.map((r) => `| ${r.name} | ${r.records} | ${Math.round(r.eventsPerS)} |`).join('\n')}`;
    const noop = pushThroughputs.find((r) => r.name === 'raw kafkajs consume');
    const pairs: [string, string][] = [
      ['ordering key', 'one at a time per partition'],
      ['ordering none', 'in flight)'],
    ];
    for (const [gw, rawPost] of pairs) {
      const g = pushThroughputs.find((r) => r.name.startsWith('gateway') && r.name.includes(gw) && !r.name.includes('sink answering after'));
      const post = pushThroughputs.find((r) => r.name.includes('POST') && r.name.includes(rawPost));
      if (g === undefined) continue;
      table += `\n\npush (${gw}) ÷ raw kafkajs consumer: ${noop ? (g.eventsPerS / noop.eventsPerS).toFixed(2) : '–'}×; ÷ raw kafkajs consumer + POST with the same deliveries in flight: ${post ? (g.eventsPerS / post.eventsPerS).toFixed(2) : '–'}×`;
    }
  }
  if (singleLatencies.length > 0) {
    table += `\n\n| single events at a fixed rate (latency from each request's due time) | offered | raw p50 | raw p99 | raw HTTP + producer p50 / p99 | gateway p50 | gateway p99 | added p99 (over raw / over raw HTTP) | errors raw / gateway |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n${singleLatencies.map((l) => `| ${l.client}${l.build === undefined ? '' : ' [baseline]'} | ${l.offeredPerS}/s | ${l.raw.latencyMs.p50.toFixed(2)} ms | ${l.raw.latencyMs.p99.toFixed(2)} ms | ${l.rawHttp === undefined ? '–' : `${l.rawHttp.latencyMs.p50.toFixed(2)} / ${l.rawHttp.latencyMs.p99.toFixed(2)} ms`} | ${l.gateway.latencyMs.p50.toFixed(2)} ms | ${l.gateway.latencyMs.p99.toFixed(2)} ms | **${l.addedP99Ms.toFixed(2)} ms** / ${l.addedP99OverHttpMs === undefined ? '–' : `**${l.addedP99OverHttpMs.toFixed(2)} ms**`} | ${l.raw.errors} / ${l.gateway.errors} |`).join('\n')}`;
  }
  if (singleLatencies.length > 0) {
    table += `\n\n| gateway during the fixed-rate window (its /metrics) | event-loop delay p99 / max | GC pauses (count × mean) | produce requests (count × mean) | POST /events (count × mean) |\n|---|---:|---|---:|---:|\n${singleLatencies.map((l) => `| ${l.client}${l.build === undefined ? '' : ' [baseline]'} | ${l.runtime.eventLoopDelayMs.p99} / ${l.runtime.eventLoopDelayMs.max} ms | ${describeGc(l.runtime)} | ${l.runtime.produce.count} × ${l.runtime.produce.meanMs} ms | ${l.runtime.ingressHttp.count} × ${l.runtime.ingressHttp.meanMs} ms |`).join('\n')}`;
  }
  if (rssResults.length > 0) {
    table += `\n\n| gateway RSS at a fixed rate | offered | events/request | seconds | accepted events/s | p99 | errors | RSS start | RSS peak | RSS final |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n${rssResults.map((r) => `| ${r.client}${r.heap === undefined ? '' : ` (${r.heap} heap)`}${r.build === undefined ? '' : ' [baseline]'} | ${r.offeredEventsPerS}/s | ${r.eventsPerRequest} | ${r.durationS.toFixed(0)} | ${Math.round(r.acceptedEventsPerS)} | ${r.requests.latencyMs.p99.toFixed(1)} ms | ${r.requests.errors} | ${r.rssMiB.start} MiB | **${r.rssMiB.peak} MiB** | ${r.rssMiB.final} MiB |`).join('\n')}`;
  }
  const profiles = PROFILE_DIR === undefined ? [] : writeProfiles(PROFILE_DIR);
  if (pushBatch !== undefined) table += `\n\n${pushBatchTable(pushBatch)}`;
  process.stdout.write(`\nce-gateway ingress bench — ${new Date().toISOString()}\n`);
  process.stdout.write(`machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB RAM, ${machine.platform}, node ${machine.node}, Kafka ${machine.kafka} (single broker on loopback); load generator on the same machine\n`);
  process.stdout.write(`gateway: ${gw.command}, LOG_LEVEL=warn; producer: idempotent, maxInFlightRequests 1, acks -1, no compression\n\n${table}\n`);

  // Ratios as numbers (null when a side was not run): gateway batch ÷ raw producer of the same client, ÷ Java producer.
  const batchOf = (side: 'gateway' | 'raw', client: Client): number | undefined => results.find((r) => r.side === side && r.client === client && r.mode === 'batch' && r.build === undefined && r.workers === undefined)?.eventsPerS;
  const workersBatchOf = (client: Client): number | undefined => results.find((r) => r.side === 'gateway' && r.client === client && r.workers !== undefined)?.eventsPerS;
  const ratio = (a: number | undefined, b: number | undefined): number | null => (a === undefined || b === undefined || b === 0 ? null : Number((a / b).toFixed(3)));
  const javaPerS = javaLimit !== undefined && 'eventsPerS' in javaLimit ? javaLimit.eventsPerS : undefined;
  const clients: Client[] = ['kafkajs', 'platformatic'];
  const ratios = {
    batch: Object.fromEntries(clients.map((c) => [c, ratio(batchOf('gateway', c), batchOf('raw', c))])),
    javaLimit: Object.fromEntries(clients.map((c) => [c, ratio(batchOf('gateway', c), javaPerS)])),
    // The same two on a gateway of BENCH_GATEWAY_WORKERS processes (GATEWAY_WORKERS): `gateway*-batch-workers`.
    batchWorkers: Object.fromEntries(clients.map((c) => [c, ratio(workersBatchOf(c), batchOf('raw', c))])),
    javaLimitWorkers: Object.fromEntries(clients.map((c) => [c, ratio(workersBatchOf(c), javaPerS)])),
    // The raw client's own batch figure ÷ the Java producer: the most javaLimit could be with that client.
    rawJavaLimit: Object.fromEntries(clients.map((c) => [c, ratio(batchOf('raw', c), javaPerS)])),
    singleAddedP99Ms: Object.fromEntries(clients.map((c) => [c, singleLatencies.find((l) => l.client === c && l.build === undefined)?.addedP99Ms ?? null])),
    singleAddedP99OverHttpMs: Object.fromEntries(clients.map((c) => [c, singleLatencies.find((l) => l.client === c && l.build === undefined)?.addedP99OverHttpMs ?? null])),
    rssPeakMiB: Object.fromEntries(clients.map((c) => [c, rssResults.find((r) => r.client === c && r.build === undefined && r.heap === undefined)?.rssMiB.peak ?? null])),
    rssLeanPeakMiB: Object.fromEntries(clients.map((c) => [c, rssResults.find((r) => r.client === c && r.build === undefined && r.heap === 'lean')?.rssMiB.peak ?? null])),
  };
  if (javaPerS !== undefined) table += `\n\nKafka's Java producer (ProducerPerformance, acks=all, idempotent, 300-byte records, no headers): ${Math.round(javaPerS)} records/s`;
  table += `\n\nratios (gateway batch ÷ raw producer of its client): ${JSON.stringify(ratios.batch)}; ÷ Java producer: ${JSON.stringify(ratios.javaLimit)}; with ${settings.workers} workers: ${JSON.stringify(ratios.batchWorkers)}, ÷ Java: ${JSON.stringify(ratios.javaLimitWorkers)} (raw producer ÷ Java producer: ${JSON.stringify(ratios.rawJavaLimit)}); single added p99 ms: ${JSON.stringify(ratios.singleAddedP99Ms)} (over raw HTTP + producer: ${JSON.stringify(ratios.singleAddedP99OverHttpMs)}); RSS peak MiB: ${JSON.stringify(ratios.rssPeakMiB)} (lean heap: ${JSON.stringify(ratios.rssLeanPeakMiB)}); default client: ${DEFAULT_CLIENT}`;
  const stamp = STAMP;
  const dir = join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `${stamp}.json`);
  writeFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), machine, defaultClient: DEFAULT_CLIENT, ratios: { ...ratios, push: pushRatios(pushThroughputs) }, pushClient, javaLimit: javaLimit ?? null, gateway: { command: gw.command, note: how.note ?? null }, settings, producer: PRODUCER_SETTINGS, baselineRoot: BASELINE_ROOT ?? null, results, singleLatency: singleLatencies, rss: rssResults, profiles, consume: consumed, push: { latency: pushed, throughput: pushThroughputs, batch: pushBatch ?? null } }, null, 2)}\n`);
  process.stdout.write(`\nresults: ${out}\n`);
}

/** For each client's .cpuprofile in `dir`: a speedscope flame graph and a text summary next to it; their paths. */
function writeProfiles(dir: string): { client: string; cpuprofile: string; flameGraph: string; summary: string }[] {
  const out: { client: string; cpuprofile: string; flameGraph: string; summary: string }[] = [];
  for (const client of readdirSync(dir)) {
    for (const f of readdirSync(join(dir, client)).filter((n) => n.endsWith('.cpuprofile'))) {
      const cpuprofile = join(dir, client, f);
      // consume/: the in-process consume scenarios, one profile per client and build.
      const name = client === 'consume' ? f.replace(/\.cpuprofile$/, '') : `gateway-${client}`;
      const flameGraph = writeFlameGraph(cpuprofile, dir, name);
      const summary = join(dir, `${name}.summary.txt`);
      writeFileSync(summary, profileSummary(cpuprofile));
      log(`profile (${client}): ${cpuprofile}\n  flame graph: ${flameGraph}\n  summary: ${summary}`);
      out.push({ client, cpuprofile, flameGraph, summary });
    }
  }
  return out;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
