/**
 * Named subscriptions, first cut (bus spec S1, S3, S5, S6). A subscription is a consumer group
 * named by the caller: the same name resumes from its committed offsets, a new name starts at
 * the latest offset unless asked to start earlier. Each record ends in one of three outcomes:
 * handled; retried in place with backoff (bounded); or dead-lettered with its reason. A record
 * that cannot be decoded (poison) is dead-lettered at once and never stops the consumer. An
 * unreachable registry is transient: retried, never a reason to dead-letter. The offset is
 * committed only after the record was handled or dead-lettered (at-least-once).
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { RetryPolicy } from '../../core/retry.js';
import { sleep } from '../../core/retry.js';
import type { EventCodec } from '../../codec/event/index.js';
import { fromRecord } from '../../codec/kafka/index.js';
import { assertTopicName } from '../../envelope/index.js';
import type { Envelope } from '../../envelope/types.js';
import type { Logger } from '../../observability/index.js';
import type { Consumption, RecordHeader, StartFrom, Transport, TransportRecord } from '../../transport/port.js';
import { runHandling } from '../correlation/index.js';

export interface DeliveryContext {
  readonly subscription: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** 1 on first delivery in this process, then 2, 3… on in-place retries. */
  readonly attempt: number;
}

/** Resolving = handled. Throwing a GatewayError with retriable: false dead-letters at once; anything else is retried. */
export type EventHandler = (event: Envelope, ctx: DeliveryContext) => Promise<void>;

export interface SubscribeOptions {
  /** Durable subscription name = consumer group id (bus spec S1). Also names the dead-letter topic `<name>.dlq`. */
  readonly subscription: string;
  /** Event kinds by eventId or business name; records of other kinds on the same topics are skipped. */
  readonly kinds: readonly string[];
  readonly handler: EventHandler;
  /** For a subscription with no committed offset; default 'latest' (bus spec T5). */
  readonly startFrom?: StartFrom;
  readonly retry: RetryPolicy;
  /** Instance identity (bus spec T1). */
  readonly instanceId?: string;
}

export interface Subscription {
  readonly name: string;
  /** Settles when the subscription stops: resolves after unsubscribe(), rejects if the consumer failed. */
  readonly done: Promise<void>;
  readonly stats: () => { readonly handled: number; readonly retried: number; readonly deadLettered: number; readonly skipped: number };
  unsubscribe(): Promise<void>;
}

/** The `type` of a binary-mode record, or undefined when its headers cannot tell (poison, structured). */
function peekType(record: TransportRecord): string | undefined {
  try {
    const read = fromRecord(record);
    return read.mode === 'binary' ? read.attributes.type : undefined;
  } catch {
    return undefined;
  }
}

export function deadLetterTopic(subscription: string): string {
  return `${subscription}.dlq`;
}

const enc = new TextEncoder();

export async function subscribe(transport: Transport, codec: EventCodec, log: Logger, o: SubscribeOptions): Promise<Subscription> {
  assertTopicName(deadLetterTopic(o.subscription));
  if (o.kinds.length === 0) throw new GatewayError('CEG_INVALID_OPTIONS', 'kinds: at least one event kind', { retriable: false, details: { field: 'kinds' } });
  const eventIds = new Set<string>();
  const topics = new Set<string>();
  for (const k of o.kinds) {
    const kind = codec.catalog.byEventId(k) ?? codec.catalog.byName(k);
    if (kind === undefined) throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${k}"`, { retriable: false, details: { field: 'kinds' } });
    eventIds.add(kind.eventId);
    topics.add(kind.topic.name);
  }
  const dlq = deadLetterTopic(o.subscription);
  await transport.ensureTopics([{ name: dlq, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
  const stats = { handled: 0, retried: 0, deadLettered: 0, skipped: 0 };
  const stopping = new AbortController();

  async function deadLetter(record: TransportRecord, reason: string, attempts: number, firstFailureMs: number): Promise<void> {
    const extra: RecordHeader[] = [
      ['dlq_reason', enc.encode(reason.slice(0, 4000))],
      ['dlq_attempts', enc.encode(String(attempts))],
      ['dlq_first_failure_time', enc.encode(new Date(firstFailureMs).toISOString())],
      ['dlq_last_failure_time', enc.encode(new Date().toISOString())],
      ['dlq_source_topic', enc.encode(record.topic)],
      ['dlq_source_partition', enc.encode(String(record.partition))],
      ['dlq_source_offset', enc.encode(record.offset.toString())],
      ['dlq_subscription', enc.encode(o.subscription)],
    ];
    // Producing the dead letter is retried until it succeeds: dropping it would lose the record.
    for (let attempt = 1; ; attempt++) {
      try {
        await transport.produce(dlq, [{ key: record.key, value: record.value, headers: [...record.headers, ...extra], timestampMs: record.timestampMs }]);
        stats.deadLettered++;
        log.warn({ subscription: o.subscription, topic: record.topic, partition: record.partition, offset: record.offset.toString(), reason, attempts }, 'record dead-lettered');
        return;
      } catch (err) {
        if (stopping.signal.aborted) throw stopping.signal.reason; // stopping: leave it uncommitted
        log.warn({ subscription: o.subscription, err: errorMessage(err), attempt }, 'dead-letter produce failed, retrying');
        await sleep(o.retry.delayMs(Math.min(attempt, 10)), stopping.signal);
      }
    }
  }

  async function onRecord(record: TransportRecord): Promise<void> {
    let firstFailureMs: number | undefined; // when the record first failed (dlq_first_failure_time)
    // Decoding: poison is dead-lettered at once; an unreachable registry is retried without limit.
    // Records of kinds this subscription does not take are skipped before their data is decoded
    // (and so are never dead-lettered here); poison headers fall through to the decoder below.
    const peeked = peekType(record);
    if (peeked !== undefined && !eventIds.has(peeked)) {
      stats.skipped++;
      return;
    }
    let event: Envelope;
    for (let attempt = 1; ; attempt++) {
      try {
        event = await codec.fromRecord(record);
        break;
      } catch (err) {
        firstFailureMs ??= Date.now();
        if (err instanceof GatewayError && err.retriable && !stopping.signal.aborted) {
          log.warn({ subscription: o.subscription, code: err.code, attempt }, 'decode failed transiently, retrying');
          await sleep(o.retry.delayMs(Math.min(attempt, 10)), stopping.signal);
          continue;
        }
        if (err instanceof GatewayError && err.retriable) throw stopping.signal.reason; // stopping: leave it uncommitted
        await deadLetter(record, `poison: ${errorMessage(err)}`, 1, firstFailureMs);
        return;
      }
    }
    if (!eventIds.has(event.attributes.type)) {
      stats.skipped++;
      return;
    }
    const correlationid = typeof event.attributes.correlationid === 'string' ? event.attributes.correlationid : event.attributes.id;
    const traceparent = typeof event.attributes.traceparent === 'string' ? event.attributes.traceparent : undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        const ctx: DeliveryContext = { subscription: o.subscription, topic: record.topic, partition: record.partition, offset: record.offset, attempt };
        await runHandling({ correlationid, eventId: event.attributes.id, ...(traceparent === undefined ? {} : { traceparent }) }, () => o.handler(event, ctx));
        stats.handled++;
        return;
      } catch (err) {
        firstFailureMs ??= Date.now();
        const permanent = err instanceof GatewayError && !err.retriable;
        if (permanent || attempt >= o.retry.maxAttempts) {
          await deadLetter(record, permanent ? `handler refused: ${errorMessage(err)}` : `retries exhausted after ${attempt} attempts: ${errorMessage(err)}`, attempt, firstFailureMs);
          return;
        }
        if (stopping.signal.aborted) throw stopping.signal.reason; // stopping: leave it uncommitted
        stats.retried++;
        await sleep(o.retry.delayMs(attempt), stopping.signal);
      }
    }
  }

  const consumption: Consumption = await transport.consume(
    { group: o.subscription, topics: [...topics], startFrom: o.startFrom ?? 'latest', ...(o.instanceId === undefined ? {} : { instanceId: o.instanceId }) },
    onRecord,
  );
  // Rejecting a record on purpose while stopping (so it stays uncommitted) is a normal stop, not a failure.
  const done = consumption.done.catch((err: unknown) => {
    if (stopping.signal.aborted && err === stopping.signal.reason) return;
    throw err;
  });
  done.catch(() => undefined); // nobody has to observe `done`
  return {
    name: o.subscription,
    done,
    stats: () => ({ ...stats }),
    async unsubscribe() {
      stopping.abort(new GatewayError('CEG_CLOSED', 'subscription stopped', { retriable: true }));
      await consumption.stop();
    },
  };
}
