/**
 * `npm run bench:latency-probe` (build first; stack env loaded): where a single event's time goes
 * at a fixed offered rate (issue 14: added p99 ≤ 1 ms over a raw send at 1,000 events/s).
 * One gateway child (`KAFKA_CLIENT`, default the gateway's default) runs with
 * bench/lib/stage-recorder.ts loaded; this process is the load generator and the raw producer.
 * Each round: the raw @platformatic/kafka producer as the adapter drives it (one send in flight,
 * waiting calls joined; the same records, idempotent, acks -1) for warm-up + window, in this
 * process; then, each for warm-up + window and in an order that turns each round, `POST` to the
 * like-for-like baseline (node:http + that raw producer in a child process) and `POST /events` to
 * the gateway child(ren) (the baseline checkout's too, when BENCH_BASELINE_ROOT names one). Per side it prints the client's p50/p99
 * (from each request's due time) and the recorder's split: body read, parse+validate+encode
 * (prepare), wait in the publisher's queue, wait in the sender's queue, the broker request, the
 * settling of the promise, the answer; GC pauses and the event-loop delay; and the mean split of
 * the slowest 1 %. JSON to bench/results/<time>-latency-probe.json.
 * Settings: BENCH_LATENCY_RATE (1000), BENCH_DURATION_S (10), BENCH_WARMUP_S (2),
 * BENCH_PROBE_ROUNDS (1), BENCH_BASELINE_ROOT, GW_FLAGS (node flags for the gateway children),
 * STAGE_PROBE_HEAP=1 (the children sample every allocation in each window: top sites printed, profile
 * to bench/results/<time>-<child>-<round>.heapprofile; slows the gateway, so not with latency figures),
 * BENCH_PROBE_RAW_HTTP (1; 0 leaves out the like-for-like side: `POST` to node:http + the raw producer in
 * a process of its own, bench/lib/raw-http-producer.ts — same HTTP client, same process layout),
 * BENCH_PROBE_LANES (1; n > 1 adds a raw side with n producers, partition p on producer p mod n),
 * GW_FLAGS_B (further children of this checkout with these node flags instead, sets separated by
 * `|`: a flag's A/B in one run; the children's order turns each round).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog } from '../src/catalog/index.js';
import { PRICE_LOADING_COMPLETED } from '../src/catalog/generated/index.js';
import { catalogWithOwnTopics } from '../test/helpers/catalog-copy.js';
import { STRUCTURED, rawRecords, singleTemplates } from './lib/events.js';
import { gatewayPoster, runFixedRate } from './lib/fixed-rate.js';
import type { FixedRateResult } from './lib/fixed-rate.js';
import { freePort, procCpuMs } from './lib/gateway-process.js';
import { startRawHttpProducer } from './lib/raw-http-child.js';
import { connectRawPlatformatic, platformaticSender } from './lib/raw-platformatic.js';
import { benchStack, intEnv } from './lib/setup.js';
import type { StageReport } from './lib/stage-analysis.js';
import { gatewaySplits, heapTop, rawSplits, report } from './lib/stage-analysis.js';
import type { StageSamples } from './lib/stage-recorder.js';
import { StageRecorder } from './lib/stage-recorder.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const stack = benchStack();
const rate = intEnv('BENCH_LATENCY_RATE', 1000);
const durationS = intEnv('BENCH_DURATION_S', 10);
const warmupS = intEnv('BENCH_WARMUP_S', 2);
const rounds = intEnv('BENCH_PROBE_ROUNDS', 1);
const baselineRoot = process.env.BENCH_BASELINE_ROOT ? resolve(process.env.BENCH_BASELINE_ROOT) : undefined;
const cat = catalogWithOwnTopics(`latprobe-${Date.now().toString(36)}`);
const entry = loadCatalog(cat.dir).byEventId(PRICE_LOADING_COMPLETED.eventId)!;
const TOPIC = entry.topic.name;
const DATASCHEMA_BASE = 'http://127.0.0.1:8080/schemas/ids/';

interface Child {
  readonly name: string;
  readonly url: string;
  readonly proc: ChildProcess;
  readonly out: string;
  /** The HTTP + raw producer process (bench/lib/raw-http-producer.ts), not a gateway. */
  readonly rawHttp?: boolean;
}

/** The like-for-like baseline: node:http + the raw producer in a process of its own, the recorder loaded. */
async function startRawHttp(): Promise<Child> {
  const out = `/tmp/ce-gateway-latency-probe-${process.pid}-rawhttp.json`;
  const c = await startRawHttpProducer({ brokers: stack.brokers, registryUrl: stack.registryUrl, catalogDir: cat.dir, topic: TOPIC, partitions: entry.topic.partitions, dataschemaBase: DATASCHEMA_BASE, recorderOut: out });
  return { name: 'raw HTTP + producer', url: c.url, proc: c.proc, out, rawHttp: true };
}

async function startChild(name: string, root: string, flagText: string): Promise<Child> {
  const port = await freePort();
  const out = `/tmp/ce-gateway-latency-probe-${process.pid}-${name.replace(/[^a-z0-9-]/gi, "_")}.json`;
  const flags = flagText.split(' ').filter((f) => f !== '');
  // The recorder from THIS checkout (tsx loads it), the gateway from `root`'s dist/.
  const proc = spawn(process.execPath, [...flags, '--import', 'tsx', '--import', join(ROOT, 'bench/lib/stage-recorder.ts'), 'dist/cli/main.js', 'serve'], {
    cwd: root,
    env: { ...process.env, KAFKA_BROKERS: stack.brokers, SCHEMA_REGISTRY_URL: stack.registryUrl, LOG_LEVEL: 'warn', CATALOG_DIR: cat.dir, PORT: String(port), HOST: '127.0.0.1', DATASCHEMA_BASE_URL: DATASCHEMA_BASE, STAGE_PROBE_OUT: out },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 240; i++) {
    if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) return { name, url, proc, out };
    await new Promise((r) => setTimeout(r, 250));
  }
  proc.kill('SIGTERM');
  throw new Error(`gateway ${name} did not become ready within 60 s`);
}

/** Ends the child's window and reads what its recorder wrote. */
async function childWindow(c: Child): Promise<StageSamples> {
  rmSync(c.out, { force: true });
  c.proc.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    if (existsSync(c.out)) {
      try {
        return JSON.parse(readFileSync(c.out, 'utf8')) as StageSamples;
      } catch {
        // written half: read again
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway ${c.name}: no stage samples`);
}

interface Side {
  readonly side: string;
  readonly round: number;
  readonly client: { readonly p50: number; readonly p99: number; readonly max: number; readonly errors: number };
  readonly stages: StageReport;
  /** Gateway sides: this process (undici, the fixed-rate loop) during the window. */
  readonly loadGenerator?: { readonly loopDelayMs: StageSamples['loopDelayMs']; readonly gc: StageReport['gc'] };
  /** Child sides: the child's CPU (user + system, all threads, /proc) in the window ÷ events answered, µs. */
  readonly cpuUsPerEvent?: number;
}

const clientFigures = (r: FixedRateResult): Side['client'] => ({ p50: r.latency.percentileMs(50), p99: r.latency.percentileMs(99), max: r.latency.maxMs, errors: r.errors });

function print(s: Side): void {
  const st = s.stages.stages;
  const f = (k: keyof typeof st): string => `${k} ${st[k].p50.toFixed(2)}/${st[k].p99.toFixed(2)}/${st[k].max.toFixed(1)}`;
  const t = s.stages.tail;
  console.log(`[${s.round}] ${s.side}: client p50 ${s.client.p50.toFixed(2)} p99 ${s.client.p99.toFixed(2)} max ${s.client.max.toFixed(1)} ms (errors ${s.client.errors})`);
  console.log(`    stages p50/p99/max ms: ${(['total', 'body', 'prepare', 'publisherWait', 'senderWait', 'broker', 'settle', 'answer'] as const).map(f).join(' | ')}`);
  console.log(`    slowest 1 % (mean ms): total ${t.total} = body ${t.body} + prepare ${t.prepare} + publisherWait ${t.publisherWait} + senderWait ${t.senderWait} + broker ${t.broker} + settle ${t.settle} + answer ${t.answer}; GC inside ${t.gc}`);
  const lag = s.stages.arrivalLag;
  if (lag.n > 0) console.log(`    due → handler (above its minimum) p50/p99/max ${lag.p50}/${lag.p99}/${lag.max} ms`);
  console.log(`    slowest 1 % of produce requests: ${s.stages.slowRequests.n} × ${s.stages.slowRequests.meanMs} ms, GC inside ${s.stages.slowRequests.gcInsideMs} ms`);
  console.log(`    produce requests ${s.stages.produceRequests.n} × ${s.stages.produceRequests.recordsMean} records, broker ms p50/p99/max ${s.stages.produceRequests.ms.p50}/${s.stages.produceRequests.ms.p99}/${s.stages.produceRequests.ms.max}; GC ${JSON.stringify(s.stages.gc)}; loop delay (1 ms res.) p99 ${s.stages.loopDelayMs.p99} max ${s.stages.loopDelayMs.max}`);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const children: Child[] = [];
const sides: Side[] = [];
try {
  if (process.env.BENCH_PROBE_RAW_HTTP !== '0') children.push(await startRawHttp());
  children.push(await startChild('this', ROOT, process.env.GW_FLAGS ?? ''));
  if (baselineRoot !== undefined) children.push(await startChild('baseline', baselineRoot, process.env.GW_FLAGS ?? ''));
  for (const flags of (process.env.GW_FLAGS_B ?? '').split('|').filter((f) => f.trim() !== '')) children.push(await startChild(`this, flags "${flags.trim()}"`, ROOT, flags));
  const records = await rawRecords(1800, stack.registryUrl, DATASCHEMA_BASE, cat.dir, TOPIC);
  const raw = connectRawPlatformatic(stack.brokerList, TOPIC, entry.topic.partitions, records);
  const send = platformaticSender(raw);
  const recorder = new StageRecorder();
  let i = 0;
  const rawOne = (): Promise<boolean> => send([raw.messages[i++ % raw.messages.length]!]);
  // BENCH_PROBE_LANES=n: the same records through n producers (own producer id and connection
  // each), partition p on producer p mod n, each driven one send at a time: does a second request
  // in flight (other partitions) shorten the wait behind a slow one?
  const lanes = intEnv('BENCH_PROBE_LANES', 1);
  const laneClients = lanes > 1 ? Array.from({ length: lanes }, () => connectRawPlatformatic(stack.brokerList, TOPIC, entry.topic.partitions, records)) : [];
  const laneSends = laneClients.map((c) => platformaticSender(c));
  const laneOne = (): Promise<boolean> => {
    const m = raw.messages[i++ % raw.messages.length]!;
    return laneSends[m.partition! % lanes]!([m]);
  };
  try {
    for (let round = 1; round <= rounds; round++) {
      await runFixedRate({ ratePerS: rate, durationS: warmupS, send: rawOne });
      recorder.take();
      const r = await runFixedRate({ ratePerS: rate, durationS, send: rawOne });
      const rs = recorder.take();
      sides.push({ side: 'raw platformatic', round, client: clientFigures(r), stages: report(rs, rawSplits(rs)) });
      print(sides.at(-1)!);
      if (lanes > 1) {
        await runFixedRate({ ratePerS: rate, durationS: warmupS, send: laneOne });
        recorder.take();
        const l = await runFixedRate({ ratePerS: rate, durationS, send: laneOne });
        const ls = recorder.take();
        sides.push({ side: `raw platformatic, ${lanes} producers`, round, client: clientFigures(l), stages: report(ls, rawSplits(ls)) });
        print(sides.at(-1)!);
      }
      // The children's order turns each round: on a shared machine the later window often fares worse.
      for (const c of [...children.slice((round - 1) % children.length), ...children.slice(0, (round - 1) % children.length)]) {
        const poster = gatewayPoster(c.url, STRUCTURED, singleTemplates(360), { sendDueHeader: true });
        try {
          await runFixedRate({ ratePerS: rate, durationS: warmupS, send: poster.send });
          await childWindow(c);
          recorder.take();
          const cpu0 = procCpuMs(c.proc.pid!);
          const g = await runFixedRate({ ratePerS: rate, durationS, send: poster.send });
          const cpuMs = procCpuMs(c.proc.pid!) - cpu0;
          const gen = recorder.take();
          const gs = await childWindow(c);
          const heapFile = `${c.out}.heapprofile`;
          if (existsSync(heapFile)) {
            const h = heapTop(JSON.parse(readFileSync(heapFile, 'utf8')) as Parameters<typeof heapTop>[0], 15);
            console.log(`    heap sampled in the window: ${(h.totalBytes / 2 ** 20).toFixed(1)} MiB (${((h.totalBytes / g.ok) / 1024).toFixed(1)} KiB per request); top sites:`);
            for (const t of h.top) console.log(`      ${(t.share * 100).toFixed(1)} %  ${t.site}`);
            renameSync(heapFile, join(ROOT, 'bench/results', `${stamp}-${c.name.replace(/[^a-z0-9-]/gi, '_')}-${round}.heapprofile`));
          }
          const loadGenerator = { loopDelayMs: gen.loopDelayMs, gc: report(gen, []).gc };
          sides.push({ side: c.rawHttp === true ? c.name : `gateway ${c.name}`, round, client: clientFigures(g), stages: report(gs, c.rawHttp === true ? rawSplits(gs) : gatewaySplits(gs)), loadGenerator, cpuUsPerEvent: g.ok > 0 ? (cpuMs * 1000) / g.ok : 0 });
          print(sides.at(-1)!);
          console.log(`    process CPU in the window: ${sides.at(-1)!.cpuUsPerEvent!.toFixed(0)} µs per event (user + system, all threads)`);
          console.log(`    load generator (this process) in the window: loop delay p99 ${gen.loopDelayMs.p99} max ${gen.loopDelayMs.max} ms; GC ${JSON.stringify(loadGenerator.gc)}`);
        } finally {
          await poster.close();
        }
      }
    }
  } finally {
    recorder.stop();
    await raw.close();
    for (const c of laneClients) await c.close();
  }
  const file = join(ROOT, 'bench/results', `${stamp}-latency-probe.json`);
  writeFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), rate, durationS, warmupS, client: process.env.KAFKA_CLIENT ?? 'default', baselineRoot: baselineRoot ?? null, gwFlags: process.env.GW_FLAGS ?? '', gwFlagsB: process.env.GW_FLAGS_B ?? null, sides }, null, 2)}\n`);
  console.log(`written: ${file}`);
} finally {
  for (const c of children) {
    c.proc.kill('SIGTERM');
    await new Promise((r) => c.proc.once('exit', r));
    rmSync(c.out, { force: true });
  }
  cat.cleanup();
}
