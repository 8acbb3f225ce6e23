/**
 * Headers that travel with a record through the retry topic and into the dead-letter topic
 * (bus spec S5: "dead-letter with the original envelope and the failure reason preserved").
 * Original key, value and headers are kept; these are added (earlier ones replaced).
 */
import { printable } from '../../core/printable.js';
import type { RecordHeader, TransportRecord } from '../../transport/port.js';
import type { DeliveryFailure } from './outcome.js';

const enc = new TextEncoder();
// ignoreBOM: a leading U+FEFF in a header value or key is part of it (CloudEvents attributes may start with one).
const dec = new TextDecoder('utf-8', { ignoreBOM: true });

export const DLQ_PREFIX = 'dlq_';
export const RETRY_PREFIX = 'retry_';

/**
 * The headers a dead-lettered record carries besides its original key, value and headers (bus
 * spec S5: reason, attempt count, source topic/partition/offset, subscription). A contract for
 * readers of dead-letter topics in any language: the names never change.
 */
export const DEAD_LETTER_HEADERS = Object.freeze({
  /** Why, one line (at most 4,000 characters). */
  reason: 'dlq_reason',
  /** Attempts made, decimal. */
  attempts: 'dlq_attempts',
  /** RFC 3339 UTC. */
  firstFailureTime: 'dlq_first_failure_time',
  lastFailureTime: 'dlq_last_failure_time',
  sourceTopic: 'dlq_source_topic',
  sourcePartition: 'dlq_source_partition',
  sourceOffset: 'dlq_source_offset',
  subscription: 'dlq_subscription',
  /** Present when the original headers were not copied (they broke the limits): how many were dropped. */
  headersDropped: 'dlq_headers_dropped',
  /** Present when the dead-letter topic refused the full record: the original value's size, bytes (the value is left out). */
  valueDropped: 'dlq_value_dropped',
  /** Push delivery: the sink's last HTTP status, decimal (absent when it never answered: timeout, connection refused). */
  lastStatus: 'dlq_last_status',
  /** Push delivery: the start of the sink's last answer, at most 1,024 bytes of UTF-8. */
  responseExcerpt: 'dlq_response_excerpt',
  /** Push delivery: the sink (`scheme://host[:port]/path`, no query, no credentials). */
  sink: 'dlq_sink',
  /** Present when the event had been redriven before it failed again: how often it was redriven, decimal (issue 10). */
  redriven: 'dlq_redriven',
} as const);

/**
 * The headers a redriven record carries on `<subscription>.redrive` (issue 10: "marked as
 * redriven (a header)"). A contract for readers in any language: the names never change. The
 * record keeps the dead letter's key, value and original headers.
 */
export const REDRIVE_HEADERS = Object.freeze({
  /** The subscription (consumer group) the event goes back to; only it reads the redrive topic. */
  subscription: 'redrive_subscription',
  /** How often the event has been redriven, this time included (1, 2, …), decimal. */
  count: 'redrive_count',
  /** When the operator redrove it, RFC 3339 UTC. */
  time: 'redrive_time',
  /** Where the event was first read (the dead letter's `dlq_source_*`). */
  sourceTopic: 'redrive_source_topic',
  sourcePartition: 'redrive_source_partition',
  sourceOffset: 'redrive_source_offset',
  /** The dead letter it came from: `<partition>:<offset>` of `<subscription>.dlq`. */
  deadLetter: 'redrive_dead_letter',
} as const);

export const REDRIVE_PREFIX = 'redrive_';

/** The headers a record parked on a subscription's retry topic carries. */
export const RETRY_HEADERS = Object.freeze({
  subscription: 'retry_subscription',
  attempt: 'retry_attempt',
  /** Epoch ms before which the record is not tried again. */
  notBefore: 'retry_not_before',
  firstFailureTime: 'retry_first_failure_time',
  sourceTopic: 'retry_source_topic',
  sourcePartition: 'retry_source_partition',
  sourceOffset: 'retry_source_offset',
} as const);

/**
 * Headers kept from a record whose headers broke the limits: enough to identify the event, each
 * value at most 1 KiB, first occurrence only — so a reader of the dead-letter topic never meets
 * the offending headers in turn (issue 7).
 */
const IDENTIFYING_HEADERS = ['ce_specversion', 'ce_id', 'ce_source', 'ce_type', 'ce_time', 'ce_correlationid', 'ce_partitionkey', 'content-type'] as const;
const MAX_KEPT_VALUE_BYTES = 1024;

/** The identifying headers of an oversized record (see above). */
export function identifyingHeaders(headers: readonly RecordHeader[]): RecordHeader[] {
  const kept = new Map<string, Uint8Array>();
  for (const [n, v] of headers) {
    if (kept.size === IDENTIFYING_HEADERS.length) break;
    if (!kept.has(n) && (IDENTIFYING_HEADERS as readonly string[]).includes(n) && v.byteLength <= MAX_KEPT_VALUE_BYTES) kept.set(n, v);
  }
  return [...kept];
}

/** Where a record first came from and how often it failed, carried across retry-topic hops. */
export interface RetryMeta {
  readonly subscription: string;
  /** Attempts made so far (≥ 1). */
  readonly attempt: number;
  /** Not to be retried before this instant, epoch ms. */
  readonly notBeforeMs: number;
  readonly firstFailureMs: number;
  readonly origin: { readonly topic: string; readonly partition: number; readonly offset: bigint };
}

/** The record's headers without the ones this module adds (so hops do not pile them up). */
export function originalHeaders(headers: readonly RecordHeader[]): RecordHeader[] {
  return headers.filter(([n]) => !n.startsWith(DLQ_PREFIX) && !n.startsWith(RETRY_PREFIX));
}

export function retryHeaders(m: RetryMeta): RecordHeader[] {
  const h = RETRY_HEADERS;
  return [
    [h.subscription, enc.encode(m.subscription)],
    [h.attempt, enc.encode(String(m.attempt))],
    [h.notBefore, enc.encode(String(m.notBeforeMs))],
    [h.firstFailureTime, enc.encode(String(m.firstFailureMs))],
    [h.sourceTopic, enc.encode(m.origin.topic)],
    [h.sourcePartition, enc.encode(String(m.origin.partition))],
    [h.sourceOffset, enc.encode(m.origin.offset.toString())],
  ];
}

/** Reads the retry headers of a retry-topic record; undefined when any is missing, repeated or malformed. */
export function parseRetryMeta(record: TransportRecord): RetryMeta | undefined {
  const h = new Map<string, string>();
  for (const [n, v] of record.headers) {
    if (!n.startsWith(RETRY_PREFIX)) continue;
    if (h.has(n)) return undefined; // a repeated retry header: which one counts is ambiguous
    h.set(n, dec.decode(v));
  }
  const int = (name: string): number | undefined => {
    const v = h.get(name);
    return v !== undefined && /^\d{1,16}$/.test(v) ? Number(v) : undefined;
  };
  const n = RETRY_HEADERS;
  const subscription = h.get(n.subscription);
  const topic = h.get(n.sourceTopic);
  const attempt = int(n.attempt);
  const notBeforeMs = int(n.notBefore);
  const firstFailureMs = int(n.firstFailureTime);
  const partition = int(n.sourcePartition);
  const offset = h.get(n.sourceOffset);
  if (subscription === undefined || topic === undefined || attempt === undefined || notBeforeMs === undefined || firstFailureMs === undefined || partition === undefined || offset === undefined || !/^\d{1,19}$/.test(offset)) {
    return undefined;
  }
  return { subscription, attempt, notBeforeMs, firstFailureMs, origin: { topic, partition, offset: BigInt(offset) } };
}

/** What of a retry policy bounds a park on the retry topic. */
export type ParkPolicy = { readonly maxAttempts: number; readonly maxDelayMs?: number; delayMs(attempt: number): number };

/**
 * The longest wait a record parked on the retry topic may carry, ms: twice the policy's longest
 * backoff plus a minute. A longer `retry_not_before` is taken as forged ({@link retryMetaProblem}),
 * so the subscriber cuts a handler's longer `afterMs` to this when it parks a record.
 */
export function longestParkMs(policy: ParkPolicy): number {
  const longest = policy.maxDelayMs ?? Math.max(policy.delayMs(policy.maxAttempts), policy.delayMs(1));
  return 2 * longest + 60_000;
}

/**
 * Why retry headers cannot have been written by this subscription, or undefined when they can:
 * anyone who can write to the retry topic can forge them, and a forged `retry_not_before` far in
 * the future paused a retry-topic partition for good (issue 7 trial). Checked: the subscription,
 * the source topic (one of the subscription's), the attempt (below the policy's budget) and the
 * wait (at most twice the longest backoff of the policy plus a minute).
 */
export function retryMetaProblem(m: RetryMeta, subscription: string, topics: ReadonlySet<string>, policy: ParkPolicy, nowMs: number): string | undefined {
  if (m.subscription !== subscription) return `retry_subscription is ${m.subscription}`;
  if (!topics.has(m.origin.topic)) return `retry_source_topic ${m.origin.topic} is not a topic of this subscription`;
  if (m.attempt < 1 || m.attempt >= policy.maxAttempts) return `retry_attempt ${m.attempt} is outside 1..${policy.maxAttempts - 1}`;
  if (m.notBeforeMs - nowMs > longestParkMs(policy)) return `retry_not_before is ${m.notBeforeMs - nowMs} ms away, more than the policy allows`;
  if (m.firstFailureMs > nowMs + 60_000) return 'retry_first_failure_time is in the future';
  return undefined;
}

export interface DeadLetterInfo {
  readonly reason: string;
  readonly attempts: number;
  readonly firstFailureMs: number;
  readonly lastFailureMs: number;
  readonly origin: { readonly topic: string; readonly partition: number; readonly offset: bigint };
  readonly subscription: string;
  /** Set when the original headers were left out (they broke the limits): how many there were. */
  readonly headersDropped?: number;
  /** What the sink answered last (push delivery). */
  readonly failure?: DeliveryFailure;
  /** How often the event had been redriven before this dead letter (absent: never). */
  readonly redriven?: number;
}

/** Longest response excerpt kept, bytes of UTF-8. */
export const MAX_EXCERPT_BYTES = 1024;

/** The first `max` bytes of `text` as UTF-8, never cutting a character in two. */
export function utf8Prefix(text: string, max = MAX_EXCERPT_BYTES): string {
  const bytes = enc.encode(text);
  if (bytes.length <= max) return text;
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // back to a character boundary
  return dec.decode(bytes.subarray(0, end));
}

/** UTF-8 bytes of one code point (a lone surrogate is written as U+FFFD: 3 bytes). */
const utf8Bytes = (cp: number): number => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

/**
 * {@link printable}(`text`) cut to at most `maxBytes` bytes of UTF-8 and `maxChars` UTF-16 units,
 * only between whole characters and whole `\uXXXX` escapes. Escaping first and cutting the
 * result at a byte count left a broken escape at the end (`…\u0007\u00`), which a JSON or
 * escape-aware reader rejects or misreads.
 */
export function printablePrefix(text: string, maxBytes: number, maxChars = Number.POSITIVE_INFINITY): string {
  const whole = printable(text);
  // Common case: it fits (3 bytes per UTF-16 unit is the most UTF-8 can take).
  if (whole.length <= maxChars && (whole.length * 3 <= maxBytes || enc.encode(whole).length <= maxBytes)) return whole;
  let out = '';
  let bytes = 0;
  for (const ch of text) {
    const piece = printable(ch);
    // An escape is ASCII (one byte per unit); a kept character is its UTF-8 length.
    const b = piece === ch ? utf8Bytes(ch.codePointAt(0)!) : piece.length;
    if (bytes + b > maxBytes || out.length + piece.length > maxChars) break;
    out += piece;
    bytes += b;
  }
  return out;
}

/** The dead-letter headers; the reason is cut at 4,000 characters. */
export function deadLetterHeaders(i: DeadLetterInfo): RecordHeader[] {
  const h = DEAD_LETTER_HEADERS;
  return [
    [h.reason, enc.encode(printablePrefix(i.reason, Number.POSITIVE_INFINITY, 4000))],
    [h.attempts, enc.encode(String(i.attempts))],
    [h.firstFailureTime, enc.encode(new Date(i.firstFailureMs).toISOString())],
    [h.lastFailureTime, enc.encode(new Date(i.lastFailureMs).toISOString())],
    [h.sourceTopic, enc.encode(i.origin.topic)],
    [h.sourcePartition, enc.encode(String(i.origin.partition))],
    [h.sourceOffset, enc.encode(i.origin.offset.toString())],
    [h.subscription, enc.encode(i.subscription)],
    ...(i.headersDropped === undefined ? [] : [[h.headersDropped, enc.encode(String(i.headersDropped))] as RecordHeader]),
    ...(i.failure?.status === undefined ? [] : [[h.lastStatus, enc.encode(String(i.failure.status))] as RecordHeader]),
    ...(i.failure?.excerpt === undefined ? [] : [[h.responseExcerpt, enc.encode(printablePrefix(i.failure.excerpt, MAX_EXCERPT_BYTES))] as RecordHeader]),
    ...(i.failure?.sink === undefined ? [] : [[h.sink, enc.encode(i.failure.sink.slice(0, 2048))] as RecordHeader]),
    ...(i.redriven === undefined ? [] : [[h.redriven, enc.encode(String(i.redriven))] as RecordHeader]),
  ];
}

/**
 * The headers of a dead letter the dead-letter topic refused in full (too large once decompressed
 * or with its headers): the source record's identifying headers, the dead-letter headers with a
 * reason saying so, and `dlq_value_dropped` with the value's size (bytes). Written without the
 * value, by the subscriber and by pull alike, so one bad record never stops its partition.
 */
export function deadLetterWithoutValueHeaders(source: TransportRecord, info: DeadLetterInfo, refusal: string): RecordHeader[] {
  const reason = `${info.reason} (the dead-letter topic refused the full record: ${refusal})`;
  return [...identifyingHeaders(source.headers), ...deadLetterHeaders({ ...info, reason }), [DEAD_LETTER_HEADERS.valueDropped, enc.encode(String(source.value?.byteLength ?? 0))]];
}

/** Most redrives of one event: a bound on a count a writer of the redrive topic could inflate. */
export const MAX_REDRIVES = 1000;

/** What the redrive headers of a record say. */
export interface RedriveMeta {
  readonly subscription: string;
  /** ≥ 1 */
  readonly count: number;
  readonly origin: { readonly topic: string; readonly partition: number; readonly offset: bigint };
}

/** The redrive headers of a record a dead letter is turned into (issue 10). */
export function redriveHeaders(m: RedriveMeta & { readonly atMs: number; readonly deadLetter: { readonly partition: number; readonly offset: bigint } }): RecordHeader[] {
  const h = REDRIVE_HEADERS;
  return [
    [h.subscription, enc.encode(m.subscription)],
    [h.count, enc.encode(String(m.count))],
    [h.time, enc.encode(new Date(m.atMs).toISOString())],
    [h.sourceTopic, enc.encode(m.origin.topic)],
    [h.sourcePartition, enc.encode(String(m.origin.partition))],
    [h.sourceOffset, enc.encode(m.origin.offset.toString())],
    [h.deadLetter, enc.encode(`${m.deadLetter.partition}:${m.deadLetter.offset}`)],
  ];
}

/** Reads the redrive headers; undefined when absent, repeated or malformed. */
export function parseRedriveMeta(headers: readonly RecordHeader[]): RedriveMeta | undefined {
  const h = new Map<string, string>();
  for (const [n, v] of headers) {
    if (!n.startsWith(REDRIVE_PREFIX)) continue;
    if (h.has(n)) return undefined; // repeated: which one counts is ambiguous
    h.set(n, dec.decode(v));
  }
  const n = REDRIVE_HEADERS;
  const subscription = h.get(n.subscription);
  const topic = h.get(n.sourceTopic);
  const count = h.get(n.count);
  const partition = h.get(n.sourcePartition);
  const offset = h.get(n.sourceOffset);
  if (subscription === undefined || topic === undefined || count === undefined || partition === undefined || offset === undefined) return undefined;
  if (!/^\d{1,4}$/.test(count) || !/^\d{1,9}$/.test(partition) || !/^\d{1,19}$/.test(offset)) return undefined;
  return { subscription, count: Number(count), origin: { topic, partition: Number(partition), offset: BigInt(offset) } };
}

/**
 * Why a redrive-topic record cannot have been written for this subscription, or undefined: the
 * subscription must be this one, the source topic one of its topics and the count within
 * 1..{@link MAX_REDRIVES}. Such a record is dead-lettered as forged, never delivered.
 */
export function redriveMetaProblem(m: RedriveMeta, subscription: string, topics: ReadonlySet<string>): string | undefined {
  if (m.subscription !== subscription) return `redrive_subscription is ${m.subscription.slice(0, 200)}`;
  if (!topics.has(m.origin.topic)) return `redrive_source_topic ${m.origin.topic.slice(0, 250)} is not a topic of this subscription`;
  if (m.count < 1 || m.count > MAX_REDRIVES) return `redrive_count ${m.count} is outside 1..${MAX_REDRIVES}`;
  return undefined;
}
