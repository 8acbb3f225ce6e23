/**
 * CPU per event of the gateway's own ingress work, without HTTP or Kafka: request body → parse →
 * validate → complete → Avro encode → Kafka record → the @platformatic/kafka header map, in a
 * loop over batch bodies with fresh ids (the bench's events). With `BENCH_BASELINE_ROOT` it loads
 * the same functions from another built checkout's `dist/` and alternates the two in one process,
 * round by round, so a loaded machine affects both alike (issue 14, BENCHMARKS.md "Ingress
 * per-event work").
 *
 * Run: `npm run build && npm run bench:ingress-cpu` with the stack's registry
 * (`SCHEMA_REGISTRY_URL`, loopback only). Settings: `BENCH_CPU_ROUNDS` (20), `BENCH_CPU_BATCHES` (200
 * per round), `BENCH_BATCH_SIZE` (100).
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog, registerCatalog } from '../src/catalog/index.js';
import type * as HttpCodec from '../src/codec/http/index.js';
import type * as EventCodecs from '../src/codec/event/index.js';
import type * as Prepare from '../src/http/ingress/prepare.js';
import type * as PlatformaticRecords from '../src/transport/platformatic/records.js';
import { createConfluentRegistry } from '../src/registry/index.js';
import { catalogWithOwnTopics } from '../test/helpers/catalog-copy.js';
import { BATCH, batchTemplates } from './lib/events.js';
import { intEnv } from './lib/setup.js';

interface Pipeline {
  readonly name: string;
  /** One request body → the records handed to the client; returns the number of events. */
  run(body: Buffer): number;
}

const here = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** The ingress functions of the checkout at `root` (its `dist/`), bound to one codec. */
async function pipeline(name: string, root: string, registryUrl: string, catalogDir: string): Promise<Pipeline> {
  const dist = (p: string): string => `${resolve(root, 'dist', p)}`;
  const { parseHttpRequest } = (await import(dist('codec/http/index.js'))) as typeof HttpCodec;
  const { prepareEvents } = (await import(dist('http/ingress/prepare.js'))) as typeof Prepare;
  const { EventCodec } = (await import(dist('codec/event/index.js'))) as typeof EventCodecs;
  const { toHeaderMap } = (await import(dist('transport/platformatic/records.js'))) as typeof PlatformaticRecords;
  const catalog = loadCatalog(catalogDir);
  const registry = createConfluentRegistry({ url: registryUrl });
  const latest = await registerCatalog(registry, catalog);
  const codec = new EventCodec(catalog, registry, latest);
  const headers = { 'content-type': BATCH };
  const opts = { dataschemaBase: 'http://127.0.0.1:8080/schemas/ids/' };
  let sink = 0;
  return {
    name,
    run(body) {
      const parsed = parseHttpRequest(headers, body);
      const prepared = prepareEvents(parsed.events, codec, opts, true);
      for (const p of prepared) sink += toHeaderMap(p.record.headers).size;
      return sink > 0 ? prepared.length : 0;
    },
  };
}

async function main(): Promise<void> {
  const registryUrl = process.env.SCHEMA_REGISTRY_URL;
  if (registryUrl === undefined || !/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(registryUrl)) throw new Error('SCHEMA_REGISTRY_URL must be set and on loopback (. .stack/env)');
  const rounds = intEnv('BENCH_CPU_ROUNDS', 20);
  const batches = intEnv('BENCH_CPU_BATCHES', 200);
  const size = intEnv('BENCH_BATCH_SIZE', 100);
  const cat = catalogWithOwnTopics(`benchcpu-${Date.now().toString(36)}`);
  try {
    const sides = [await pipeline('this tree', here, registryUrl, cat.dir)];
    const base = process.env.BENCH_BASELINE_ROOT;
    if (base !== undefined && base !== '') sides.push(await pipeline('baseline', base, registryUrl, cat.dir));
    const templates = batchTemplates(16, size);
    // Bodies rendered up front: the ids' cost is the load generator's, not the gateway's.
    const bodies = Array.from({ length: batches }, (_, i) => Buffer.from(templates[i % templates.length]!.render()));
    const perEvent = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    for (let r = 0; r <= rounds; r++) {
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
        const cpu0 = process.cpuUsage();
        let events = 0;
        for (const b of bodies) events += side.run(b);
        const cpu = process.cpuUsage(cpu0);
        // Round 0 warms the JIT of every side and is not counted.
        if (r > 0) perEvent.get(side.name)!.push((cpu.user + cpu.system) / events);
      }
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    // The minimum is the least disturbed round (other processes only ever add time); the median shows the spread.
    console.log(`| side | CPU µs per event, min | median (${rounds} rounds × ${batches} batches of ${size}) |`);
    console.log('|---|---:|---:|');
    for (const [name, xs] of perEvent) console.log(`| ${name} | ${Math.min(...xs).toFixed(2)} | ${median(xs).toFixed(2)} |`);
    if (sides.length === 2) {
      const [a, b] = [perEvent.get('this tree')!, perEvent.get('baseline')!];
      console.log(`this tree ÷ baseline: min ${(Math.min(...a) / Math.min(...b)).toFixed(3)}×, median ${(median(a) / median(b)).toFixed(3)}×`);
    }
  } finally {
    cat.cleanup();
  }
}

await main();
