/**
 * `npm run bench:subscriptions`: what one gateway instance costs with many push subscriptions
 * (issue 10) — resident memory, V8 heap, TCP connections to the broker and CPU — with 1, 100 and
 * 500 idle subscriptions and with 100 busy ones (among the 500), for both ways of running them:
 *   on-demand — the default: a subscription has a consumer-group member only while its group has lag;
 *   always-on — `SUBSCRIPTION_IDLE_STOP_MS=0`: a member per active subscription at all times
 *               (the behaviour before issue 10; the baseline).
 * Real Kafka and registry of the stack, the gateway as a child process (`ce-gateway serve`), one
 * webhook sink on loopback in this process serving every subscription by path.
 *
 * The 500 subscriptions are created once over HTTP, paused, on a definitions topic of this run;
 * each mode's gateway then activates 1, 100, 500 of them (PATCH state), waits until its members
 * settle, and measures a window. Busy: 5 events/s offered (a batch every 200 ms, answers not
 * awaited) of the kind the first 100 subscribe to; the window starts once those 100 have members.
 * CPU is also measured for the broker (STACK_KAFKA_PID_FILE): it serves every member's fetches.
 * Everything the run created on the broker (groups, dead-letter topics, topics) is deleted at the end.
 *
 * Settings (environment): BENCH_SUBS (500), BENCH_WINDOW_S (15), BENCH_BUSY_RATE (5 events/s: 500 deliveries/s to 100 subscriptions),
 * BENCH_MODES (on-demand,always-on), BENCH_TSX=1 (run the gateway from src). Writes
 * bench/results/subscriptions-<timestamp>.json and prints a Markdown table.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchStack, intEnv, rssBytes } from './lib/setup.js';
import { loadCatalog } from '../src/catalog/index.js';
import { catalogWithOwnTopics } from '../test/helpers/catalog-copy.js';
import type { GatewayProcess } from './lib/gateway-process.js';
import { procCpuMs, startGatewayProcess } from './lib/gateway-process.js';
import { cleanUpBroker, createSubscription, inParallel, memberCounts, processMetric, socketsTo, startFleetSink } from './lib/subscription-fleet.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SUBS = intEnv('BENCH_SUBS', 500);
const BUSY = Math.min(100, SUBS);
const WINDOW_S = intEnv('BENCH_WINDOW_S', 15);
const BUSY_RATE = intEnv('BENCH_BUSY_RATE', 5);
const MODES = (process.env.BENCH_MODES ?? 'on-demand,always-on').split(',').map((m) => m.trim()) as ('on-demand' | 'always-on')[];
const STEPS = [...new Set([1, Math.min(100, SUBS), SUBS])];
const OTHER_KINDS = ['SeriesUpdateCompleted', 'IndicatorsComputed'] as const;

const log = (line: string): void => void process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Row {
  readonly mode: string;
  readonly scenario: string;
  readonly subscriptions: number;
  readonly members: number;
  readonly rssMiB: number;
  readonly heapMiB: number;
  readonly brokerSockets: number;
  readonly cpuPct: number;
  readonly settleS: number;
  readonly delivered?: string;
  readonly eventsPerS?: number;
  readonly brokerCpuPct: number;
  readonly postP50Ms?: number;
  readonly postP99Ms?: number;
}

/** VmRSS of a process, MiB (Linux /proc). */
const rssMiB = (pid: number): number => rssBytes(pid) / 2 ** 20;

async function patchState(url: string, names: readonly string[], state: 'active' | 'paused'): Promise<void> {
  await inParallel(names, 16, async (name) => {
    const res = await fetch(`${url}/subscriptions/${name}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ state }) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`PATCH ${name} ${state}: ${res.status} ${text}`);
  });
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

/**
 * A measured window: CPU share of one core over it (the gateway's and the broker's); memory, heap
 * and member count at its end; the most sockets seen (sampled every second).
 */
async function measure(gw: GatewayProcess, brokerPort: number, brokerPid: number | undefined, seconds: number): Promise<{ rssMiB: number; heapMiB: number; brokerSockets: number; cpuPct: number; brokerCpuPct: number; members: number }> {
  const cpu0 = gw.cpuMs();
  const broker0 = brokerPid === undefined ? Number.NaN : procCpuMs(brokerPid);
  const t0 = performance.now();
  let sockets = socketsTo(gw.pid, brokerPort);
  const until = t0 + seconds * 1000;
  while (performance.now() < until) {
    await sleep(1000);
    sockets = Math.max(sockets, socketsTo(gw.pid, brokerPort));
  }
  const elapsed = performance.now() - t0;
  const cpuPct = ((gw.cpuMs() - cpu0) / elapsed) * 100;
  const brokerCpuPct = brokerPid === undefined ? Number.NaN : ((procCpuMs(brokerPid) - broker0) / elapsed) * 100;
  const heap = await processMetric(gw.url, 'nodejs_heap_size_used_bytes');
  return { rssMiB: rssMiB(gw.pid), heapMiB: heap / 2 ** 20, brokerSockets: sockets, cpuPct, brokerCpuPct, members: (await memberCounts(gw.url)).running };
}

/** Offers `rate` events/s (a batch every 200 ms, not waiting for answers) until stopped; counts accepted events and answer times. */
function offerLoad(url: string, type: string, rate: number): { stop: () => Promise<{ accepted: number; postMs: number[] }> } {
  let accepted = 0;
  let seq = 0;
  const postMs: number[] = [];
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const batch = Array.from({ length: Math.max(1, Math.round(rate / 5)) }, (_, k) => ({
      specversion: '1.0',
      id: randomUUID(),
      source: 'urn:bench:subscriptions',
      type,
      time: new Date().toISOString(),
      data: { instrument: `B${k % 20}/USD`, timeframe: 'H1', barKey: `B${k % 20}-USD_H1__${String(++seq).padStart(8, '0')}`, barsLoaded: 1, completedAt: new Date().toISOString() },
    }));
    const t = performance.now();
    const p = fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(batch) })
      .then(async (res) => {
        await res.arrayBuffer();
        postMs.push(performance.now() - t);
        if (res.status === 202) accepted += batch.length;
      })
      .catch(() => undefined)
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }, 200);
  return {
    stop: async () => {
      clearInterval(timer);
      await Promise.all([...inFlight]);
      return { accepted, postMs };
    },
  };
}

const percentile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

async function main(): Promise<void> {
  const { brokers, brokerList, registryUrl, brokerPid, machine } = benchStack();
  const brokerPort = Number(brokerList[0]!.slice(brokerList[0]!.lastIndexOf(':') + 1));
  const run = `bench-subs-${Date.now().toString(36)}`;
  const cat = catalogWithOwnTopics(run);
  const catalog = loadCatalog(cat.dir);
  const priceType = catalog.byName('PriceLoadingCompleted')!.eventId;
  const definitions = `${run}.subscriptions`;
  const secretsKey = randomBytes(32).toString('base64');
  const sink = await startFleetSink();
  const names = Array.from({ length: SUBS }, (_, i) => `${run}-${i}`);
  const kindOf = (i: number): string => (i < BUSY ? 'PriceLoadingCompleted' : OTHER_KINDS[i % OTHER_KINDS.length]!);
  const groups: string[] = [];
  const rows: Row[] = [];
  let createdS = 0;
  log(`machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}, Kafka ${machine.kafka}; ${SUBS} subscriptions, modes ${MODES.join(', ')}`);

  const start = (mode: 'on-demand' | 'always-on'): Promise<GatewayProcess> =>
    startGatewayProcess({
      root: ROOT,
      env: {
        KAFKA_BROKERS: brokers,
        SCHEMA_REGISTRY_URL: registryUrl,
        LOG_LEVEL: 'warn',
        CATALOG_DIR: cat.dir,
        SUBSCRIPTIONS_TOPIC: definitions,
        SUBSCRIPTION_SECRETS_KEY: secretsKey,
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
        ...(mode === 'always-on' ? { SUBSCRIPTION_IDLE_STOP_MS: '0' } : {}),
      },
      readyTimeoutMs: 600_000,
      preferTsx: process.env.BENCH_TSX === '1',
    });

  let gw: GatewayProcess | undefined;
  try {
    // The subscriptions are created by a gateway of their own, so each measured gateway starts fresh
    // (creating 500 leaves garbage and a larger heap behind in the process that served the requests).
    gw = await start('on-demand');
    const t = performance.now();
    await inParallel(names, 16, async (name, i) => {
      groups.push(await createSubscription(gw!.url, { name, kinds: [kindOf(i)], state: 'paused', delivery: { mode: 'push', url: `${sink.base}/${name}` } }));
    });
    createdS = (performance.now() - t) / 1000;
    log(`created ${SUBS} paused subscriptions in ${createdS.toFixed(1)} s`);
    await gw.stop();
    for (const mode of MODES) {
      gw = await start(mode);
      log(`${mode}: gateway up (pid ${gw.pid})`);
      const base = await measure(gw, brokerPort, brokerPid, 5);
      rows.push({ mode, scenario: 'no active subscription', subscriptions: 0, ...base, settleS: 0 });
      let active = 0;
      for (const n of STEPS) {
        const t = performance.now();
        await patchState(gw.url, names.slice(active, n), 'active');
        active = n;
        await waitUntil(`${mode} ${n} settled`, async () => {
          const m = await memberCounts(gw!.url);
          return mode === 'always-on' ? m.running === n : m.idle === n && m.running === 0;
        }, 900_000);
        const settleS = (performance.now() - t) / 1000;
        await sleep(3000);
        const m = await measure(gw, brokerPort, brokerPid, WINDOW_S);
        rows.push({ mode, scenario: `${n} idle`, subscriptions: n, ...m, settleS });
        log(`${mode} ${n} idle: ${JSON.stringify(m)} (settled in ${settleS.toFixed(1)} s)`);
      }
      // Busy: BUSY_RATE events/s offered to the kind the first BUSY subscriptions read, every subscription active.
      const before = sink.posts();
      const load = offerLoad(gw.url, priceType, BUSY_RATE);
      const tBusy = performance.now();
      await waitUntil(`${mode}: ${BUSY} members running`, async () => (await memberCounts(gw!.url)).running >= BUSY, 300_000);
      const allRunningS = (performance.now() - tBusy) / 1000;
      await sleep(3000);
      const busy = await measure(gw, brokerPort, brokerPid, WINDOW_S);
      const { accepted, postMs } = await load.stop();
      const expected = accepted * BUSY;
      // The backlog must drain here: a later gateway would otherwise deliver it while it is measured "idle".
      await waitUntil('busy deliveries', () => Promise.resolve(sink.posts() - before >= expected), 300_000).catch(() => log(`${mode}: the busy backlog did not drain within 300 s (${sink.posts() - before}/${expected})`));
      const delivered = `${sink.posts() - before}/${expected}`;
      const post = { p50: percentile(postMs, 0.5), p99: percentile(postMs, 0.99) };
      rows.push({ mode, scenario: `${BUSY} busy (+${SUBS - BUSY} idle)`, subscriptions: SUBS, ...busy, settleS: allRunningS, delivered, eventsPerS: accepted / ((performance.now() - tBusy) / 1000), postP50Ms: post.p50, postP99Ms: post.p99 });
      log(`${mode} busy: ${JSON.stringify(busy)}, ${BUSY} members after ${allRunningS.toFixed(1)} s, delivered ${delivered}, POST /events p50 ${post.p50.toFixed(0)} ms p99 ${post.p99.toFixed(0)} ms`);
      const t = performance.now();
      await patchState(gw.url, names, 'paused');
      await waitUntil(`${mode} all paused`, async () => (await memberCounts(gw!.url)).running === 0, 600_000);
      log(`${mode}: paused all in ${((performance.now() - t) / 1000).toFixed(1)} s`);
      await gw.stop();
      gw = undefined;
    }
  } finally {
    await gw?.stop();
    await sink.close();
    log('cleaning up the broker');
    await cleanUpBroker(brokerList, groups, [...groups.map((g) => `${g}.dlq`), definitions, ...catalog.topics.map((t) => t.name)]);
    cat.cleanup();
  }

  const table = `| mode | scenario | members | RSS MiB | heap MiB | broker sockets | CPU gateway (one core) | CPU broker | settled in |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n${rows
    .map((r) => {
      const busy = r.delivered === undefined ? '' : `, ${(r.eventsPerS ?? 0).toFixed(0)} events/s accepted, delivered ${r.delivered}, POST p50/p99 ${(r.postP50Ms ?? 0).toFixed(0)}/${(r.postP99Ms ?? 0).toFixed(0)} ms`;
      return `| ${r.mode} | ${r.scenario}${busy} | ${r.members} | ${r.rssMiB.toFixed(0)} | ${r.heapMiB.toFixed(0)} | ${r.brokerSockets} | ${r.cpuPct.toFixed(1)} % | ${r.brokerCpuPct.toFixed(1)} % | ${r.settleS.toFixed(1)} s |`;
    })
    .join('\n')}`;
  process.stdout.write(`${table}\n\n${SUBS} subscriptions created over HTTP in ${createdS.toFixed(1)} s\n`);
  const dir = join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `subscriptions-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(out, JSON.stringify({ machine, settings: { SUBS, BUSY, WINDOW_S, BUSY_RATE, MODES }, createdS, rows }, null, 2));
  log(`wrote ${out}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
