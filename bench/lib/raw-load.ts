/**
 * The baseline: a kafkajs producer configured as the gateway's Kafka transport configures its own
 * (idempotent, maxInFlightRequests 1, acks -1, no compression, explicit murmur2 partition), sending
 * pre-encoded records with a fixed number of sends in flight.
 */
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import type { Admin, Message, Producer } from 'kafkajs';
import { partitionForKey } from '../../src/transport/partitioner.js';
import type { OutboundRecord } from '../../src/transport/port.js';
import { Latency } from './stats.js';

const { CompressionTypes, Kafka, logLevel } = kafkajs();

/** The gateway transport's defaults (src/transport/kafka/options.ts), repeated so the baseline matches. */
export const PRODUCER_SETTINGS = {
  idempotent: true,
  maxInFlightRequests: 1,
  acks: -1,
  compression: 'none',
  allowAutoTopicCreation: false,
  partitioner: 'explicit: murmur2(key) % partitions (Java-compatible), as the gateway',
  connectionTimeoutMs: 3_000,
  requestTimeoutMs: 30_000,
  ackTimeoutMs: 30_000,
  retries: 5,
  initialRetryTimeMs: 300,
  maxRetryTimeMs: 10_000,
} as const;

export interface RawClient {
  readonly producer: Producer;
  readonly admin: Admin;
  /** The records as kafkajs messages, built once (headers, key, value, partition, timestamp). */
  readonly messages: readonly Message[];
  /** Sum of the topic's end offsets (records it ever received). */
  endOffsetSum(): Promise<number>;
  close(): Promise<void>;
}

const buf = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

export async function connectRaw(brokers: readonly string[], topic: string, records: readonly OutboundRecord[]): Promise<RawClient> {
  const s = PRODUCER_SETTINGS;
  const kafka = new Kafka({
    clientId: 'ce-gateway-bench-raw',
    brokers: [...brokers],
    connectionTimeout: s.connectionTimeoutMs,
    requestTimeout: s.requestTimeoutMs,
    retry: { retries: s.retries, initialRetryTime: s.initialRetryTimeMs, maxRetryTime: s.maxRetryTimeMs },
    logLevel: logLevel.WARN,
  });
  const admin = kafka.admin();
  const producer = kafka.producer({
    idempotent: s.idempotent,
    maxInFlightRequests: s.maxInFlightRequests,
    allowAutoTopicCreation: s.allowAutoTopicCreation,
    createPartitioner: () => ({ message }) => message.partition ?? 0,
    retry: { retries: s.retries, initialRetryTime: s.initialRetryTimeMs, maxRetryTime: s.maxRetryTimeMs },
  });
  await Promise.all([admin.connect(), producer.connect()]);
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
  const partitions = topics[0]?.partitions.length ?? 0;
  if (partitions === 0) throw new Error(`topic ${topic} does not exist (the gateway creates it at start-up)`);
  const messages = records.map((r): Message => {
    if (r.key === null || r.value === null) throw new Error('bench records must have a key and a value');
    const headers: Record<string, Buffer> = {};
    for (const [name, value] of r.headers) headers[name] = buf(value);
    return {
      key: buf(r.key),
      value: buf(r.value),
      headers,
      partition: partitionForKey(r.key, partitions),
      ...(r.timestampMs === undefined ? {} : { timestamp: String(r.timestampMs) }),
    };
  });
  return {
    producer,
    admin,
    messages,
    async endOffsetSum() {
      const offs = await admin.fetchTopicOffsets(topic);
      return offs.reduce((a, p) => a + Number(p.high), 0);
    },
    async close() {
      await Promise.allSettled([producer.disconnect(), admin.disconnect()]);
    },
  };
}

export interface RawLoadResult {
  readonly latency: Latency;
  readonly ok: number;
  readonly errors: number;
  readonly elapsedS: number;
}

/** One `producer.send` with the gateway transport's settings (acks, timeout, no compression). */
export async function rawSend(c: RawClient, topic: string, messages: Message[]): Promise<void> {
  await c.producer.send({ topic, acks: PRODUCER_SETTINGS.acks, timeout: PRODUCER_SETTINGS.ackTimeoutMs, compression: CompressionTypes.None, messages });
}

/**
 * `concurrency` loops, each sending `perSend` of `messages` (cycled) with `send` and awaiting the
 * answer before the next, until `durationS` has passed. `send` resolves true when acknowledged.
 */
export async function runClosedLoop<M>(messages: readonly M[], o: { concurrency: number; perSend: number; durationS: number }, send: (batch: M[]) => Promise<boolean>): Promise<RawLoadResult> {
  const latency = new Latency();
  let ok = 0;
  let errors = 0;
  let next = 0;
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(Math.round(o.durationS * 1e9));
  const loop = async (): Promise<void> => {
    while (process.hrtime.bigint() < deadline) {
      const batch: M[] = new Array<M>(o.perSend);
      for (let i = 0; i < o.perSend; i++) batch[i] = messages[next++ % messages.length]!;
      const t0 = process.hrtime.bigint();
      if (await send(batch)) {
        latency.recordMs(Number(process.hrtime.bigint() - t0) / 1e6);
        ok++;
      } else errors++;
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, loop));
  return { latency, ok, errors, elapsedS: Number(process.hrtime.bigint() - started) / 1e9 };
}

/** {@link runClosedLoop} with kafkajs `producer.send` ({@link rawSend}). */
export function runRawLoad(c: RawClient, o: { topic: string; concurrency: number; perSend: number; durationS: number }): Promise<RawLoadResult> {
  return runClosedLoop(c.messages, o, (batch) => rawSend(c, o.topic, batch).then(() => true, () => false));
}
