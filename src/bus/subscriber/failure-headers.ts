/**
 * Headers that travel with a record through the retry topic and into the dead-letter topic
 * (bus spec S5: "dead-letter with the original envelope and the failure reason preserved").
 * Original key, value and headers are kept; these are added (earlier ones replaced).
 */
import type { RecordHeader, TransportRecord } from '../../transport/port.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

export const DLQ_PREFIX = 'dlq_';
export const RETRY_PREFIX = 'retry_';

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
  return [
    ['retry_subscription', enc.encode(m.subscription)],
    ['retry_attempt', enc.encode(String(m.attempt))],
    ['retry_not_before', enc.encode(String(m.notBeforeMs))],
    ['retry_first_failure_time', enc.encode(String(m.firstFailureMs))],
    ['retry_source_topic', enc.encode(m.origin.topic)],
    ['retry_source_partition', enc.encode(String(m.origin.partition))],
    ['retry_source_offset', enc.encode(m.origin.offset.toString())],
  ];
}

/** Reads the retry headers of a retry-topic record; undefined when any is missing or malformed. */
export function parseRetryMeta(record: TransportRecord): RetryMeta | undefined {
  const h = new Map<string, string>();
  for (const [n, v] of record.headers) if (n.startsWith(RETRY_PREFIX)) h.set(n, dec.decode(v));
  const int = (name: string): number | undefined => {
    const v = h.get(name);
    return v !== undefined && /^\d{1,16}$/.test(v) ? Number(v) : undefined;
  };
  const subscription = h.get('retry_subscription');
  const topic = h.get('retry_source_topic');
  const attempt = int('retry_attempt');
  const notBeforeMs = int('retry_not_before');
  const firstFailureMs = int('retry_first_failure_time');
  const partition = int('retry_source_partition');
  const offset = h.get('retry_source_offset');
  if (subscription === undefined || topic === undefined || attempt === undefined || notBeforeMs === undefined || firstFailureMs === undefined || partition === undefined || offset === undefined || !/^\d{1,19}$/.test(offset)) {
    return undefined;
  }
  return { subscription, attempt, notBeforeMs, firstFailureMs, origin: { topic, partition, offset: BigInt(offset) } };
}

export interface DeadLetterInfo {
  readonly reason: string;
  readonly attempts: number;
  readonly firstFailureMs: number;
  readonly lastFailureMs: number;
  readonly origin: { readonly topic: string; readonly partition: number; readonly offset: bigint };
  readonly subscription: string;
}

/** The dead-letter headers; the reason is cut at 4,000 characters. */
export function deadLetterHeaders(i: DeadLetterInfo): RecordHeader[] {
  return [
    ['dlq_reason', enc.encode(i.reason.slice(0, 4000))],
    ['dlq_attempts', enc.encode(String(i.attempts))],
    ['dlq_first_failure_time', enc.encode(new Date(i.firstFailureMs).toISOString())],
    ['dlq_last_failure_time', enc.encode(new Date(i.lastFailureMs).toISOString())],
    ['dlq_source_topic', enc.encode(i.origin.topic)],
    ['dlq_source_partition', enc.encode(String(i.origin.partition))],
    ['dlq_source_offset', enc.encode(i.origin.offset.toString())],
    ['dlq_subscription', enc.encode(i.subscription)],
  ];
}
