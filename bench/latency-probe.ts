/**
 * `npm run bench:latency-probe` (build first; stack env loaded): where a single event's time goes
 * at a fixed offered rate (issue 14: added p99 ≤ 1 ms over a raw send at 1,000 events/s).
 * One gateway child (`KAFKA_CLIENT`, default the gateway's default) runs with
 * bench/lib/stage-recorder.ts loaded; this process is the load generator and the raw producer.
 * Each round: the raw @platformatic/kafka producer as the adapter drives it (one send in flight,
 * waiting calls joined; the same records, idempotent, acks -1) for warm-up + window, then
 * `POST /events` to the gateway for warm-up + window (then the baseline child's, when
 * BENCH_BASELINE_ROOT names another built checkout). Per side it prints the client's p50/p99
 * (from each request's due time) and the recorder's split: body read, parse+validate+encode
 * (prepare), wait in the publisher's queue, wait in the sender's queue, the broker request, the
 * settling of the promise, the answer; GC pauses and the event-loop delay; and the mean split of
 * the slowest 1 %. JSON to bench/results/<time>-latency-probe.json.
 * Settings: BENCH_LATENCY_RATE (1000), BENCH_DURATION_S (10), BENCH_WARMUP_S (2),
 * BENCH_PROBE_ROUNDS (1), BENCH_BASELINE_ROOT, GW_FLAGS (node flags for the gateway children).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog } from '../src/catalog/index.js';
import { PRICE_LOADING_COMPLETED } from '../src/catalog/generated/index.js';
import { catalogWithOwnTopics } from '../test/helpers/catalog-copy.js';
import { STRUCTURED, rawRecords, singleTemplates } from './lib/events.js';
import { gatewayPoster, runFixedRate } from './lib/fixed-rate.js';
import type { FixedRateResult } from './lib/fixed-rate.js';
import { freePort } from './lib/gateway-process.js';
import { connectRawPlatformatic, platformaticSender } from './lib/raw-platformatic.js';
import { benchStack, intEnv } from './lib/setup.js';
import type { StageReport } from './lib/stage-analysis.js';
import { gatewaySplits, rawSplits, report } from './lib/stage-analysis.js';
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
}

async function startChild(name: string, root: string): Promise<Child> {
  const port = await freePort();
  const out = `/tmp/ce-gateway-latency-probe-${process.pid}-${name}.json`;
  const flags = (process.env.GW_FLAGS ?? '').split(' ').filter((f) => f !== '');
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
}

const clientFigures = (r: FixedRateResult): Side['client'] => ({ p50: r.latency.percentileMs(50), p99: r.latency.percentileMs(99), max: r.latency.maxMs, errors: r.errors });

function print(s: Side): void {
  const st = s.stages.stages;
  const f = (k: keyof typeof st): string => `${k} ${st[k].p50.toFixed(2)}/${st[k].p99.toFixed(2)}/${st[k].max.toFixed(1)}`;
  const t = s.stages.tail;
  console.log(`[${s.round}] ${s.side}: client p50 ${s.client.p50.toFixed(2)} p99 ${s.client.p99.toFixed(2)} max ${s.client.max.toFixed(1)} ms (errors ${s.client.errors})`);
  console.log(`    stages p50/p99/max ms: ${(['total', 'body', 'prepare', 'publisherWait', 'senderWait', 'broker', 'settle', 'answer'] as const).map(f).join(' | ')}`);
  console.log(`    slowest 1 % (mean ms): total ${t.total} = body ${t.body} + prepare ${t.prepare} + publisherWait ${t.publisherWait} + senderWait ${t.senderWait} + broker ${t.broker} + settle ${t.settle} + answer ${t.answer}; GC inside ${t.gc}`);
  console.log(`    produce requests ${s.stages.produceRequests.n} × ${s.stages.produceRequests.recordsMean} records, broker ms p50/p99/max ${s.stages.produceRequests.ms.p50}/${s.stages.produceRequests.ms.p99}/${s.stages.produceRequests.ms.max}; GC ${JSON.stringify(s.stages.gc)}; loop delay (1 ms res.) p99 ${s.stages.loopDelayMs.p99} max ${s.stages.loopDelayMs.max}`);
}

const children: Child[] = [];
const sides: Side[] = [];
try {
  children.push(await startChild('this', ROOT));
  if (baselineRoot !== undefined) children.push(await startChild('baseline', baselineRoot));
  const records = await rawRecords(1800, stack.registryUrl, DATASCHEMA_BASE, cat.dir, TOPIC);
  const raw = connectRawPlatformatic(stack.brokerList, TOPIC, entry.topic.partitions, records);
  const send = platformaticSender(raw);
  const recorder = new StageRecorder();
  let i = 0;
  const rawOne = (): Promise<boolean> => send([raw.messages[i++ % raw.messages.length]!]);
  try {
    for (let round = 1; round <= rounds; round++) {
      await runFixedRate({ ratePerS: rate, durationS: warmupS, send: rawOne });
      recorder.take();
      const r = await runFixedRate({ ratePerS: rate, durationS, send: rawOne });
      const rs = recorder.take();
      sides.push({ side: 'raw platformatic', round, client: clientFigures(r), stages: report(rs, rawSplits(rs)) });
      print(sides.at(-1)!);
      for (const c of children) {
        const poster = gatewayPoster(c.url, STRUCTURED, singleTemplates(360));
        try {
          await runFixedRate({ ratePerS: rate, durationS: warmupS, send: poster.send });
          await childWindow(c);
          const g = await runFixedRate({ ratePerS: rate, durationS, send: poster.send });
          const gs = await childWindow(c);
          sides.push({ side: `gateway ${c.name}`, round, client: clientFigures(g), stages: report(gs, gatewaySplits(gs)) });
          print(sides.at(-1)!);
        } finally {
          await poster.close();
        }
      }
    }
  } finally {
    recorder.stop();
    await raw.close();
  }
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}-latency-probe.json`);
  writeFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), rate, durationS, warmupS, client: process.env.KAFKA_CLIENT ?? 'default', baselineRoot: baselineRoot ?? null, gwFlags: process.env.GW_FLAGS ?? '', sides }, null, 2)}\n`);
  console.log(`written: ${file}`);
} finally {
  for (const c of children) {
    c.proc.kill('SIGTERM');
    await new Promise((r) => c.proc.once('exit', r));
    rmSync(c.out, { force: true });
  }
  cat.cleanup();
}
