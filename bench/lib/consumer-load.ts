/**
 * The consumer scenario (issue 7): the same records read by a raw kafkajs `eachBatch` consumer
 * (resolve + heartbeat per record, kafkajs's own auto-commit, nothing decoded) and by a gateway
 * subscription with a no-op handler (the whole pipeline: header bounds, CloudEvent headers, Avro
 * decoding into the reader schema, envelope validation, the handler in its context, batched commits).
 * Both start from the earliest offset under a fresh consumer group and stop when they have seen
 * every record the topic held when the scenario began. Both run in this process.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import type * as LibraryModule from '../../src/index.js';
import type { EachBatchPayload } from 'kafkajs';

const { Kafka, logLevel } = kafkajs();

export interface ConsumeResult {
  readonly name: string;
  readonly side: 'gateway' | 'raw' | 'raw-decode';
  readonly records: number;
  readonly elapsedS: number;
  readonly eventsPerS: number;
  /** CPU of this process during the read, percent of one core. */
  readonly cpuPct: number;
}

async function timed(name: string, side: ConsumeResult['side'], records: number, read: () => Promise<void>): Promise<ConsumeResult> {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await read();
  const elapsedS = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return { name, side, records, elapsedS, eventsPerS: records / elapsedS, cpuPct: ((cpu.user + cpu.system) / 1000 / (elapsedS * 1000)) * 100 };
}

/**
 * Raw kafkajs: eachBatch, resolveOffset and heartbeat per record, autoCommit. With `registryUrl`,
 * each value is also decoded as a Kafka-native consumer must (@kafkajs/confluent-schema-registry's
 * `decode`: Confluent frame, writer schema by id, Avro) — nothing else (no CloudEvents headers, no
 * validation, no reader-schema resolution).
 */
export function rawConsume(brokers: readonly string[], topic: string, records: number, registryUrl?: string): Promise<ConsumeResult> {
  const registry = registryUrl === undefined ? undefined : new SchemaRegistry({ host: registryUrl });
  return timed(registry === undefined ? 'raw kafkajs consume' : 'raw kafkajs consume + Avro decode', registry === undefined ? 'raw' : 'raw-decode', records, async () => {
    const kafka = new Kafka({ clientId: 'ce-gateway-bench-raw-consumer', brokers: [...brokers], logLevel: logLevel.WARN });
    const consumer = kafka.consumer({ groupId: `bench-raw-${randomUUID()}`, maxWaitTimeInMs: 1000 });
    let seen = 0;
    let finish: () => void = () => {};
    const done = new Promise<void>((r) => (finish = r));
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 3,
      eachBatch: async (payload: EachBatchPayload) => {
        for (const m of payload.batch.messages) {
          if (!payload.isRunning() || payload.isStale()) return;
          if (registry !== undefined && m.value !== null) await registry.decode(m.value);
          payload.resolveOffset(m.offset);
          if (++seen === records) finish();
        }
        await payload.heartbeat();
      },
    });
    await done;
    await consumer.disconnect();
  });
}

/** What the consume scenario needs of the library (the public surface, `src/index.ts`). */
type Library = typeof LibraryModule;

/**
 * The library of a checkout: `<root>/dist/index.js` when built (what the gateway children run, and
 * the only way to load a second checkout — the A/B baseline — into this process), else this
 * checkout's `src` (through tsx).
 */
async function libraryOf(root: string): Promise<Library> {
  const dist = resolve(root, 'dist/index.js');
  if (existsSync(dist)) return (await import(pathToFileURL(dist).href)) as Library;
  return import('../../src/index.js');
}

/** Where and how a gateway consume runs: the checkout (`root`), the client, an optional CPU profile of the read. */
export interface GatewayConsumeOptions {
  readonly root: string;
  readonly client: 'kafkajs' | 'platformatic';
  /** Shown in the result's name (`@baseline` for the A/B twin). */
  readonly label?: string;
  /** When set, the read is profiled (V8 CPU profile of this process, only the read) into this folder. */
  readonly profileDir?: string;
}

/**
 * Runs `read` under the V8 profiler of this process and writes `<dir>/<name>.cpuprofile`: the
 * consume scenarios run in the bench process, not in a gateway child, so `--profile` takes them here.
 */
async function profiled(dir: string | undefined, name: string, read: () => Promise<void>): Promise<void> {
  if (dir === undefined) return read();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    await read();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

/** A gateway subscription with a no-op handler, on `o.client`, with the library of `o.root`. */
export async function gatewayConsume(env: Record<string, string>, records: number, o: GatewayConsumeOptions): Promise<ConsumeResult> {
  const lib = await libraryOf(o.root);
  const config = lib.loadConfig({ ...env, LOG_LEVEL: 'warn', KAFKA_CLIENT: o.client });
  const gw = lib.createGateway(config, lib.createLogger({ level: 'warn', destination: process.stderr }));
  await gw.ready;
  const label = `${o.client}${o.label ?? ''}`;
  try {
    return await timed(`gateway subscription consume (${label})`, 'gateway', records, () => profiled(o.profileDir, `consume-${label}`, async () => {
      let finish: () => void = () => {};
      const done = new Promise<void>((r) => (finish = r));
      const sub = await gw.subscribe({
        subscription: `bench-sub-${randomUUID()}`,
        kinds: ['PriceLoadingCompleted'],
        startFrom: 'earliest',
        handler: () => Promise.resolve(),
      });
      const timer = setInterval(() => {
        const s = sub.stats();
        if (s.handled + s.deadLettered + s.skipped >= records) finish();
      }, 20);
      await done;
      clearInterval(timer);
      const s = sub.stats();
      if (s.deadLettered > 0 || s.skipped > 0) process.stderr.write(`  gateway consume: ${s.deadLettered} dead-lettered, ${s.skipped} skipped\n`);
      await sub.unsubscribe();
    }));
  } finally {
    await gw.close();
  }
}
