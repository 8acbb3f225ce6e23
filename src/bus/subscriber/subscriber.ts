/**
 * Named subscriptions (bus spec S1, S3, S5, S6, T1). A subscription is a consumer group named by
 * the caller: the same name resumes from its committed offsets, a new name starts at the latest
 * offset unless asked to start earlier.
 *
 * Every record goes through one fixed pipeline (./pipeline): header bounds → decode (binary and
 * structured, through the registry into the catalog's reader schema) → envelope validation → kind
 * filter → idempotency (optional) → the handler in the event's correlation and trace context →
 * outcome → commit. Each record ends handled, retried, or dead-lettered to `<name>.dlq` with its
 * reason. Retries never hold up other records: an ordered subscription (`ordering: 'key'`, the
 * default) pauses only the record's partition until the next attempt is due (the transport's
 * `redeliver`); an unordered one (`ordering: 'none'`) parks the record on `<name>.retry`, whose
 * not-yet-due records pause only their retry-topic partition. A record that cannot be decoded or
 * is not a valid CloudEvent (poison) is dead-lettered at once; an unreachable registry is
 * transient, never a reason to dead-letter. Offsets are committed (in batches) only after the
 * record was handled, moved to the retry topic, or dead-lettered (at-least-once).
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { RetryPolicy } from '../../core/retry.js';
import { retrying } from '../../core/retrying.js';
import type { EventCodec } from '../../codec/event/index.js';
import { assertTopicName } from '../../core/topic-name.js';
import { DEFAULT_ENVELOPE_LIMITS } from '../../envelope/index.js';
import type { EnvelopeLimits } from '../../envelope/index.js';
import type { Envelope } from '../../envelope/types.js';
import type { EventOf, KindArg } from '../../catalog/kinds.js';
import type { Logger } from '../../observability/index.js';
import type { GatewayMetrics } from '../../observability/metrics.js';
import type { Tracing } from '../../observability/tracing.js';
import type { Consumption, OutboundRecord, TopicSpec, RecordContext, RecordDecision, StartFrom, TopicPartitionOffset, Transport, TransportRecord } from '../../transport/port.js';
import { RECORD_DONE, redeliverAfter } from '../../transport/port.js';
import { topicMissing } from '../../transport/topics.js';
import { deadLetterHeaders, deadLetterWithoutValueHeaders, identifyingHeaders, longestParkMs, originalHeaders, parseRedriveMeta, parseRetryMeta, redriveMetaProblem, retryHeaders, retryMetaProblem } from './failure-headers.js';
import type { RedriveMeta } from './failure-headers.js';
import type { DeadLetterInfo } from './failure-headers.js';
import type { RetryMeta } from './failure-headers.js';
import type { Outcome } from './outcome.js';
import { headerBoundsProblem } from './pipeline/bounds.js';
import { decodeRecord, decodeRecordNow, missingDataProblem, peekHeaders, peekType } from './pipeline/decode.js';
import { subscriptionFilter } from './pipeline/filter.js';
import { filterProblems } from './pipeline/dialects.js';
import type { FilterExpression } from './pipeline/dialects.js';
import type { DeliveryFailure } from './outcome.js';
import { idempotencyStage } from './pipeline/idempotency.js';
import type { IdempotencyOptions } from './pipeline/idempotency.js';
import type { FinalOutcome } from '../idempotency/port.js';
import { handlingTraceparent, invokeInContext } from './pipeline/invoke.js';
import { withHandlerTimeout } from './pipeline/timeout.js';
import type { CallSignal } from './pipeline/timeout.js';
import { AttemptLedger } from './pipeline/attempts.js';
import { assertSubscribeOptions } from './options.js';
import { kindOf } from '../../catalog/lookup.js';

/** Kept below the longest park a reader takes as genuine: the record is read back after it was written. */
const PARK_MARGIN_MS = 1_000;

export interface DeliveryContext {
  readonly subscription: string;
  /** Where the record was first read (for a retried record: its original coordinates). */
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** 1 on first delivery, then 2, 3… on retries (across retry-topic hops). */
  readonly attempt: number;
  /**
   * The record as read (key, value bytes, headers): a sink that forwards the data as it is on
   * Kafka (Avro) reads it here. Always set by the subscriber; absent in contexts built elsewhere.
   */
  readonly record?: TransportRecord;
  /** Aborted when the subscription stops or the handler timeout passes: give up promptly (the event stays uncommitted and comes again, or is retried). */
  readonly signal?: AbortSignal;
  /**
   * Aborted when a rebalance moved the record's partition to another member (this one goes on);
   * absent where the transport has no partition lanes. A handler should drop work it has not
   * started (nothing sent yet): the new owner handles the record again. Whatever the handler then
   * returns, other than `ack`/`duplicate`, is not counted: no retry, no dead letter, no commit.
   */
  readonly revoked?: AbortSignal;
  /** W3C `traceparent` this handling continues: the consumer span's when tracing is on, else the event's own; absent when neither. */
  readonly traceparent?: string;
}

/**
 * Returning nothing or `ack` = handled; `retry(reason)` / `deadLetter(reason)` decide explicitly.
 * A handler may be synchronous or async: a returned promise is awaited (within `handlerTimeoutMs`).
 * Throwing a GatewayError with retriable: false dead-letters at once; any other throw is retried.
 * Typing: for kinds of the generated `EventKinds`, `event` is `EventOf<K>` (`event.data.value` has
 * the kind's generated received type); for kinds only known at run time, the plain Envelope.
 */
export type EventHandler<K extends string = string> = (event: EventOf<K>, ctx: DeliveryContext) => Outcome | void | Promise<Outcome | void>;

/** `key`: per-key order kept, retries in place; `none`: retries through the retry topic. */
export type Ordering = 'key' | 'none';

export interface SubscribeOptions<K extends string = string> {
  /** Durable subscription name = consumer group id (bus spec S1); names `<name>.dlq` and `<name>.retry`. */
  readonly subscription: string;
  /**
   * Event kinds by eventId or business name; records of other kinds on the same topics are
   * skipped. An unknown kind literal does not compile once kinds are generated (`KindArg`).
   */
  readonly kinds: readonly KindArg<K>[];
  /**
   * Kinds of this subscription it must not deliver now, though they are stored in it: its owner
   * may no longer read them (docs/security.md "Revoking a permission"). Their topics are not read,
   * but retry and redrive records of them still arrive on the subscription's own retry and redrive
   * topics: those are recognised as this subscription's (their headers checked against the topics
   * of `kinds` and `heldKinds` together) and dead-lettered with their original topic, partition and
   * offset and the reason ({@link heldReason}; binary or structured mode: the type of a structured
   * one is read once decoded), so a redrive after the permission returns delivers them. Default none.
   */
  // Not `KindArg<K>`: the handler never gets held kinds, so they must not widen its event type (checked at run time).
  readonly heldKinds?: readonly string[];
  readonly handler: EventHandler<K>;
  /** For a subscription with no committed offset; default 'latest' (bus spec T5). */
  readonly startFrom?: StartFrom;
  /**
   * Start positions fixed earlier, per partition (GroupSpec.startAt): used instead of `startFrom`
   * for a listed partition that has no committed offset when a member is assigned it; a commit
   * always wins. Offsets: the next record to read. Default none.
   */
  readonly startAt?: readonly TopicPartitionOffset[];
  readonly retry: RetryPolicy;
  /** Default 'key'. */
  readonly ordering?: Ordering;
  /**
   * With `ordering: 'key'`: read the retry topic `<name>.retry` too, so that retries parked there
   * under an earlier `ordering: 'none'` are delivered (or dead-lettered) when due; a failure is
   * still retried in place, nothing new is parked. The topic must exist (it is not created):
   * subscribe fails with CEG_INVALID_NAME otherwise. Ignored with `ordering: 'none'`, which always
   * reads it. Default false.
   */
  readonly readRetryTopic?: boolean;
  /** Instance identity (bus spec T1: endpoint = service + instance). */
  readonly instanceId?: string;
  /** Record the final outcome of each event and drop redeliveries of finished ones (bus spec S4). */
  readonly idempotency?: IdempotencyOptions;
  /**
   * Longest a handler call may take, ms (default 60,000): then its `ctx.signal` is aborted and the
   * event is retried. Bounds how long a stuck handler can hold up the subscription's other
   * partitions (kafkajs fetches again only once every partition's batch is done). `Infinity`: no
   * bound (the connector sinks, which time each call out themselves, pass it). Otherwise an
   * integer from 1 to 2^31 − 1 (what a Node timer holds); 0 is refused (use Infinity for none).
   */
  readonly handlerTimeoutMs?: number;
  /** Bounds on a consumed record's headers; default DEFAULT_ENVELOPE_LIMITS. */
  readonly limits?: EnvelopeLimits;
  /**
   * Commit batching and stop deadline of the consumer group member (see GroupSpec): integers,
   * `commitEveryRecords` ≥ 1, `commitIntervalMs` 1 to 2^31 − 1 ms, `stopTimeoutMs` 0 to 2^31 − 1 ms.
   */
  readonly commitEveryRecords?: number;
  readonly commitIntervalMs?: number;
  readonly stopTimeoutMs?: number;
  /** The member's fetch linger, ms (GroupSpec `fetchLingerMs`); default none. */
  readonly fetchLingerMs?: number;
  /**
   * false: create no topic (read-only credentials). The retry topic (`ordering: 'none'`) must then
   * exist, else subscribe fails with CEG_INVALID_NAME naming it; without a dead-letter topic
   * (`Subscription.deadLetterTopic` undefined), a record that would be dead-lettered is logged
   * (warn, with its reason, its coordinates and how to create the topic), counted in
   * `deadLettered` and skipped. Default true.
   */
  readonly createTopics?: boolean;
  /**
   * Attribute filters in the CloudEvents Subscriptions API dialects (all must hold); events they
   * refuse are skipped and counted in `filtered`. Replaceable later with `setFilters`.
   * Errors at subscribe: CEG_INVALID_OPTIONS naming each bad filter.
   */
  readonly filters?: readonly FilterExpression[];
  /**
   * Retry budget in time, ms: a failed event whose next attempt would start more than this long
   * after its first failure is dead-lettered instead. Default: none (only `retry.maxAttempts`).
   */
  readonly maxAgeMs?: number;
  /** Partitions this member delivers at once (each still one record at a time); default the transport's. */
  readonly partitionsConcurrently?: number;
  /** Where each handler call's duration is recorded (`ce_gateway_delivery_duration_seconds`, issue 15); the gateway passes its own. */
  readonly instruments?: Pick<GatewayMetrics, 'delivery'>;
  /**
   * Consumer spans ("process <topic>", child of the event's `traceparent`; the handler runs in the
   * span's context, so its calls and publishes continue the trace). Default: off.
   */
  readonly tracing?: Tracing;
  /**
   * false: the handler runs outside the correlation context, so an event it publishes starts a new
   * chain (no `causationid`), and `ctx.traceparent` is its only trace context. For sinks that never
   * publish (push subscriptions, connectors): the context is an AsyncLocalStorage, and on Node 20 its
   * promise hooks, once enabled, cost every promise of the process (~4 % of a consuming gateway's
   * CPU). Default true (bus spec M2, T11).
   */
  readonly correlationContext?: boolean;
  /**
   * Records of one partition in flight at once. Unset: the transport's plain loop (one at a time,
   * inside its fetch loop). Set (push subscriptions set it): the partition gets a lane of this
   * width on adapters that have lanes (kafkajs), so fetching goes on while records are in hand.
   * Above 1 with `ordering: 'none'`, records start in offset order and finish in any order; with
   * `ordering: 'key'`, records of different keys (the Kafka record key = the event's partition key)
   * run alongside and records of one key strictly one after the other, in offset order (records
   * without a key count as one key). Either way the partition's commit never passes its lowest
   * unfinished record, and a slow record holds up only itself (and, by key, the later records of
   * its key). A retrying record (`ordering: 'key'`) still holds its whole partition until its
   * retry, never the other partitions. Retry-topic partitions stay one at a time.
   * Errors at subscribe: CEG_INVALID_OPTIONS when not an integer ≥ 1.
   * Spec: issue 8 ("ordering none", per-key order for "ordering: key").
   */
  readonly inFlightPerPartition?: number;
}

export interface SubscriptionStats {
  readonly handled: number;
  readonly retried: number;
  readonly deadLettered: number;
  /** Records of other kinds on the subscription's topics. */
  readonly skipped: number;
  /** Events of the subscription's kinds that its attribute filters refused. */
  readonly filtered: number;
  /** Redeliveries of events already finished, acknowledged without running the handler (bus spec S4). */
  readonly duplicates: number;
  /** Times this member had to join its group again since it started (rebalances). */
  readonly rebalances: number;
  /** Records that could not be dead-lettered even without their value (logged at error level with their coordinates). */
  readonly lost: number;
}

/** What this member did last (issue 10, `GET /subscriptions/{name}/status`); in memory, this instance only. */
export interface SubscriptionActivity {
  /** When this member last handled an event (the handler acknowledged it), epoch ms. */
  readonly lastDeliveryMs?: number;
  /** The last failure of a delivery here (a retry or a dead letter), epoch ms and reason (at most 500 characters). */
  readonly lastError?: { readonly atMs: number; readonly reason: string };
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
  /** Last delivery and last failure on this member. */
  readonly activity: () => SubscriptionActivity;
  /** The topics this member reads: the kinds' topics, and its retry and redrive topics when it has them. */
  readonly topics: readonly string[];
  /**
   * Where this member writes dead letters: `<name>.dlq`, or undefined when it keeps none — it
   * creates no topics (`createTopics: false`) and that topic did not exist when it started, so a
   * record that would be dead-lettered is logged (warn) and skipped.
   */
  readonly deadLetterTopic: string | undefined;
  /** Partitions this member holds now. */
  readonly assignments: () => readonly { readonly topic: string; readonly partition: number }[];
  /** Replaces the attribute filters in place; records not handled yet are judged by the new ones. Errors: CEG_INVALID_OPTIONS. */
  setFilters(filters: readonly FilterExpression[]): void;
  unsubscribe(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export function deadLetterTopic(subscription: string): string {
  return `${subscription}.dlq`;
}

export function retryTopic(subscription: string): string {
  return `${subscription}.retry`;
}

/** Where redriven dead letters go back to the subscription, and only to it (issue 10). */
export function redriveTopic(subscription: string): string {
  return `${subscription}.redrive`;
}

type Origin = RetryMeta['origin'];

/**
 * The `dlq_reason` of a retry or redrive record of a kind the subscription's owner may no longer
 * read (`SubscribeOptions.heldKinds`; docs/security.md "Revoking a permission"). `kind`: its
 * catalog name.
 */
export function heldReason(kind: string): string {
  return `not delivered: the subscription's owner may no longer read ${kind} (subscribe permission revoked); redrive it once the permission is back`;
}

/**
 * The topics a subscription owns: its dead-letter topic, and its retry topic when unordered. Both
 * take records up to 2 MiB (`max.message.bytes`), above the broker's 1 MiB default, so a record
 * near the source topic's limit still fits once the failure headers are added.
 */
export const SUBSCRIPTION_TOPIC_MAX_BYTES = 2 * 1024 * 1024;
export function subscriptionTopics(subscription: string, ordering: Ordering = 'key'): TopicSpec[] {
  return [
    { name: deadLetterTopic(subscription), partitions: 1, retentionMs: -1, cleanupPolicy: 'delete', maxMessageBytes: SUBSCRIPTION_TOPIC_MAX_BYTES },
    // Both orderings: a redriven event comes back on its own topic (one partition: redrives in the order asked).
    { name: redriveTopic(subscription), partitions: 1, retentionMs: 7 * 24 * 3600_000, cleanupPolicy: 'delete', maxMessageBytes: SUBSCRIPTION_TOPIC_MAX_BYTES },
    ...(ordering === 'none' ? [{ name: retryTopic(subscription), partitions: 3, retentionMs: 7 * 24 * 3600_000, cleanupPolicy: 'delete' as const, maxMessageBytes: SUBSCRIPTION_TOPIC_MAX_BYTES }] : []),
  ];
}

/**
 * Joins the subscription's consumer group; resolves once the member holds its partitions.
 * Errors: CEG_INVALID_OPTIONS (an option out of its bounds, naming it: {@link assertSubscribeOptions};
 *   bad filters), CEG_UNKNOWN_TYPE, CEG_INVALID_NAME (a name that cannot
 *   name its topics, or — with createTopics false — a missing dead-letter or retry topic),
 *   CEG_BROKER_UNAVAILABLE (retriable).
 */
export async function subscribe(transport: Transport, codec: EventCodec, log: Logger, o: SubscribeOptions): Promise<Subscription> {
  assertSubscribeOptions(o);
  const dlq = deadLetterTopic(o.subscription);
  const retries = retryTopic(o.subscription);
  const redrives = redriveTopic(o.subscription);
  assertTopicName(dlq);
  assertTopicName(retries);
  assertTopicName(redrives);
  if (o.kinds.length === 0) throw new GatewayError('CEG_INVALID_OPTIONS', 'kinds: at least one event kind', { retriable: false, details: { field: 'kinds' } });
  const ordering: Ordering = o.ordering ?? 'key';
  // Under `key` the retry topic only drains what `none` parked there; nothing writes to it any more.
  const retryRead = ordering === 'none' || o.readRetryTopic === true;
  const window = o.inFlightPerPartition ?? 1;
  if (!Number.isInteger(window) || window < 1) {
    throw new GatewayError('CEG_INVALID_OPTIONS', 'inFlightPerPartition: an integer ≥ 1', { retriable: false, details: { field: 'inFlightPerPartition' } });
  }
  const eventIds = new Set<string>();
  const topics = new Set<string>();
  for (const k of o.kinds) {
    const kind = kindOf(codec.catalog, k);
    if (kind === undefined) throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${k}"`, { retriable: false, details: { field: 'kinds' } });
    eventIds.add(kind.eventId);
    topics.add(kind.topic.name);
  }
  // The topics a retry or redrive record of this subscription may name as its origin: those of
  // every stored kind, the held ones too (their records were taken from there before the revocation).
  const originTopics = new Set(topics);
  const heldIds = new Map<string, string>();
  for (const k of o.heldKinds ?? []) {
    const kind = kindOf(codec.catalog, k);
    if (kind === undefined) throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${k}"`, { retriable: false, details: { field: 'heldKinds' } });
    originTopics.add(kind.topic.name);
    if (!eventIds.has(kind.eventId)) heldIds.set(kind.eventId, kind.name);
  }
  let dlqStored = true;
  let redriveRead = true;
  if (o.createTopics === false) {
    if (ordering === 'none') await transport.partitionCount(retries); // CEG_INVALID_NAME when missing
    // Without its redrive topic the subscription runs, but redriven dead letters wait until it reads it.
    redriveRead = await transport.partitionCount(redrives).then(
      () => true,
      (err: unknown) => {
        if (topicMissing(err)) return false;
        throw err;
      },
    );
    dlqStored = await transport.partitionCount(dlq).then(
      () => true,
      (err: unknown) => {
        if (topicMissing(err)) return false;
        throw err;
      },
    );
    // Not a warning: a reader that creates no topics (the CLI's `subscribe`) usually has none, and a
    // warn on every run of a new subscription alarmed users for nothing. The handle says it
    // (`deadLetterTopic: undefined`; the CLI prints it once, as a note), and the dead letter itself,
    // if one comes, is a warning that says how to keep the next ones. Debug: said once, not twice.
    if (!dlqStored) log.debug({ subscription: o.subscription, topic: dlq }, `no dead-letter topic ${dlq}, and this subscriber creates no topics (createTopics: false): records that would be dead-lettered are logged and skipped — to keep them, create it with \`ce-gateway topics --subscription ${o.subscription}\``);
  } else {
    await transport.ensureTopics(subscriptionTopics(o.subscription, ordering));
  }
  // Not created under `key` (ensureTopics above leaves it out): a leftover is read, never made.
  if (ordering === 'key' && retryRead) await transport.partitionCount(retries); // CEG_INVALID_NAME when missing
  const limits = o.limits ?? DEFAULT_ENVELOPE_LIMITS;
  const handlerTimeoutMs = o.handlerTimeoutMs ?? 60_000;
  assertFilters(o.filters ?? []);
  const filter = subscriptionFilter(eventIds, o.filters ?? []);
  const stats = { handled: 0, retried: 0, deadLettered: 0, skipped: 0, filtered: 0, duplicates: 0, lost: 0 };
  const activity: { lastDeliveryMs?: number; lastError?: { atMs: number; reason: string } } = {};
  const attempts = new AttemptLedger();
  const stopping = new AbortController();
  // Deliveries the stop cut short (their handler's signal aborted): said once when the member
  // has stopped, at info, with the first few positions — at debug alone a drain that cut a
  // long webhook call left no trace at the default level.
  const cutByStop: { count: number; first: { topic: string; partition: number; offset: string }[] } = { count: 0, first: [] };
  const idem =
    o.idempotency === undefined
      ? undefined
      : idempotencyStage(o.idempotency, o.subscription, (err, e) => log.warn({ subscription: o.subscription, id: e.attributes.id, err: errorMessage(err) }, 'recording a final outcome in the idempotency store failed'));

  /**
   * Produces with retries until it succeeds or the subscription stops: dropping the record would
   * lose it. Transient failures (broker away) are retried; a stop (`signal` aborted) starts no
   * further attempt and ends a wait, rejecting, so the record stays uncommitted and comes again.
   * The attempt in flight is not cut by the stop: it is awaited (the member's stop deadline,
   * `stopTimeoutMs`, still bounds it), so a retry or dead letter that lands has its record
   * committed. Cutting it left the record uncommitted although its retry had landed: the next
   * member delivered the event at once and again from the retry topic (official CI, 2026-12-07).
   * A permanent refusal (the broker refuses the record, e.g. too large once the failure headers
   * are added) is thrown to the caller, which has a fallback: retrying it forever stalled the
   * whole subscription (issue 7 trial).
   */
  async function produceDurably(topic: string, record: OutboundRecord, what: string, signal: AbortSignal): Promise<void> {
    await retrying(() => transport.produce(topic, [record]), {
      policy: o.retry,
      maxAttempts: Infinity,
      signal,
      classify: (err) => !(err instanceof GatewayError) || err.retriable,
      onRetry: ({ attempt, error }) => log.warn({ subscription: o.subscription, topic, err: errorMessage(error), attempt }, `${what} produce failed, retrying`),
    });
  }

  /**
   * Produces a dead letter ({@link produceDurably}). When the dead-letter topic is gone (an
   * operator deleted it while the subscription ran: the produce is refused as an unknown topic,
   * CEG_INVALID_NAME with `details.topicMissing`, see transport/topics.ts topicMissing) and this subscriber creates its topics, the topic is created again with the
   * settings it was created with at start ({@link subscriptionTopics}), with a warning, and the
   * dead letter is written there. Before, the refusal was taken as final: the fallback without
   * the value was refused alike and the record was counted lost and committed past.
   * Errors: as produceDurably; the topic creation's (CEG_BROKER_UNAVAILABLE, retriable; an ACL
   *   refusing the creation, not retriable, leaves the record to the caller's fallback).
   */
  async function produceDeadLetter(record: OutboundRecord, what: string, signal: AbortSignal): Promise<void> {
    try {
      await produceDurably(dlq, record, what, signal);
    } catch (err) {
      if (signal.aborted || o.createTopics === false || !topicMissing(err)) throw err;
      log.warn({ subscription: o.subscription, topic: dlq, err: errorMessage(err) }, `dead-letter topic ${dlq} is gone (deleted while the subscription ran): creating it again`);
      await transport.ensureTopics(subscriptionTopics(o.subscription, ordering).filter((t) => t.name === dlq));
      await produceDurably(dlq, record, what, signal);
    }
  }

  /**
   * The dead letter of a record the dead-letter topic refused for good: the identifying headers and
   * the failure headers, no value (`dlq_value_dropped` gives its size). If even that is refused, the
   * loss is logged at error level and counted: one record never stops the subscription.
   */
  async function deadLetterWithoutValue(record: TransportRecord, info: DeadLetterInfo, signal: AbortSignal, err: unknown): Promise<void> {
    const headers = deadLetterWithoutValueHeaders(record, info, errorMessage(err));
    try {
      await produceDeadLetter({ key: record.key, value: null, headers, timestampMs: record.timestampMs }, 'dead-letter (without value)', signal);
    } catch (again) {
      if (signal.aborted) throw again;
      stats.lost++;
      log.error({ subscription: o.subscription, topic: info.origin.topic, partition: info.origin.partition, offset: info.origin.offset.toString(), reason: info.reason.slice(0, 500), err: errorMessage(again) }, 'record could not be dead-lettered at all; skipped (see the source coordinates)');
    }
  }

  async function sendToDeadLetter(record: TransportRecord, reason: string, n: number, firstFailureMs: number, origin: Origin, signal: AbortSignal, event?: Envelope, oversized = false, failure?: DeliveryFailure, redriven?: number): Promise<void> {
    const kept = oversized ? identifyingHeaders(record.headers) : originalHeaders(record.headers);
    const info = {
      reason,
      attempts: n,
      firstFailureMs,
      lastFailureMs: Date.now(),
      origin,
      subscription: o.subscription,
      ...(oversized ? { headersDropped: record.headers.length - kept.length } : {}),
      ...(failure === undefined ? {} : { failure }),
      ...(redriven === undefined ? {} : { redriven }),
    };
    activity.lastError = { atMs: info.lastFailureMs, reason: reason.slice(0, 500) };
    if (dlqStored) {
      try {
        await produceDeadLetter({ key: record.key, value: record.value, headers: [...kept, ...deadLetterHeaders(info)], timestampMs: record.timestampMs }, 'dead-letter', signal);
      } catch (err) {
        if (signal.aborted) throw err;
        await deadLetterWithoutValue(record, info, signal, err);
      }
    }
    stats.deadLettered++;
    if (event !== undefined) await idem?.record(event, 'dead-lettered');
    const a = event?.attributes;
    log.warn(
      { subscription: o.subscription, topic: origin.topic, partition: origin.partition, offset: origin.offset.toString(), reason: reason.slice(0, 500), attempts: n, ...(a === undefined ? {} : { id: a.id, type: a.type, correlationid: a.correlationid }) },
      dlqStored ? 'record dead-lettered' : `record dead-lettered (not stored: no dead-letter topic ${dlq}; to keep the next ones, create it with \`ce-gateway topics --subscription ${o.subscription}\`)`,
    );
  }

  /**
   * A record skipped because its `type` is no eventId of the catalog at all (a business name, an
   * upper-case id, a typo) is logged once per type: it is most likely a producer's mistake, and
   * counting it in `skipped` alone lost it without a trace (issue 7 trial). Bounded.
   */
  const foreignTypes = new Set<string>();
  function noteForeignType(type: string | undefined, record: TransportRecord): void {
    if (type === undefined || codec.catalog.byEventId(type) !== undefined || foreignTypes.has(type) || foreignTypes.size >= 100) return;
    foreignTypes.add(type);
    const byName = codec.catalog.byName(type);
    log.warn(
      { subscription: o.subscription, type: type.slice(0, 200), topic: record.topic, partition: record.partition, offset: record.offset.toString(), ...(byName === undefined ? {} : { eventId: byName.eventId }) },
      byName === undefined ? 'skipping records whose type is not an eventId of the catalog (logged once per type)' : 'skipping records whose type is a business name, not its eventId (logged once per type)',
    );
  }

  /**
   * The handler call, in the event's context and within the handler timeout. A function of its own
   * so that its closures capture `event` here, not in onRecord's context, which lives until the
   * outcome (see `attributes` there).
   */
  function callHandler(event: Envelope, signal: AbortSignal, origin: Origin, attempt: number, record: TransportRecord, trace: string | undefined, revoked: AbortSignal | undefined): Promise<Outcome> {
    return withHandlerTimeout(handlerTimeoutMs, signal, (call) =>
      invokeInContext(event, () => o.handler(event, deliveryContext(o.subscription, origin, attempt, record, call, trace, revoked)), trace, o.correlationContext !== false),
    );
  }

  /**
   * Dead-letters a retry or redrive record of a held kind (`heldKinds`) with the event's original
   * position (`origin`), its attempts so far and its redrive count, and the reason {@link heldReason}:
   * a redrive once the permission is back delivers it.
   */
  async function holdBack(record: TransportRecord, kind: string, meta: RetryMeta | undefined, origin: Origin, signal: AbortSignal, redriven: number | undefined): Promise<RecordDecision> {
    await sendToDeadLetter(record, heldReason(kind), meta?.attempt ?? 1, meta?.firstFailureMs ?? Date.now(), origin, signal, undefined, false, undefined, redriven);
    attempts.forget(record);
    return RECORD_DONE;
  }

  async function onRecord(record: TransportRecord, ctx: RecordContext): Promise<RecordDecision> {
    // The transport aborts ctx.signal when the member stops (unsubscribe stops it right after `stopping`).
    const signal = ctx.signal;
    const here: Origin = { topic: record.topic, partition: record.partition, offset: record.offset };
    // 1. Bounded work: nothing else reads the headers of a record that breaks the limits.
    const tooBig = headerBoundsProblem(record, limits);
    if (tooBig !== undefined) {
      await sendToDeadLetter(record, tooBig, 1, Date.now(), here, signal, undefined, true);
      return RECORD_DONE;
    }
    let meta: RetryMeta | undefined;
    // A redriven event (issue 10): from the redrive topic, or carried on through the retry topic.
    let redrive: RedriveMeta | undefined;
    if (record.topic === redrives) {
      redrive = parseRedriveMeta(record.headers);
      const forged = redrive === undefined ? 'missing, repeated or malformed' : redriveMetaProblem(redrive, o.subscription, originTopics);
      if (redrive === undefined || forged !== undefined) {
        await sendToDeadLetter(record, `poison: redrive-topic record with invalid redrive headers (${forged ?? 'missing'})`, 1, Date.now(), here, signal);
        return RECORD_DONE;
      }
    } else if (record.topic === retries) {
      const carried = parseRedriveMeta(record.headers);
      if (carried !== undefined && redriveMetaProblem(carried, o.subscription, originTopics) === undefined) redrive = carried;
      meta = parseRetryMeta(record);
      const forged = meta === undefined ? 'missing, repeated or malformed' : retryMetaProblem(meta, o.subscription, originTopics, o.retry, Date.now());
      if (meta === undefined || forged !== undefined) {
        await sendToDeadLetter(record, `poison: retry-topic record with invalid retry headers (${forged ?? 'missing'})`, 1, Date.now(), here, signal);
        return RECORD_DONE;
      }
      // Not due yet: only this retry-topic partition waits; everything else keeps flowing.
      const wait = meta.notBeforeMs - Date.now();
      if (wait > 0) return redeliverAfter(wait);
    }
    const origin = meta?.origin ?? redrive?.origin ?? here;
    const redriven = redrive?.count;
    // 2–3. Decode and validate; other kinds are skipped before their data is decoded.
    const headers = peekHeaders(record);
    const type = peekType(headers);
    // A retry or redrive of a kind the owner may no longer read: not delivered, not lost either.
    // Its type is in the headers (binary mode) or, structured, known once decoded (below).
    const ownRecord = meta !== undefined || redrive !== undefined;
    const held = ownRecord && type !== undefined ? heldIds.get(type) : undefined;
    if (held !== undefined) return holdBack(record, held, meta, origin, signal, redriven);
    if (!filter.peek(type)) {
      stats.skipped++;
      noteForeignType(type, record);
      return RECORD_DONE;
    }
    // Decoded at once when the writer schema is known here (nearly always): no promise per record.
    const decoded = decodeRecordNow(codec, record, headers) ?? (await decodeRecord(codec, record, headers));
    if (!decoded.ok) {
      if (decoded.retriable) {
        const n = attempts.transientFailure(record);
        log.warn({ subscription: o.subscription, code: decoded.code, reason: decoded.reason.slice(0, 300), attempt: n }, 'decode failed transiently (registry?), trying again');
        return redeliverAfter(o.retry.delayMs(Math.min(n, 10)));
      }
      await sendToDeadLetter(record, `poison: ${decoded.reason}`, 1, meta?.firstFailureMs ?? Date.now(), origin, signal, undefined, false, undefined, redriven);
      attempts.forget(record);
      return RECORD_DONE;
    }
    const event = decoded.event;
    const heldStructured = ownRecord && type === undefined ? heldIds.get(event.attributes.type) : undefined;
    if (heldStructured !== undefined) return holdBack(record, heldStructured, meta, origin, signal, redriven);
    if (!filter.accepts(event)) {
      if (filter.eventIds.has(event.attributes.type)) stats.filtered++;
      else {
        stats.skipped++;
        noteForeignType(event.attributes.type, record);
      }
      return RECORD_DONE;
    }
    // A tombstone means something on a compacted topic only; elsewhere it is an event whose data
    // is missing, which ingress and the publisher refuse and a handler cannot read (`data` absent).
    const noData = missingDataProblem(codec, event);
    if (noData !== undefined) {
      await sendToDeadLetter(record, noData, 1, meta?.firstFailureMs ?? Date.now(), origin, signal, event, false, undefined, redriven);
      attempts.forget(record);
      return RECORD_DONE;
    }
    // 5. Idempotency: a finished event is not run again — except a dead-lettered one an operator redrove.
    let seen: FinalOutcome | undefined;
    if (idem !== undefined) {
      try {
        seen = await idem.seen(event);
      } catch (err) {
        // The store's failure, not the record's: the record waits and is tried again (its
        // partition with it), as for a registry away; a stopped subscription lost every event after it.
        if (signal.aborted) throw err;
        const n = attempts.transientFailure(record);
        log.warn({ subscription: o.subscription, id: event.attributes.id, err: errorMessage(err), retriable: err instanceof GatewayError ? err.retriable : undefined, attempt: n }, 'idempotency store lookup failed, trying the record again');
        return redeliverAfter(o.retry.delayMs(Math.min(n, 10)));
      }
    }
    if (seen === 'handled' || (seen === 'dead-lettered' && redrive === undefined)) {
      stats.duplicates++;
      attempts.forget(record);
      return RECORD_DONE;
    }
    // 4, 6. The handler, in the event's context.
    const tried = attempts.get(record);
    const attempt = (tried?.attempt ?? meta?.attempt ?? 0) + 1;
    const t0 = performance.now();
    const span = o.tracing?.start(`process ${origin.topic}`, 'consumer', typeof event.attributes.traceparent === 'string' ? event.attributes.traceparent : undefined, {
      'messaging.system': 'kafka',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': origin.topic,
      'messaging.destination.partition.id': String(origin.partition),
      'messaging.consumer.group.name': o.subscription,
      'messaging.message.id': event.attributes.id,
      'messaging.kafka.offset': Number(origin.offset),
      'cloudevents.event_type': event.attributes.type,
      ...(record.key === null ? {} : { 'messaging.kafka.message.key': new TextDecoder('utf-8', { ignoreBOM: true }).decode(record.key) }),
    });
    // The trace this handling continues, once for both the context and `ctx.traceparent`.
    const trace = handlingTraceparent(event, span?.traceparent);
    // From the handler's outcome on, only the attributes are used (dead-letter, idempotency): the
    // event's data is not kept while its outcome is awaited (on a batched push, hundreds of events
    // wait at once; whatever they keep survives young collections, issue 8 GC profile).
    const attributes = event.attributes;
    let out: Outcome;
    try {
      out = await callHandler(event, signal, origin, attempt, record, trace, ctx.revoked);
    } catch (err) {
      span?.end(err);
      throw err;
    }
    // The partition moved to another member meanwhile: its new owner handles the record again from
    // its last commit. A failure here is not counted (a retry-topic copy or a dead letter would
    // duplicate the new owner's), and nothing is committed for a revoked partition anyway.
    if (ctx.revoked?.aborted === true && out.kind !== 'ack' && out.kind !== 'duplicate') {
      span?.end(`partition revoked: ${out.reason}`);
      attempts.forget(record);
      log.debug({ subscription: o.subscription, topic: record.topic, partition: record.partition, offset: record.offset.toString(), reason: out.reason.slice(0, 300) }, 'partition revoked while the record was in hand: left to its new owner');
      return redeliverAfter(0);
    }
    // The member stopped meanwhile (PATCH restart, pause, 410, idle stop, shutdown): a retry now is
    // the stop's doing (the handler's wait or request was cut by it), not a failure of the event.
    // Not counted and not the status's lastError ("consumer stopping" hid a 410's reason); the next
    // member handles the record again from the last commit.
    if (signal.aborted && out.kind === 'retry') {
      span?.end(`member stopping: ${out.reason}`);
      log.debug({ subscription: o.subscription, topic: record.topic, partition: record.partition, offset: record.offset.toString(), reason: out.reason.slice(0, 300) }, 'the member stopped while the record was in hand: handled again from the last commit');
      cutByStop.count++;
      if (cutByStop.first.length < CUT_POSITIONS_LOGGED) cutByStop.first.push({ topic: record.topic, partition: record.partition, offset: record.offset.toString() });
      return redeliverAfter(0);
    }
    o.instruments?.delivery(o.subscription, (performance.now() - t0) / 1000);
    span?.end(out.kind === 'ack' || out.kind === 'duplicate' ? undefined : out.reason);
    // 7. Outcome.
    if (out.kind === 'ack' || out.kind === 'duplicate') {
      if (out.kind === 'ack') {
        stats.handled++;
        activity.lastDeliveryMs = Date.now();
      } else stats.duplicates++;
      attempts.forget(record);
      // Only with idempotency: `await undefined` would still cost a turn per record.
      if (idem !== undefined) await idem.record({ attributes }, 'handled');
      return RECORD_DONE;
    }
    const firstFailureMs = tried?.firstFailureMs ?? meta?.firstFailureMs ?? Date.now();
    const delay = out.kind === 'retry' ? Math.max(o.retry.delayMs(attempt), out.afterMs ?? 0) : 0;
    const tooOld = out.kind === 'retry' && o.maxAgeMs !== undefined && Date.now() + delay - firstFailureMs > o.maxAgeMs;
    if (out.kind === 'deadLetter' || attempt >= o.retry.maxAttempts || tooOld) {
      const reason =
        out.kind === 'deadLetter'
          ? out.reason
          : tooOld
            ? `retry budget of ${o.maxAgeMs} ms exhausted after ${attempt} attempts: ${out.reason}`
            : `retries exhausted after ${attempt} attempts: ${out.reason}`;
      await sendToDeadLetter(record, reason, attempt, firstFailureMs, origin, signal, { attributes }, false, out.failure, redriven);
      attempts.forget(record);
      return RECORD_DONE;
    }
    stats.retried++;
    activity.lastError = { atMs: Date.now(), reason: out.reason.slice(0, 500) };
    if (ordering === 'none') {
      // A handler's afterMs beyond what a reader takes as genuine is cut to it: a longer wait was
      // read back as forged and dead-lettered (a Retry-After of an hour lost the event).
      const parkedMs = Math.min(delay, longestParkMs(o.retry) - PARK_MARGIN_MS);
      const headers2 = [...originalHeaders(record.headers), ...retryHeaders({ subscription: o.subscription, attempt, notBeforeMs: Date.now() + parkedMs, firstFailureMs, origin })];
      try {
        await produceDurably(retries, { key: record.key, value: record.value, headers: headers2, timestampMs: record.timestampMs }, 'retry-topic', signal);
      } catch (err) {
        if (signal.aborted) throw err;
        await sendToDeadLetter(record, `could not park on the retry topic (${errorMessage(err)}): ${out.reason}`, attempt, firstFailureMs, origin, signal, { attributes }, false, out.failure, redriven);
      }
      attempts.forget(record);
      return RECORD_DONE;
    }
    attempts.failed(record, attempt, firstFailureMs);
    return redeliverAfter(delay);
  }

  const consumed = [...topics, ...(retryRead ? [retries] : []), ...(redriveRead ? [redrives] : [])];
  const consumption: Consumption = await transport.consume(
    {
      group: o.subscription,
      topics: consumed,
      startFrom: o.startFrom ?? 'latest',
      ...(o.startAt === undefined ? {} : { startAt: o.startAt }),
      ...(o.instanceId === undefined ? {} : { instanceId: o.instanceId }),
      ...(o.commitEveryRecords === undefined ? {} : { commitEveryRecords: o.commitEveryRecords }),
      ...(o.commitIntervalMs === undefined ? {} : { commitIntervalMs: o.commitIntervalMs }),
      ...(o.stopTimeoutMs === undefined ? {} : { stopTimeoutMs: o.stopTimeoutMs }),
      ...(o.fetchLingerMs === undefined ? {} : { fetchLingerMs: o.fetchLingerMs }),
      ...(o.partitionsConcurrently === undefined ? {} : { partitionsConcurrently: o.partitionsConcurrently }),
      // With lanes, the retry topic's records still go one at a time: they wait in order for their due time.
      ...(o.inFlightPerPartition === undefined ? {} : { inFlightPerPartition: window, perKeyOrder: ordering === 'key', serialTopics: [retries] }),
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
    if (cutByStop.count > 0) {
      log.info(
        { subscription: o.subscription, records: cutByStop.count, positions: cutByStop.first },
        `the stop cut ${cutByStop.count} deliver${cutByStop.count === 1 ? 'y' : 'ies'} in hand short (their calls were aborted): not committed, so ${cutByStop.count === 1 ? 'it is' : 'they are'} delivered again from the last commit by the next member`,
      );
      cutByStop.count = 0;
      cutByStop.first = [];
    }
  };
  return {
    name: o.subscription,
    done,
    stats: () => ({ ...stats, rebalances: Math.max(0, consumption.joins() - 1) }),
    activity: () => ({ ...activity }),
    topics: Object.freeze(consumed),
    deadLetterTopic: dlqStored ? dlq : undefined,
    assignments: () => consumption.assignments(),
    setFilters(filters) {
      assertFilters(filters);
      filter.setFilters(filters);
    },
    unsubscribe,
    [Symbol.asyncDispose]: unsubscribe,
  };
}

/** How many positions of deliveries cut short by a stop the stop's log line names (the count is whole). */
const CUT_POSITIONS_LOGGED = 10;

/**
 * The handler's context. `signal` is a getter: the call's AbortSignal is made only when the
 * handler reads it (most handlers never do; one per record was the pipeline's largest cost).
 * A class, not an object literal with a getter: such a literal got a map of its own per record
 * (about 1 KiB of allocation each, issue 8 allocation profile).
 */
class RecordDeliveryContext implements DeliveryContext {
  readonly subscription: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly attempt: number;
  readonly record: TransportRecord;
  readonly traceparent?: string;
  readonly revoked?: AbortSignal;
  readonly #call: CallSignal;

  constructor(subscription: string, origin: Origin, attempt: number, record: TransportRecord, call: CallSignal, traceparent: string | undefined, revoked: AbortSignal | undefined) {
    this.subscription = subscription;
    this.topic = origin.topic;
    this.partition = origin.partition;
    this.offset = origin.offset;
    this.attempt = attempt;
    this.record = record;
    if (traceparent !== undefined) this.traceparent = traceparent;
    if (revoked !== undefined) this.revoked = revoked;
    this.#call = call;
  }

  get signal(): AbortSignal {
    return this.#call.signal;
  }
}

function deliveryContext(subscription: string, origin: Origin, attempt: number, record: TransportRecord, call: CallSignal, traceparent: string | undefined, revoked: AbortSignal | undefined): DeliveryContext {
  return new RecordDeliveryContext(subscription, origin, attempt, record, call, traceparent, revoked);
}

/** Errors: CEG_INVALID_OPTIONS listing every problem of the filters, each with its path. */
function assertFilters(filters: readonly FilterExpression[]): void {
  const problems = filterProblems(filters);
  if (problems.length === 0) return;
  throw new GatewayError('CEG_INVALID_OPTIONS', `filters: ${problems.map((p) => `${p.path}: ${p.problem}`).join('; ')}`, {
    retriable: false,
    details: { field: problems[0]!.path, violations: problems.map((p) => ({ field: p.path, reason: p.problem })) },
  });
}
