/**
 * A group-less read on Kafka (operators' `tail` and `trace`). kafkajs has no consumer without a
 * group, so the read joins a throw-away group named `ce-gateway.read.<uuid>`, seeks every
 * partition to its start position on joining, never commits, and deletes the group when it ends:
 * nothing is left behind (the group has no offsets; deleting it needs no more than the group's own
 * ACL). A read needs READ on the topics and the group, DESCRIBE for offsets — no write.
 * Spec: issue 7 ("neither command leaves a consumer group behind").
 */
import { randomUUID } from 'node:crypto';
import type { Admin, EachBatchPayload } from 'kafkajs';
import { errorMessage } from '../../core/errors.js';
import type { Read, ReadSpec, TransportRecord } from '../port.js';
import { toRecord } from './headers.js';
import type { Kafka } from './kafkajs.js';
import type { KafkaTransportOptions } from './options.js';
import { listOffsetsTime } from '../timestamps.js';
import { outOfRangeReset } from '../out-of-range.js';
import { neverRejects } from '../../core/never-rejects.js';

const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;


/**
 * The topic offset look-ups a read starts from: the transport's own (kafka-transport.ts
 * #oneAtATime), which ask the broker again while it does not lead a partition yet
 * (METADATA_CATCH_UP) and get past kafkajs's metadata race — a read started right after partitions
 * were added or a leader moved failed at once on kafkajs's bare admin calls.
 */
export interface ReadOffsetLookups {
  /** Each partition's log start (`low`) and end (`high`) offsets, as kafkajs's `fetchTopicOffsets` answers. */
  topicOffsets(topic: string): Promise<readonly { readonly partition: number; readonly low: string; readonly high: string }[]>;
  /** Each partition's first offset at or after `timestampMs` (-1: none), as kafkajs's `fetchTopicOffsetsByTimestamp` answers. */
  topicOffsetsAt(topic: string, timestampMs: number): Promise<readonly { readonly partition: number; readonly offset: string }[]>;
}

/** Start offset and (bounded read) end offset per partition; with `positions`, only the partitions listed. */
async function positions(lookups: ReadOffsetLookups, spec: ReadSpec): Promise<Map<string, { readonly topic: string; readonly partition: number; readonly from: string; readonly end: bigint }>> {
  const out = new Map<string, { topic: string; partition: number; from: string; end: bigint }>();
  const from = spec.from;
  for (const topic of spec.topics) {
    const offsets = await lookups.topicOffsets(topic);
    const byTime = from.kind === 'timestamp' ? await lookups.topicOffsetsAt(topic, listOffsetsTime(from.timestampMs)) : [];
    for (const o of offsets) {
      let start: string;
      if (from.kind === 'positions') {
        const wanted = from.positions.find((p) => p.topic === topic && p.partition === o.partition);
        if (wanted === undefined) continue;
        // Below the log start (records deleted) or past the end (the topic created again): from the
        // log start, as a subscription (src/transport/out-of-range.ts); one past the end waits.
        start = (outOfRangeReset(wanted.offset, BigInt(o.low), BigInt(o.high))?.to ?? wanted.offset).toString();
      } else if (from.kind === 'timestamp') {
        const t = byTime.find((b) => b.partition === o.partition)?.offset;
        start = t === undefined || BigInt(t) < 0n ? o.high : t; // -1: no record at or after the time
      } else {
        start = from.kind === 'earliest' ? o.low : o.high;
      }
      out.set(tpKey(topic, o.partition), { topic, partition: o.partition, from: start, end: BigInt(o.high) });
    }
  }
  return out;
}

/**
 * Starts the read: start positions from `lookups`, the throw-away group deleted with `admin`.
 * Errors: kafkajs errors from the offset look-ups or the join (the caller maps them with fromKafkaError).
 */
export async function startKafkaRead(kafka: Kafka, admin: Admin, lookups: ReadOffsetLookups, spec: ReadSpec, handler: (r: TransportRecord) => Promise<void>, opts: KafkaTransportOptions): Promise<Read> {
  const where = await positions(lookups, spec);
  const open = new Set([...where].filter(([, p]) => spec.untilEnd !== true || BigInt(p.from) < p.end).map(([k]) => k));
  const groupId = `ce-gateway.read.${randomUUID()}`;
  let settle: (err?: unknown) => void = () => {};
  const finished = new Promise<void>((resolve, reject) => (settle = (err?: unknown) => (err === undefined ? resolve() : reject(err instanceof Error ? err : new Error(errorMessage(err))))));
  finished.catch(() => undefined);
  if (open.size === 0) return { done: Promise.resolve(), stop: () => Promise.resolve() };

  const consumer = kafka.consumer({ groupId, sessionTimeout: opts.sessionTimeoutMs, heartbeatInterval: opts.heartbeatIntervalMs, maxWaitTimeInMs: opts.maxWaitTimeMs, allowAutoTopicCreation: false, retry: { retries: opts.retries } });
  /** Per partition, the offset of the last record handed on (kept as kafkajs gives it: no work per record beyond the set). */
  const handedOn = new Map<string, string>();
  // On every join, not only the first: when kafkajs restarts a consumer that crashed (a broker down
  // longer than its retries), it starts again from the group's committed offsets, and this
  // throw-away group commits none, so from `fromBeginning`: records handed on before were handed
  // on again (a read from `earliest`), or records written meanwhile were skipped (one from
  // `latest` or positions). Seen with a broker SIGKILLed for 15 s
  // (test/integration/follower-broker-restart.kafka.test.ts).
  consumer.on(consumer.events.GROUP_JOIN, () => {
    for (const [k, p] of where) {
      const last = handedOn.get(k);
      consumer.seek({ topic: p.topic, partition: p.partition, offset: last === undefined ? p.from : (BigInt(last) + 1n).toString() });
    }
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await consumer.disconnect().catch((err: unknown) => opts.logger.debug({ err: errorMessage(err) }, 'read: disconnect failed'));
      await admin.deleteGroups([groupId]).catch((err: unknown) => opts.logger.warn({ group: groupId, err: errorMessage(err) }, 'read: could not delete its throw-away consumer group (Kafka expires it)'));
      settle();
    })());

  /** A bounded read's partition is done once its fetched offsets reach the end. */
  const reached = (topic: string, partition: number, lastOffset: string, pause?: () => void): void => {
    const key = tpKey(topic, partition);
    const end = where.get(key)?.end;
    if (spec.untilEnd !== true || end === undefined || !open.has(key) || BigInt(lastOffset) + 1n < end) return;
    if (pause !== undefined) pause();
    else consumer.pause([{ topic, partitions: [partition] }]);
    open.delete(key);
    if (open.size === 0) neverRejects(stop()); // stop() catches its disconnect and group deletion
  };
  // A fetched batch of markers or aborted records alone (no message to hand on: batchSize 0) never
  // reaches eachBatch; kafkajs reports it here, with its last offset. Batches with messages are
  // judged in eachBatch, which knows whether it handled them all.
  consumer.on(consumer.events.END_BATCH_PROCESS, (e: { payload: { topic: string; partition: number; lastOffset: string; batchSize: number } }) => {
    if (e.payload.batchSize === 0) reached(e.payload.topic, e.payload.partition, e.payload.lastOffset);
  });
  await consumer.connect();
  // Every partition read is seeked on joining, so `fromBeginning` only says where kafkajs resets a
  // position the broker answers OFFSET_OUT_OF_RANGE for (records deleted under the read, the topic
  // created again): the log start, as a subscription does (src/transport/out-of-range.ts); at
  // `latest` the rest of the log was skipped.
  await consumer.subscribe({ topics: [...spec.topics], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async (payload: EachBatchPayload) => {
      const { topic, partition } = payload.batch;
      const key = tpKey(topic, partition);
      if (!where.has(key)) {
        payload.pause(); // a partition the read does not cover (`positions` lists others)
        return;
      }
      const end = where.get(key)?.end;
      for (const m of payload.batch.messages) {
        if (stopping !== undefined || !payload.isRunning() || payload.isStale()) return;
        if (spec.untilEnd === true && end !== undefined && BigInt(m.offset) >= end) break;
        try {
          await handler(toRecord(topic, partition, m));
        } catch (err) {
          settle(err);
          neverRejects(stop());
          return;
        }
        payload.resolveOffset(m.offset);
        handedOn.set(key, m.offset);
      }
      // The batch's last offset counts transaction markers and aborted records too (they take
      // offsets but are never handed on): a partition ending with a marker still ends.
      if (stopping === undefined && payload.isRunning() && !payload.isStale()) reached(topic, partition, payload.batch.lastOffset(), () => payload.pause());
    },
  });
  return { done: finished, stop };
}
