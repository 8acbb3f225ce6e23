/**
 * A subscription as it is stored on the definitions topic: the resource with defaults applied, its
 * group, its timestamps and generation, and its secrets (webhook secrets, sink headers) sealed.
 * What every gateway instance reads back and runs. The schema is checked when a record is read:
 * a record that does not fit is logged and ignored, never run half-understood.
 */
import { z } from 'zod';
import type { FilterExpression } from '../subscriber/pipeline/dialects.js';
import { NAME_PATTERN, batchSchema, retrySchema, states } from './model.js';
import type { BatchSettings, RetrySettings, SubscriptionState } from './model.js';
import { storedReplaySchema } from './replay/state.js';
import type { StoredReplay } from './replay/state.js';
import { schemaIssues } from '../../core/schema-issues.js';
import type { TopicPartitionOffset } from '../../transport/port.js';

/** Push delivery as stored: the secrets sealed, only their count and the header names in the clear. */
export interface StoredPushDelivery {
  readonly mode: 'push';
  /**
   * The webhook URL; in a record of version 2 with the values of secret-looking query parameters
   * masked (`?token=***`, core/public-url maskedUrl) and the URL itself in `sealed`: a credential
   * a sink expects in its query is a secret like a sink header (break report 2026-12-06).
   */
  readonly url: string;
  readonly contentMode: 'binary' | 'structured';
  readonly data: 'json' | 'avro';
  readonly handshake: boolean;
  /** Batched content mode; absent = one request per event (and in every record written before batches existed). */
  readonly batch?: BatchSettings;
  /** How many webhook secrets are sealed (1 or 2). */
  readonly secretCount: number;
  /** Names of the extra request headers (their values are sealed). */
  readonly headerNames: readonly string[];
  /** `{ secrets, headers }` (version 2: `{ secrets, headers, url }`), sealed (see secrets.ts). */
  readonly sealed: string;
}

/**
 * Pull delivery as stored (issue 9): nothing secret. Records written before pull existed all have
 * push delivery and load unchanged; a gateway older than pull ignores a pull record (its schema
 * knows only push), so it never runs one as a webhook.
 */
export interface StoredPullDelivery {
  readonly mode: 'pull';
  readonly data: 'json' | 'avro';
}

export interface StoredSubscription {
  /**
   * 1; 2 when `delivery.url` is stored masked and sealed. A gateway older than version 2 ignores
   * such a record (its schema knows only 1: "record ignored" in its log), so it never delivers with
   * the masked URL; it keeps running the definition it had.
   */
  readonly v: 1 | 2;
  readonly name: string;
  readonly owner: string;
  /** `ce-gateway.sub.<owner>.<name>`: the consumer group and the record key. */
  readonly group: string;
  readonly kinds: readonly string[];
  readonly filters: readonly FilterExpression[];
  /** As requested at create (`latest`, `earliest`, an RFC 3339 time); resolved then, kept for display. */
  readonly start: string;
  readonly ordering: 'key' | 'none';
  readonly retry: RetrySettings;
  readonly concurrency: number;
  readonly rateLimit: number | null;
  readonly state: SubscriptionState;
  /** Why the gateway set the state (`gone`: the sink's 410 answer). */
  readonly stateReason?: string;
  readonly delivery: StoredPushDelivery | StoredPullDelivery;
  /** RFC 3339 UTC. */
  readonly createdAt: string;
  readonly updatedAt: string;
  /** 1 at create, +1 on every change. */
  readonly generation: number;
  /** The last replay's state (issue 9): while it pauses the subscription, no instance delivers it. */
  readonly replay?: StoredReplay;
  /**
   * Start positions of topics added by PATCH (a kind added to a push subscription): per partition
   * that had no committed offset then, the offset the group starts at, resolved when the PATCH was
   * taken (`latest`: the end offset then). The members take them (`GroupSpec.startAt`) for a
   * partition still without a commit when they are assigned it; a commit always wins. Offsets as
   * decimal strings; absent = none (every record written before this field existed).
   */
  readonly startAt?: readonly StoredStartAt[];
}

/** One partition's start position as stored ({@link StoredSubscription.startAt}). */
export interface StoredStartAt {
  readonly topic: string;
  readonly partition: number;
  /** Record offset, a decimal string (JSON has no 64-bit integers). */
  readonly offset: string;
  /**
   * When it was resolved (RFC 3339, UTC); members take it for {@link START_AT_TTL_MS} after that.
   * Absent only in entries of the first version of `startAt`: they count as expired ({@link liveStartAt}).
   */
  readonly takenAt?: string;
}

/**
 * How long a stored start position is taken, ms (24 h). Only the first member after the PATCH
 * needs it (one starts within seconds: a partition without a commit counts as work), and it
 * commits it at once. Later, a partition may lack a commit again (Kafka expires a group's offsets
 * after `offsets.retention.minutes` without commits): then the documented rule for a partition
 * without a commit applies, not a position from the day of the PATCH.
 */
export const START_AT_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The start positions that are still taken at `nowMs` (epoch ms): those resolved less than
 * {@link START_AT_TTL_MS} before it, in their order. The one rule for every reader: the PATCH that
 * keeps stored entries (service.ts), the members a reconciler starts (reconciler.ts), the status
 * and the replay dry run that show where a group without a commit starts. An entry is timed by
 * `takenAtMs` (epoch ms, as handed to members) or else `takenAt` (RFC 3339, as stored).
 *
 * An entry with no time, or a time that does not parse, counts as expired. Every writer has set
 * `takenAt` since the TTL came in (c050d52, 23 minutes after 5f46f4e brought `startAt`, with no
 * release in between); only that first commit wrote entries without it, and so long after, their
 * members have started and committed those positions (a member starts within seconds of the PATCH
 * and commits them at once). Taking them for ever would be the very fault the TTL fixes: a
 * partition whose commits Kafka expired would go back to the day of that PATCH.
 */
export function liveStartAt<T extends { readonly topic: string; readonly takenAt?: string | undefined; readonly takenAtMs?: number | undefined }>(entries: readonly T[] | undefined, nowMs: number): T[] {
  return (entries ?? []).filter((p) => {
    const at = p.takenAtMs ?? (p.takenAt === undefined ? Number.NaN : Date.parse(p.takenAt));
    return nowMs - at < START_AT_TTL_MS; // NaN (no time, or none that parses): false, expired
  });
}

/**
 * Where the group of `s` starts on partitions it has no commit on yet, as far as its definition
 * says: its live {@link liveStartAt} entries as offsets (none for a record without `startAt`).
 * What the status's lag and a replay's `from` count from on such a partition.
 */
export function startPositionsOf(s: Pick<StoredSubscription, 'startAt'> | undefined, nowMs: number): TopicPartitionOffset[] {
  return liveStartAt(s?.startAt, nowMs).map((p) => ({ topic: p.topic, partition: p.partition, offset: BigInt(p.offset) }));
}

const storedSchema = z.object({
  v: z.union([z.literal(1), z.literal(2)]),
  name: z.string().regex(NAME_PATTERN),
  owner: z.string().regex(NAME_PATTERN),
  group: z.string().min(1),
  kinds: z.array(z.string()).min(1),
  filters: z.array(z.unknown()),
  start: z.string(),
  ordering: z.enum(['key', 'none']),
  retry: retrySchema,
  concurrency: z.number().int().min(1),
  rateLimit: z.number().positive().nullable(),
  state: z.enum(states),
  stateReason: z.string().optional(),
  delivery: z.discriminatedUnion('mode', [
    z.object({
      mode: z.literal('push'),
      url: z.string(),
      contentMode: z.enum(['binary', 'structured']),
      data: z.enum(['json', 'avro']),
      handshake: z.boolean(),
      batch: batchSchema.optional(),
      secretCount: z.number().int().min(0).max(2),
      headerNames: z.array(z.string()),
      sealed: z.string(),
    }),
    z.object({ mode: z.literal('pull'), data: z.enum(['json', 'avro']) }),
  ]),
  createdAt: z.string(),
  updatedAt: z.string(),
  generation: z.number().int().min(1),
  replay: storedReplaySchema.optional(),
  startAt: z.array(z.object({ topic: z.string().min(1), partition: z.number().int().min(0), offset: z.string().regex(/^\d{1,19}$/), takenAt: z.string().optional() })).optional(),
});

/** The stored subscription in a record value, or the reason it is not one. */
export function parseStored(json: unknown): { ok: true; value: StoredSubscription } | { ok: false; reason: string } {
  const r = storedSchema.safeParse(json);
  if (!r.success) return { ok: false, reason: schemaIssues(r.error.issues).slice(0, 5).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  return { ok: true, value: r.data as StoredSubscription };
}
