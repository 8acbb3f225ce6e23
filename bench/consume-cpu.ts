/**
 * CPU per event of the consume side's own work, without Kafka or HTTP: a consumed record (the
 * bench's event, 12 headers) → its CloudEvent headers → Avro decode into the catalog's reader
 * schema → envelope validation → one element of a batched push request (JSON). Each stage is timed
 * cumulatively (stage n = stages 1…n), in rounds, so the difference of two rows is one stage's cost.
 * A diagnostic for issue 8 (batched push ÷ raw consumer), like `bench:ingress-cpu` for ingress.
 *
 * Run: `npm run build && npm run bench:consume-cpu` with the stack's registry (`SCHEMA_REGISTRY_URL`,
 * loopback only). Settings: `BENCH_CPU_ROUNDS` (10), `BENCH_CPU_RECORDS` (20000 per round).
 */
import { readStackEnv } from '../scripts/stack/index.js';
import { loadCatalog, registerCatalog } from '../src/catalog/index.js';
import { EventCodec } from '../src/codec/event/index.js';
import { fromRecord } from '../src/codec/kafka/index.js';
import { batchElement } from '../src/connectors/sinks/webhook/batch-message.js';
import { decodeRecord, peekHeaders } from '../src/bus/subscriber/pipeline/decode.js';
import { createConfluentRegistry } from '../src/registry/index.js';
import type { TransportRecord } from '../src/transport/port.js';
import { catalogWithOwnTopics } from '../test/helpers/catalog-copy.js';
import { rawRecords } from './lib/events.js';
import { intEnv } from './lib/setup.js';

async function main(): Promise<void> {
  const registryUrl = process.env.SCHEMA_REGISTRY_URL ?? readStackEnv()?.SCHEMA_REGISTRY_URL;
  if (registryUrl === undefined) throw new Error('SCHEMA_REGISTRY_URL: start the stack (npm run stack:up)');
  const rounds = intEnv('BENCH_CPU_ROUNDS', 10);
  const count = intEnv('BENCH_CPU_RECORDS', 20_000);
  const cat = catalogWithOwnTopics(`consume-cpu-${Date.now().toString(36)}`);
  const catalog = loadCatalog(cat.dir);
  const topic = catalog.byEventId('78b8fd47-3ff3-4881-9419-7bfe84ce89cb')!.topic.name;
  const outbound = await rawRecords(1800, registryUrl, 'http://127.0.0.1:8080/schemas/ids/', cat.dir, topic);
  const registry = createConfluentRegistry({ url: registryUrl });
  const codec = new EventCodec(catalog, registry, await registerCatalog(registry, catalog));
  // Records as a fetch hands them over: key, value and header values are views into one buffer.
  const records: TransportRecord[] = outbound.map((r, i) => ({
    topic,
    partition: i % 6,
    offset: BigInt(i),
    timestampMs: Date.now(),
    key: r.key === null ? null : new Uint8Array(r.key),
    value: r.value === null ? null : new Uint8Array(r.value),
    headers: r.headers.map(([n, v]) => [n, new Uint8Array(v)] as const),
  }));
  let sink = 0;
  const stages: [string, (r: TransportRecord) => Promise<void> | void][] = [
    ['headers (codec/kafka fromRecord)', (r) => void (sink += fromRecord(r).mode.length)],
    ['+ Avro decode (EventCodec.fromRecord)', async (r) => {
      const h = peekHeaders(r);
      sink += (await codec.fromRecord(r, 'catalog', h)).attributes.id.length;
    }],
    ['+ envelope validation (decodeRecord)', async (r) => {
      const d = await decodeRecord(codec, r, peekHeaders(r));
      if (d.ok) sink += d.event.attributes.id.length;
    }],
    ['+ batch element (JSON)', async (r) => {
      const d = await decodeRecord(codec, r, peekHeaders(r));
      if (d.ok) sink += batchElement(d.event, r, { data: 'json' }).bytes;
    }],
  ];
  const totals = new Map<string, number>(stages.map(([n]) => [n, 0]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, stage] of stages) {
      const t0 = process.cpuUsage();
      for (let i = 0; i < count; i++) await stage(records[i % records.length]!);
      const used = process.cpuUsage(t0);
      if (round > 0) totals.set(name, totals.get(name)! + (used.user + used.system) / count); // round 0 warms up
    }
  }
  console.log(`CPU µs per event (mean of ${rounds - 1} rounds of ${count} records, after one warm-up round):`);
  for (const [name] of stages) console.log(`  ${(totals.get(name)! / (rounds - 1)).toFixed(2).padStart(7)}  ${name}`);
  if (sink < 0) console.log(sink);
  cat.cleanup();
}

await main();
