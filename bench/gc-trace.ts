/**
 * `npm run bench:gc`: the gateway's garbage collection under single events (issue 14: the
 * single-event p99 is GC pauses). Starts `node --trace-gc dist/cli/main.js serve` on the stack
 * (`set -a; . .stack/env; set +a`; build first), offers 1,000 single events/s for 3 s (warm-up)
 * + 10 s, and summarises the scavenges after the first 8 s of the process: count, mean pause (ms),
 * MB freed and MB promoted (old-space growth) per scavenge, and the Mark-Compacts. The raw trace
 * goes to GC_OUT (default /tmp/ce-gateway-gc-trace.txt); GC_FLAGS adds node flags to the gateway
 * (e.g. "--max-semi-space-size=32") for an A/B.
 */
import { spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { catalogWithOwnTopics } from '../test/helpers/catalog-copy.js';
import { benchStack } from './lib/setup.js';
import { gatewayPoster, runFixedRate } from './lib/fixed-rate.js';
import { STRUCTURED, singleTemplates } from './lib/events.js';

const stack = benchStack();
const cat = catalogWithOwnTopics(`gctrace-${Date.now().toString(36)}`);
const flags = (process.env.GC_FLAGS ?? '').split(' ').filter((f) => f !== '');
const traceFile = process.env.GC_OUT ?? '/tmp/ce-gateway-gc-trace.txt';
const port = 38_998;
const url = `http://127.0.0.1:${port}`;
const child = spawn(process.execPath, [...flags, '--trace-gc', 'dist/cli/main.js', 'serve'], {
  env: { ...process.env, KAFKA_BROKERS: stack.brokers, SCHEMA_REGISTRY_URL: stack.registryUrl, LOG_LEVEL: 'warn', CATALOG_DIR: cat.dir, PORT: String(port), HOST: '127.0.0.1', DATASCHEMA_BASE_URL: 'http://127.0.0.1:8080/schemas/ids/' },
  stdio: ['ignore', openSync(traceFile, 'w'), 'inherit'],
});
try {
  let ready = false;
  for (let i = 0; i < 240 && !ready; i++) {
    ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (!ready) await new Promise((r) => setTimeout(r, 250));
  }
  if (!ready) throw new Error('the gateway did not become ready within 60 s');
  const poster = gatewayPoster(url, STRUCTURED, singleTemplates(360));
  await runFixedRate({ ratePerS: 1000, durationS: 3, send: poster.send });
  const r = await runFixedRate({ ratePerS: 1000, durationS: 10, send: poster.send });
  await poster.close();
  console.log(`1,000 single events/s for 10 s: ${r.ok} accepted, p50 ${r.latency.percentileMs(50).toFixed(2)} ms, p99 ${r.latency.percentileMs(99).toFixed(2)} ms`);
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  cat.cleanup();
}

const scavenges: { atMs: number; before: number; after: number; pauseMs: number }[] = [];
let markCompacts = 0;
for (const line of readFileSync(traceFile, 'utf8').split('\n')) {
  const at = /(\d+) ms: /.exec(line);
  if (at === null || Number(at[1]) <= 8000) continue;
  const s = /Scavenge ([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, ([\d.]+)/.exec(line);
  if (s !== null) scavenges.push({ atMs: Number(at[1]), before: Number(s[1]), after: Number(s[2]), pauseMs: Number(s[3]) });
  if (line.includes('Mark-Compact')) markCompacts++;
}
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const growth = scavenges.slice(1).map((s, i) => s.after - scavenges[i]!.after).filter((g) => g >= 0);
console.log(`scavenges ${scavenges.length}, mean pause ${mean(scavenges.map((s) => s.pauseMs)).toFixed(2)} ms, freed ${mean(scavenges.map((s) => s.before - s.after)).toFixed(1)} MB and promoted ${mean(growth).toFixed(2)} MB per scavenge; Mark-Compacts ${markCompacts} (trace: ${traceFile})`);
