/**
 * The subscription resource: what a partner creates with `POST /subscriptions` (and a connector
 * file may declare), its validation, defaults and the names it maps to. The field names are the
 * contract of issue 8: `name`, `owner`, `kinds`, `filters`, `start`, `delivery`, `ordering`,
 * `retry`, `concurrency`, `rateLimit`, `state`.
 *
 * - `name` is stable across updates and maps to one Kafka consumer group,
 *   `ce-gateway.sub.<owner>.<name>` (neither part may contain a dot, so no two subscriptions share
 *   a group and no partner can name another service's group).
 * - `owner` is stored from the start; until partner identity exists every resource created over
 *   HTTP belongs to {@link DEFAULT_OWNER}.
 * - `delivery.mode` is `push` (webhook) or `pull` (long-poll and SSE, issue 9: no sink, no
 *   secrets; the partner reads with signed cursors); `shell-hook` and `file-drop` are sink types
 *   only connector files declare (they run commands or write files on the gateway's host).
 * Spec: issue 8; CloudEvents Subscriptions API 0.1 §3.2 (the resource, its `filters`); Standard
 *   Webhooks (secrets `whsec_<base64>`).
 */
import { z } from 'zod';
import { filterProblems } from '../subscriber/pipeline/dialects.js';
import type { EmptyExact } from '../subscriber/pipeline/dialects.js';
import type { FilterExpression } from '../subscriber/pipeline/dialects.js';
import { RFC3339_EXAMPLE, parseRfc3339Time } from '../../core/rfc3339.js';

/** `name` and `owner`: 1–100 of [A-Za-z0-9_-], starting with a letter or digit (no dots: they separate the group's parts). */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
/** Owner of every subscription created over HTTP until partners have identities (issue 11). */
export const DEFAULT_OWNER = 'anonymous';
/** Prefix of every subscription's consumer group. */
export const GROUP_PREFIX = 'ce-gateway.sub.';

/** The consumer group (and dead-letter topic stem) of a subscription: `ce-gateway.sub.<owner>.<name>`. */
export function groupOf(owner: string, name: string): string {
  return `${GROUP_PREFIX}${owner}.${name}`;
}

/**
 * True when `owner` may not use `name` because it could take a group (and topics) in another
 * partner's namespace: Kafka treats '.' and '_' in topic names as one character, so `acme`'s
 * `eu_orders` (`ce-gateway.sub.acme.eu_orders.dlq`) and partner `acme_eu`'s `orders`
 * (`ce-gateway.sub.acme_eu.orders.dlq`) need the same topics, and whichever is created first takes
 * the name from the other. So an owner whose id, followed by '_', begins another partner's id may not
 * use '_' in names ('-' instead); the longer id keeps its names. Deliberately coarser than "the
 * part before one of its '_' completes a partner's id": that rule would let a partner probe, name
 * by name, which ids extend its own; this one tells it one bit (some id does).
 * With owners and names free of '.', no two names of partners in `partners` that pass share a
 * Kafka spelling. Not covered: owners that are not partners (an admin's `?owner=`, connector files).
 * Spec: Kafka's topic-name rule (topics with a period or an underscore could collide); issue 11 (a
 * partner reaches only its own groups).
 */
export function reachesAnotherPartner(owner: string, name: string, partners: ReadonlySet<string>): boolean {
  if (!name.includes('_')) return false;
  const stem = `${owner}_`;
  for (const id of partners) if (id.startsWith(stem)) return true;
  return false;
}

/** Pairs of partner ids where the second begins with the first and '_' (the first may not use '_' in subscription names). */
export function extendedPartnerIds(partners: Iterable<string>): [shorter: string, longer: string][] {
  const ids = [...partners];
  return ids.flatMap((a) => ids.filter((b) => b.startsWith(`${a}_`)).map((b): [string, string] => [a, b]));
}

export const states = ['active', 'paused', 'gone'] as const;
export type SubscriptionState = (typeof states)[number];

/** Retry defaults of push subscriptions: 8 attempts, 1 s doubling to 60 s, 20 % jitter, 24 h budget, 10 s per attempt. */
export const DEFAULT_PUSH_RETRY = Object.freeze({ maxAttempts: 8, initialMs: 1000, factor: 2, maxMs: 60_000, jitter: 0.2, maxAgeMs: 86_400_000, timeoutMs: 10_000 });

/** Standard Webhooks secret: `whsec_` + base64 of 24–64 random bytes. */
export const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/;
const secretBytes = (s: string): number => Buffer.from(s.slice('whsec_'.length), 'base64').length;

/** Request headers a subscription may not set: the gateway owns them (HTTP framing, the CloudEvent, the signature). */
const RESERVED_HEADER = /^(host|content-.*|transfer-encoding|connection|keep-alive|te|trailer|upgrade|proxy-.*|expect|ce-.*|webhook-.*|user-agent)$/i;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/; // RFC 9110 §5.6.2 token
/** Longest `delivery.headers` value, characters (visible ASCII, space, tab). */
export const MAX_SINK_HEADER_VALUE_LENGTH = 4096;
const HEADER_VALUE = new RegExp(`^[\\x20-\\x7E\\t]{0,${MAX_SINK_HEADER_VALUE_LENGTH}}$`); // visible ASCII, space, tab; no CR/LF

const backoff = z
  .strictObject({
    /** First delay, ms. */
    initialMs: z.number().int().min(0).max(3_600_000).default(DEFAULT_PUSH_RETRY.initialMs),
    /** Growth per attempt; 1 = linear (constant delay). */
    factor: z.number().min(1).max(10).default(DEFAULT_PUSH_RETRY.factor),
    /** Largest delay, ms; also caps a sink's Retry-After. */
    maxMs: z.number().int().min(0).max(3_600_000).default(DEFAULT_PUSH_RETRY.maxMs),
    /** 0 = none … 1 = full jitter. */
    jitter: z.number().min(0).max(1).default(DEFAULT_PUSH_RETRY.jitter),
  })
  .refine((b) => b.maxMs >= b.initialMs, { message: 'maxMs must be ≥ initialMs', path: ['maxMs'] });

/** The connectors' retry shape plus `maxAgeMs` (retry budget in time) and `timeoutMs` (per attempt). */
export const retrySchema = z.strictObject({
  /** Attempts in all, the first included; then the event goes to the dead-letter topic. */
  maxAttempts: z.number().int().min(1).max(1000).default(DEFAULT_PUSH_RETRY.maxAttempts),
  backoff: backoff.prefault({}),
  /** No attempt starts more than this long after the event's first failed attempt, ms. */
  maxAgeMs: z.number().int().min(1000).max(7 * 86_400_000).default(DEFAULT_PUSH_RETRY.maxAgeMs),
  /** One attempt's deadline (connect, send, answer), ms. */
  timeoutMs: z.number().int().min(100).max(120_000).default(DEFAULT_PUSH_RETRY.timeoutMs),
});
export type RetrySettings = z.output<typeof retrySchema>;

const headerMap = z.record(z.string(), z.string()).superRefine((h, ctx) => {
  const names = Object.keys(h);
  // Distinct names (case-insensitive): a name given twice is named as such below, not counted twice.
  if (new Set(names.map((n) => n.toLowerCase())).size > 20) ctx.addIssue({ code: 'custom', message: 'at most 20 headers' });
  const seen = new Set<string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'header names are HTTP tokens (RFC 9110 §5.6.2)' });
    else if (RESERVED_HEADER.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: `${name} is set by the gateway` });
    else if (seen.has(lower)) ctx.addIssue({ code: 'custom', path: [name], message: 'the same header twice (names are case-insensitive)' });
    else if (!HEADER_VALUE.test(h[name]!)) ctx.addIssue({ code: 'custom', path: [name], message: 'header values are visible ASCII, at most 4096 characters, without CR or LF' });
    seen.add(lower);
  }
});

const secret = z.string().refine((s) => SECRET_PATTERN.test(s) && secretBytes(s) >= 24 && secretBytes(s) <= 64, 'a Standard Webhooks secret: whsec_ followed by base64 of 24–64 bytes');

/** Defaults of `delivery.batch`: 100 events, 1 MiB, no wait (send what is at hand). */
export const DEFAULT_BATCH = Object.freeze({ maxEvents: 100, maxBytes: 1_048_576, maxDelayMs: 0 });
/** Largest `concurrency`: it bounds the events in hand, so also the largest batch (`delivery.batch.maxEvents` ≤ 1000). */
export const MAX_CONCURRENCY = 1000;

/**
 * `delivery.batch` (opt-in): deliveries POSTed in the CloudEvents HTTP binding's batched content
 * mode, a JSON array of structured events. A batch holds at most `maxEvents` events, at most
 * `concurrency` (the events in hand at once), and at most `maxBytes` of body unless one event
 * alone is larger (it then goes alone). `maxDelayMs` is how long a batch waits for more events
 * after its first; 0 sends what is at hand.
 * Spec: CloudEvents HTTP binding 1.0.2 §3.3; Azure Event Grid `maxEventsPerBatch` /
 *   `preferredBatchSizeInKilobytes`; issue 8 (batchpush).
 */
export const batchSchema = z.strictObject({
  /** Most events in one request (1..1000); `concurrency` bounds it as well. */
  maxEvents: z.number().int().min(1).max(1000).default(DEFAULT_BATCH.maxEvents),
  /** Most bytes of one request body (1 KiB .. 16 MiB). */
  maxBytes: z.number().int().min(1024).max(16 * 1_048_576).default(DEFAULT_BATCH.maxBytes),
  /** Longest wait for more events after a batch's first, ms (0..1000; 0 = send what is at hand). */
  maxDelayMs: z.number().int().min(0).max(1000).default(DEFAULT_BATCH.maxDelayMs),
});
export type BatchSettings = z.output<typeof batchSchema>;

/** `delivery` of a push subscription, as a partner writes it. */
export const pushDeliverySchema = z.strictObject({
  mode: z.literal('push'),
  /**
   * The sink; checked against the webhook target rules at create time and before every attempt.
   * Stored as the WHATWG URL parser reads it (`  http:/h/x` → `http://h/x`), so what a GET shows is
   * where deliveries go; a text that does not parse is kept for the target check to refuse.
   */
  url: z
    .string()
    .min(1)
    .max(2048)
    .transform((u) => (URL.canParse(u) ? new URL(u).href : u)),
  /** CloudEvents HTTP binding content mode. */
  contentMode: z.enum(['binary', 'structured']).default('binary'),
  /** `json`: data decoded from Avro as natural JSON; `avro`: the record's Avro bytes (Confluent frame), `application/avro`. */
  data: z.enum(['json', 'avro']).default('json'),
  /** One or two Standard Webhooks secrets (two while rotating); generated when absent at create. */
  secrets: z.array(secret).min(1).max(2).optional(),
  /** Extra request headers (e.g. the sink's own `Authorization`); stored encrypted, never returned. */
  headers: headerMap.optional(),
  /** The CloudEvents webhook validation handshake before the first delivery to a new sink; false opts out. */
  handshake: z.boolean().default(true),
  /** Batched content mode (opt-in); absent = one request per event. */
  batch: batchSchema.optional(),
});
export type PushDeliveryInput = z.input<typeof pushDeliverySchema>;
export type PushDelivery = z.output<typeof pushDeliverySchema>;

/**
 * `delivery` of a pull subscription (issue 9): the partner reads with `GET …/events` or
 * `GET …/stream` and commits with `POST …/cursors`; there is no sink URL, secret or header. Events
 * are answered in the CloudEvents JSON format; `data` says how their data is written: `json` (the
 * Avro data decoded with the catalog's reader schema, `datacontenttype: application/json`) or
 * `avro` (the record's Confluent-framed Avro bytes as `data_base64`, `datacontenttype:
 * application/avro`). Choice written down in docs/subscriptions.md ("Pull delivery").
 */
export const pullDeliverySchema = z.strictObject({
  mode: z.literal('pull'),
  data: z.enum(['json', 'avro']).default('json'),
});
export type PullDelivery = z.output<typeof pullDeliverySchema>;

/** `delivery` over HTTP: push or pull, told apart by `mode`. */
export const deliverySchema = z.discriminatedUnion('mode', [pushDeliverySchema, pullDeliverySchema]);
export type Delivery = z.output<typeof deliverySchema>;

const filtersWith = (emptyExact: EmptyExact) =>
  z.array(z.unknown()).max(50).superRefine((f, ctx) => {
    for (const p of filterProblems(f, '', emptyExact)) {
      // filterProblems paths start with `[i]…`; zod wants segments relative to `filters`.
      ctx.addIssue({ code: 'custom', message: p.problem, path: splitPath(p.path) });
    }
  }).transform((f) => f as FilterExpression[]);
/** New definitions over HTTP: an empty exact value is refused (see EmptyExact). */
const filtersSchema = filtersWith('refuse');
/**
 * `filters` of a connector file: an empty exact value is taken, as in a stored definition (it
 * matches nothing): a file that started the gateway before the rule must still start it.
 */
export const fileFiltersSchema = filtersWith('allow').default([]);

/**
 * `start`: `latest`, `earliest` or an RFC 3339 instant (events written at or after it), read by the
 * one parser of src/core/rfc3339.ts (RFC 3339 §5.6); the issue names what is wrong with the time.
 */
export const startSchema = z.string().superRefine((s, ctx) => {
  if (s === 'latest' || s === 'earliest') return;
  const t = parseRfc3339Time(s);
  if (!t.ok) ctx.addIssue({ code: 'custom', message: `latest, earliest or an RFC 3339 time (e.g. ${RFC3339_EXAMPLE}; one before 1970 reads from the earliest offset): ${t.reason}` });
});

/** Kinds per subscription at most. */
export const MAX_KINDS = 100;
const kindsSchema = z.array(z.string().regex(/^[A-Za-z0-9._-]{1,200}$/, 'an event kind: business name or eventId')).min(1, 'at least one event kind').max(MAX_KINDS);

/** Fields every subscription has, whatever its delivery. */
export const commonFields = {
  name: z.string().regex(NAME_PATTERN, '1–100 characters of [A-Za-z0-9_-], starting with a letter or digit'),
  kinds: kindsSchema,
  filters: filtersSchema.default([]),
  start: startSchema.default('latest'),
  ordering: z.enum(['key', 'none']).default('key'),
  retry: retrySchema.prefault({}),
  /** Deliveries in hand at once per gateway instance (by key: each partition one at a time); also the most events of one batch. */
  concurrency: z.number().int().min(1).max(MAX_CONCURRENCY).default(4),
  /** Most events per second to the sink, over all instances (each takes its share); null = no limit. */
  rateLimit: z.number().positive().max(100_000).nullable().default(null),
  state: z.enum(['active', 'paused']).default('active'),
};

/** `POST /subscriptions` body (push or pull delivery; other modes are refused with a reason by {@link deliveryModeProblem}). */
export const createSchema = z.strictObject({ ...commonFields, delivery: deliverySchema });
export type CreateInput = z.input<typeof createSchema>;
export type CreateRequest = z.output<typeof createSchema>;

/** Why a `delivery.mode` other than push or pull is refused over HTTP, or undefined. */
export function deliveryModeProblem(mode: unknown): string | undefined {
  if (mode === 'push' || mode === 'pull' || mode === undefined) return undefined;
  if (mode === 'shell-hook' || mode === 'file-drop') return `${String(mode)} sinks run on the gateway's host and are declared only in connector files`;
  return 'delivery.mode is push or pull';
}

/** `a.b[0].c` or `[0].exact.x` → path segments. */
function splitPath(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of path.matchAll(/\[(\d+)\]|\.?([^.[\]]+)/g)) out.push(m[1] !== undefined ? Number(m[1]) : m[2]!);
  return out;
}

/** A zod issue path as `delivery.url`, `filters[0].exact.subjet`; `body` for the document itself. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : `${out === '' ? '' : '.'}${String(seg)}`;
  return out === '' ? 'body' : out;
}
