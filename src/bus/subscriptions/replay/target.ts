/**
 * What a replay moves a subscription to, as requested: `"earliest"`, `"latest"`, an RFC 3339 time
 * (the first record whose timestamp is at or after it) or explicit offsets per partition
 * (`{ "<partition>": <offset>, … }`), and its validation, every problem naming its field
 * (`to`, `to.3`, `dryRun`).
 *
 * Partitions are named `"<partition>"` when the subscription reads one topic, and
 * `"<topic>/<partition>"` when it reads several (its kinds live on more than one topic); a `/`
 * cannot occur in a topic name, so the key is unambiguous. Offsets are JSON integers (safe range)
 * or decimal strings (any 64-bit offset).
 * Spec: issue 9 ("Replay by offset reset": the `to` and `dryRun` fields).
 */
import { GatewayError } from '../../../core/errors.js';
import { RFC3339_EXAMPLE, parseRfc3339Time } from '../../../core/rfc3339.js';

/** A parsed replay target. `offsets`: key = partition key (see {@link partitionKey}), value = offset. */
export type ReplayTarget =
  | { readonly kind: 'earliest' }
  | { readonly kind: 'latest' }
  | { readonly kind: 'timestamp'; readonly timestampMs: number }
  | { readonly kind: 'offsets'; readonly offsets: ReadonlyMap<string, bigint> };

/**
 * `to` as the library takes it: `'earliest'`, `'latest'` or an RFC 3339 time (a string), a `Date`,
 * or offsets by partition key (numbers, bigints or decimal strings).
 */
export type ReplayTo = string | Date | Readonly<Record<string, number | bigint | string>>;

/** A validated replay request. `to` is kept verbatim for the audit log. */
export interface ReplayRequest {
  readonly to: unknown;
  readonly target: ReplayTarget;
  readonly dryRun: boolean;
}

/** Most partitions one explicit-offsets request may list (more: 400 naming `to`). */
export const MAX_REPLAY_PARTITIONS = 10_000;

/**
 * Bytes one partition of explicit offsets takes in a request at most, written as a client would:
 * `"<topic>/<partition>": "<offset>",` with the longest topic name Kafka allows (249 characters,
 * core/topic-name.ts), a partition of 6 digits (the most {@link parsePartitionKey} takes), an
 * offset as a 19-digit string (2^63 − 1), and a line break with up to 30 characters of indentation
 * (287 bytes with `JSON.stringify(…, null, 2)`). The HTTP route's body bound is made of it, so
 * that {@link MAX_REPLAY_PARTITIONS} is the limit a request meets, not the body's size.
 */
export const MAX_REPLAY_ENTRY_BYTES = 320;

const OFFSET_TEXT = /^(0|[1-9][0-9]{0,18})$/;
const MAX_OFFSET = 2n ** 63n - 1n;

/** The key of one partition in `to` and in the report: `"<p>"` for a one-topic subscription, else `"<topic>/<p>"`. */
export function partitionKey(topic: string, partition: number, topics: readonly string[]): string {
  return topics.length === 1 ? String(partition) : `${topic}/${partition}`;
}

/** The topic and partition a key names, or undefined when it names none of `topics`' form. */
export function parsePartitionKey(key: string, topics: readonly string[]): { topic: string; partition: number } | undefined {
  const slash = key.lastIndexOf('/');
  const topic = topics.length === 1 && slash < 0 ? topics[0] : key.slice(0, slash);
  const p = slash < 0 ? key : key.slice(slash + 1);
  if (topic === undefined || !topics.includes(topic) || (topics.length === 1 && slash >= 0) || !/^(0|[1-9][0-9]{0,5})$/.test(p)) return undefined;
  return { topic, partition: Number(p) };
}

/** A replay request that cannot be carried out as given: 400 naming the field. */
export function invalidReplay(field: string, reason: string): GatewayError {
  return new GatewayError('CEG_INVALID_REPLAY', `invalid replay: ${field}: ${reason}`, { retriable: false, details: { field, violations: [{ field, reason }] } });
}

/**
 * Parses `to` (`topics`: the subscription's topics, for the form of partition keys).
 * Errors: CEG_INVALID_REPLAY naming `to` or `to.<key>`.
 */
export function parseTarget(to: unknown, topics: readonly string[]): ReplayTarget {
  if (to instanceof Date) {
    if (!Number.isFinite(to.getTime())) throw invalidReplay('to', 'an invalid Date');
    return { kind: 'timestamp', timestampMs: to.getTime() };
  }
  if (to === 'earliest' || to === 'latest') return { kind: to };
  if (typeof to === 'string') {
    const t = parseRfc3339Time(to);
    if (!t.ok) throw invalidReplay('to', `earliest, latest, an RFC 3339 time (e.g. ${RFC3339_EXAMPLE}) or { "<partition>": <offset>, … }: ${t.reason}`);
    return { kind: 'timestamp', timestampMs: t.epochMs };
  }
  if (typeof to !== 'object' || to === null || Array.isArray(to)) {
    throw invalidReplay('to', to === undefined ? 'required: earliest, latest, an RFC 3339 time or { "<partition>": <offset>, … }' : 'earliest, latest, an RFC 3339 time or { "<partition>": <offset>, … }');
  }
  const entries = Object.entries(to as Record<string, unknown>);
  if (entries.length === 0) throw invalidReplay('to', 'at least one partition');
  if (entries.length > MAX_REPLAY_PARTITIONS) throw invalidReplay('to', `at most ${MAX_REPLAY_PARTITIONS} partitions`);
  const offsets = new Map<string, bigint>();
  for (const [key, value] of entries) {
    const field = `to.${key.slice(0, 100)}`;
    const where = parsePartitionKey(key, topics);
    if (where === undefined) {
      throw invalidReplay(field, topics.length === 1 ? 'a partition number of the subscription\'s topic' : `"<topic>/<partition>" of one of the subscription's topics (${topics.join(', ')})`);
    }
    const canonical = partitionKey(where.topic, where.partition, topics);
    if (offsets.has(canonical)) throw invalidReplay(field, 'the same partition twice');
    offsets.set(canonical, parseOffset(value, field));
  }
  return { kind: 'offsets', offsets };
}

function parseOffset(value: unknown, field: string): bigint {
  if (typeof value === 'bigint' && value >= 0n && value <= MAX_OFFSET) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'string' && OFFSET_TEXT.test(value) && BigInt(value) <= MAX_OFFSET) return BigInt(value);
  throw invalidReplay(field, 'an offset: an integer ≥ 0 (a JSON number in the safe range, or its decimal string)');
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates a `POST /subscriptions/{name}/replay` body: `{ "to": …, "dryRun": bool }` (`dryRun`
 * defaults to false); unknown fields are refused.
 * Errors: CEG_INVALID_REPLAY naming the field.
 */
export function parseReplayRequest(body: unknown, topics: readonly string[]): ReplayRequest {
  if (!isObject(body)) throw invalidReplay('body', 'a JSON object { "to": …, "dryRun": bool }');
  for (const k of Object.keys(body)) if (k !== 'to' && k !== 'dryRun') throw invalidReplay(k.slice(0, 100), 'unknown field');
  if (body.dryRun !== undefined && typeof body.dryRun !== 'boolean') throw invalidReplay('dryRun', 'true or false');
  return { to: body.to, target: parseTarget(body.to, topics), dryRun: body.dryRun === true };
}

/** `to` as written to the audit log: verbatim, a Date as its ISO text, bigints as decimal strings. */
export function verbatimTo(to: unknown): unknown {
  if (to instanceof Date) return to.toISOString();
  if (isObject(to)) return Object.fromEntries(Object.entries(to).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]));
  return to;
}
