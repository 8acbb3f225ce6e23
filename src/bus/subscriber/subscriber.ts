/**
 * Named subscriptions (bus spec S1, S3, S5, S6, T1). A subscription is a consumer group named by
 * the caller: the same name resumes from its committed offsets, a new name starts at the latest
 * offset unless asked to start earlier. Each record ends in one of three outcomes: handled,
 * retried, or dead-lettered with its reason. Retries are bounded, with exponential backoff and
 * jitter: an ordered subscription (`ordering: 'key'`, the default) retries in place, holding back
 * only its own partition and only for the retry budget; an unordered one (`ordering: 'none'`)
 * moves the record to its retry topic `<name>.retry` so later records keep flowing. A record that
 * cannot be decoded or is not a valid CloudEvent (poison) is dead-lettered at once to `<name>.dlq`
 * and never stops the consumer; an unreachable registry is transient, never a reason to
 * dead-letter. An offset is committed only after its record was handled, moved to the retry
 * topic, or dead-lettered (at-least-once).
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { RetryPolicy } from '../../core/retry.js';
import { sleep } from '../../core/retry.js';
import type { EventCodec } from '../../codec/event/index.js';
import { fromRecord } from '../../codec/kafka/index.js';
import type { RecordEvent } from '../../codec/kafka/index.js';
import { assertTopicName } from '../../core/topic-name.js';
import { validateEnvelope } from '../../envelope/index.js';
import type { Envelope } from '../../envelope/types.js';
import type { Logger } from '../../observability/index.js';
import type { Consumption, StartFrom, Transport, TransportRecord } from '../../transport/port.js';
import { runHandling } from '../correlation/index.js';
import { deadLetterHeaders, originalHeaders, parseRetryMeta, retryHeaders } from './failure-headers.js';
import type { RetryMeta } from './failure-headers.js';
import { ack, deadLetter, retry } from './outcome.js';
import type { Outcome } from './outcome.js';

export interface DeliveryContext {
  readonly subscription: string;
  /** Where the record was first read (for a retried record: its original coordinates). */
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** 1 on first delivery, then 2, 3… on retries (across retry-topic hops). */
  readonly attempt: number;
}

/**
 * Returning nothing or `ack` = handled; `retry(reason)` / `deadLetter(reason)` decide explicitly.
 * Throwing a GatewayError with retriable: false dead-letters at once; any other throw is retried.
 */
export type EventHandler = (event: Envelope, ctx: DeliveryContext) => Promise<Outcome | void>;

/** `key`: per-key order kept, retries in place; `none`: retries through the retry topic. */
export type Ordering = 'key' | 'none';

export interface SubscribeOptions {
  /** Durable subscription name = consumer group id (bus spec S1); names `<name>.dlq` and `<name>.retry`. */
  readonly subscription: string;
  /** Event kinds by eventId or business name; records of other kinds on the same topics are skipped. */
  readonly kinds: readonly string[];
  readonly handler: EventHandler;
  /** For a subscription with no committed offset; default 'latest' (bus spec T5). */
  readonly startFrom?: StartFrom;
  readonly retry: RetryPolicy;
  /** Default 'key'. */
  readonly ordering?: Ordering;
  /** Instance identity (bus spec T1: endpoint = service + instance). */
  readonly instanceId?: string;
}

export interface SubscriptionStats {
  readonly handled: number;
  readonly retried: number;
  readonly deadLettered: number;
  readonly skipped: number;
}

/**
 * The receiver: a value you hold and dispose of (bus spec "Subscriber Contract", style 1).
 * `await using sub = await gateway.subscribe(…)` unsubscribes at the end of the scope.
 */
export interface Subscription {
  readonly name: string;
  /** Settles when the subscription stops: resolves after unsubscribe(), rejects if the consumer failed. */
  readonly done: Promise<void>;
  readonly stats: () => SubscriptionStats;
  /** Partitions this member holds now. */
  readonly assignments: () => readonly { readonly topic: string; readonly partition: number }[];
  unsubscribe(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export function deadLetterTopic(subscription: string): string {
  return `${subscription}.dlq`;
}

export function retryTopic(subscription: string): string {
  return `${subscription}.retry`;
}

/** The record's CloudEvent headers, or undefined when they do not parse (poison: the decoder dead-letters it). */
function readHeaders(record: TransportRecord): RecordEvent | undefined {
  try {
    return fromRecord(record);
  } catch {
    return undefined;
  }
}

/**
 * Joins the subscription's consumer group; resolves once the member holds its partitions.
 * Errors: CEG_INVALID_OPTIONS (no kinds), CEG_UNKNOWN_TYPE, CEG_INVALID_NAME (a name that cannot
 *   name its topics), CEG_BROKER_UNAVAILABLE (retriable).
 */
export async function subscribe(transport: Transport, codec: EventCodec, log: Logger, o: SubscribeOptions): Promise<Subscription> {
  const dlq = deadLetterTopic(o.subscription);
  const retries = retryTopic(o.subscription);
  assertTopicName(dlq);
  assertTopicName(retries);
  if (o.kinds.length === 0) throw new GatewayError('CEG_INVALID_OPTIONS', 'kinds: at least one event kind', { retriable: false, details: { field: 'kinds' } });
  const ordering: Ordering = o.ordering ?? 'key';
  const eventIds = new Set<string>();
  const topics = new Set<string>();
  for (const k of o.kinds) {
    const kind = codec.catalog.byEventId(k) ?? codec.catalog.byName(k);
    if (kind === undefined) throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${k}"`, { retriable: false, details: { field: 'kinds' } });
    eventIds.add(kind.eventId);
    topics.add(kind.topic.name);
  }
  await transport.ensureTopics([
    { name: dlq, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' },
    ...(ordering === 'none' ? [{ name: retries, partitions: 3, retentionMs: 7 * 24 * 3600_000, cleanupPolicy: 'delete' as const }] : []),
  ]);
  const stats = { handled: 0, retried: 0, deadLettered: 0, skipped: 0 };
  const stopping = new AbortController();
  const stopped = (): never => {
    throw stopping.signal.reason; // leaves the record uncommitted: it comes again
  };

  /** Produces with retries until it succeeds or the subscription stops: dropping it would lose the record. */
  async function produceDurably(topic: string, record: Parameters<Transport['produce']>[1][number], what: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await transport.produce(topic, [record]);
        return;
      } catch (err) {
        if (stopping.signal.aborted) stopped();
        log.warn({ subscription: o.subscription, topic, err: errorMessage(err), attempt }, `${what} produce failed, retrying`);
        await sleep(o.retry.delayMs(Math.min(attempt, 10)), stopping.signal).catch(stopped);
      }
    }
  }

  async function sendToDeadLetter(record: TransportRecord, reason: string, attempts: number, firstFailureMs: number, origin: RetryMeta['origin']): Promise<void> {
    const headers = [...originalHeaders(record.headers), ...deadLetterHeaders({ reason, attempts, firstFailureMs, lastFailureMs: Date.now(), origin, subscription: o.subscription })];
    await produceDurably(dlq, { key: record.key, value: record.value, headers, timestampMs: record.timestampMs }, 'dead-letter');
    stats.deadLettered++;
    log.warn({ subscription: o.subscription, topic: origin.topic, partition: origin.partition, offset: origin.offset.toString(), reason, attempts }, 'record dead-lettered');
  }

  async function sendToRetryTopic(record: TransportRecord, meta: RetryMeta): Promise<void> {
    const headers = [...originalHeaders(record.headers), ...retryHeaders(meta)];
    await produceDurably(retries, { key: record.key, value: record.value, headers, timestampMs: record.timestampMs }, 'retry-topic');
    stats.retried++;
  }

  async function invoke(event: Envelope, ctx: DeliveryContext): Promise<Outcome> {
    const correlationid = typeof event.attributes.correlationid === 'string' ? event.attributes.correlationid : event.attributes.id;
    const traceparent = typeof event.attributes.traceparent === 'string' ? event.attributes.traceparent : undefined;
    try {
      const out = await runHandling({ correlationid, eventId: event.attributes.id, ...(traceparent === undefined ? {} : { traceparent }) }, () => o.handler(event, ctx));
      return out ?? ack;
    } catch (err) {
      return err instanceof GatewayError && !err.retriable ? deadLetter(`handler refused: ${errorMessage(err)}`) : retry(errorMessage(err));
    }
  }

  /** Decodes with the writer schema; poison → undefined after dead-lettering; registry down → retried. */
  async function decode(record: TransportRecord, origin: RetryMeta['origin'], firstFailure: number | undefined, headers: RecordEvent | undefined): Promise<Envelope | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        // Data is resolved from the writer's schema into this process's catalog schema (M4): a
        // subscriber built against an older schema keeps reading newer data (T13).
        const event = await codec.fromRecord(record, 'catalog', headers);
        const violations = validateEnvelope(event);
        if (violations.length > 0) {
          const list = violations.map((v) => `${v.attribute ?? v.field ?? 'event'}: ${v.reason}`).join('; ');
          throw new GatewayError('CEG_INVALID_EVENT', `invalid CloudEvent: ${list}`, { retriable: false });
        }
        return event;
      } catch (err) {
        if (stopping.signal.aborted) stopped();
        if (err instanceof GatewayError && err.retriable) {
          log.warn({ subscription: o.subscription, code: err.code, attempt }, 'decode failed transiently, retrying');
          await sleep(o.retry.delayMs(Math.min(attempt, 10)), stopping.signal).catch(stopped);
          continue;
        }
        await sendToDeadLetter(record, `poison: ${errorMessage(err)}`, 1, firstFailure ?? Date.now(), origin);
        return undefined;
      }
    }
  }

  async function onRecord(record: TransportRecord): Promise<void> {
    let meta: RetryMeta | undefined;
    let headers: RecordEvent | undefined; // parsed once: peeked for the type, then decoded
    if (record.topic === retries) {
      meta = parseRetryMeta(record);
      if (meta === undefined || meta.subscription !== o.subscription) {
        await sendToDeadLetter(record, 'poison: retry-topic record without valid retry headers', 1, Date.now(), { topic: record.topic, partition: record.partition, offset: record.offset });
        return;
      }
      const wait = meta.notBeforeMs - Date.now();
      // Waiting holds back only this retry-topic partition; the subscription's topics keep flowing.
      if (wait > 0) await sleep(wait, stopping.signal).catch(stopped);
    } else {
      // Other kinds on the same topics are skipped before their data is decoded.
      headers = readHeaders(record);
      if (headers?.mode === 'binary' && !eventIds.has(headers.attributes.type)) {
        stats.skipped++;
        return;
      }
    }
    const origin = meta?.origin ?? { topic: record.topic, partition: record.partition, offset: record.offset };
    let firstFailureMs = meta?.firstFailureMs;
    const event = await decode(record, origin, firstFailureMs, headers);
    if (event === undefined) return;
    if (!eventIds.has(event.attributes.type)) {
      stats.skipped++;
      return;
    }
    for (let attempt = (meta?.attempt ?? 0) + 1; ; attempt++) {
      const out = await invoke(event, { subscription: o.subscription, ...origin, attempt });
      if (out.kind === 'ack') {
        stats.handled++;
        return;
      }
      firstFailureMs ??= Date.now();
      if (out.kind === 'deadLetter') {
        await sendToDeadLetter(record, out.reason, attempt, firstFailureMs, origin);
        return;
      }
      if (attempt >= o.retry.maxAttempts) {
        await sendToDeadLetter(record, `retries exhausted after ${attempt} attempts: ${out.reason}`, attempt, firstFailureMs, origin);
        return;
      }
      if (ordering === 'none') {
        await sendToRetryTopic(record, { subscription: o.subscription, attempt, notBeforeMs: Date.now() + o.retry.delayMs(attempt), firstFailureMs, origin });
        return;
      }
      if (stopping.signal.aborted) stopped();
      stats.retried++;
      await sleep(o.retry.delayMs(attempt), stopping.signal).catch(stopped);
    }
  }

  const consumption: Consumption = await transport.consume(
    {
      group: o.subscription,
      topics: ordering === 'none' ? [...topics, retries] : [...topics],
      startFrom: o.startFrom ?? 'latest',
      ...(o.instanceId === undefined ? {} : { instanceId: o.instanceId }),
    },
    onRecord,
  );
  // Rejecting a record on purpose while stopping (so it stays uncommitted) is a normal stop, not a failure.
  const done = consumption.done.catch((err: unknown) => {
    if (stopping.signal.aborted && err === stopping.signal.reason) return;
    throw err;
  });
  done.catch(() => undefined); // nobody has to observe `done`; the gateway reports it
  const unsubscribe = async (): Promise<void> => {
    stopping.abort(new GatewayError('CEG_CLOSED', 'subscription stopped', { retriable: true }));
    await consumption.stop();
  };
  return {
    name: o.subscription,
    done,
    stats: () => ({ ...stats }),
    assignments: () => consumption.assignments(),
    unsubscribe,
    [Symbol.asyncDispose]: unsubscribe,
  };
}
