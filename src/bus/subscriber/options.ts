/**
 * The checks a subscribe call's options pass before anything is created (topics, group member):
 * a library user's mistake — a timeout no timer can hold, a window of 0, a string where an array
 * of kinds is expected — is refused at once, naming the option, instead of misbehaving later
 * (every success retried five times and dead-lettered; deduplication silently off).
 */
import { z } from 'zod';
import { GatewayError } from '../../core/errors.js';
import { schemaIssues } from '../../core/schema-issues.js';
import { MAX_WINDOW_MS } from '../idempotency/port.js';
import { repeatedKind, repeatedKindReason } from '../../catalog/lookup.js';
import type { Catalog } from '../../catalog/types.js';

import { MAX_TIMER_MS } from '../../core/timer-limit.js';

export { MAX_TIMER_MS };

const isFunction = (v: unknown): boolean => typeof v === 'function';
const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null;
const intMs = (min: number, max = MAX_TIMER_MS) => z.number().int().min(min).max(max);

/**
 * Only the options whose wrong values did harm are described; the others (instruments, tracing,
 * startAt, filters and inFlightPerPartition — checked where they are used) pass as they are
 * (`looseObject`).
 */
const subscribeOptionsSchema = z.looseObject({
  subscription: z.string().min(1, 'a non-empty name (the consumer group id)'),
  kinds: z.array(z.string()).min(1, 'at least one event kind'),
  heldKinds: z.array(z.string()).optional(),
  handler: z.custom<unknown>(isFunction, 'a function (event, ctx) returning a Promise'),
  startFrom: z.enum(['latest', 'earliest']).optional(),
  retry: z.looseObject({
    maxAttempts: z.number().int().min(1),
    delayMs: z.custom<unknown>(isFunction, 'a function (attempt) → ms (a RetryPolicy, see retryPolicy())'),
  }),
  ordering: z.enum(['key', 'none']).optional(),
  readRetryTopic: z.boolean().optional(),
  instanceId: z.string().min(1).optional(),
  idempotency: z
    .looseObject({
      store: z.custom<unknown>(isObject, 'an IdempotencyStore'),
      windowMs: intMs(1, MAX_WINDOW_MS),
      scope: z.string().min(1).optional(),
    })
    .optional(),
  // Infinity: no bound (z.number() refuses it, so a custom check).
  handlerTimeoutMs: z.custom<number>((v) => v === Infinity || (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_TIMER_MS), `an integer number of ms from 1 to ${MAX_TIMER_MS}, or Infinity (no bound)`).optional(),
  limits: z.looseObject({ maxAttributes: z.number().int().min(1), maxAttributeBytes: z.number().int().min(1) }).optional(),
  commitEveryRecords: z.number().int().min(1).optional(),
  commitIntervalMs: intMs(1).optional(),
  stopTimeoutMs: intMs(0).optional(),
  fetchLingerMs: intMs(0).optional(),
  createTopics: z.boolean().optional(),
  maxAgeMs: z.number().int().min(1).optional(),
  partitionsConcurrently: z.number().int().min(1).max(1000).optional(),
  correlationContext: z.boolean().optional(),
});

/**
 * Checks the options of `subscribe()` before it creates anything.
 * Errors: CEG_INVALID_OPTIONS (retriable: false) naming every bad option: `details.field` the
 *   first one's path (`handlerTimeoutMs`, `idempotency.windowMs`, `kinds`), `details.violations`
 *   all of them (`{ field, reason }`). Bounds: timers hold at most 2^31 − 1 ms (Node's limit),
 *   `idempotency.windowMs` 1 ms to 10 years (the stores' bound), `partitionsConcurrently` 1–1000.
 */
export function assertSubscribeOptions(o: unknown): void {
  const parsed = subscribeOptionsSchema.safeParse(o);
  if (parsed.success) return;
  const violations = schemaIssues(parsed.error.issues).map((i) => ({ field: i.path.map(String).join('.') || 'options', reason: i.message }));
  throw new GatewayError('CEG_INVALID_OPTIONS', `subscribe options: ${violations.map((v) => `${v.field}: ${v.reason}`).join('; ')}`, {
    retriable: false,
    details: { field: violations[0]!.field, violations },
  });
}

/**
 * Refuses a `kinds` list that names one kind twice (the same text, or a business name and its
 * eventId), as `POST /subscriptions` (400 naming `kinds[i]`) and the CLI (`subscribe --kind`,
 * `tail`) do: the repeat was taken as one kind, so a slip for another kind went unnoticed.
 * Unknown kinds are left to the subscriber (CEG_UNKNOWN_TYPE). Pure; runs before anything connects.
 * Used by the library's entries (`Bus.subscribe`, `Gateway.subscribe`); not by the reconciler,
 * whose stored subscriptions may predate the rule, nor connector files (warned on by `connectors
 * check`, started with each kind once).
 * Errors: CEG_INVALID_OPTIONS (retriable: false), `details.field` `kinds[i]` of the later entry,
 *   `details.first` the earlier entry's index.
 */
export function assertKindsOnce(catalog: Pick<Catalog, 'byEventId' | 'byName'>, kinds: readonly string[]): void {
  const err = repeatedKindError(catalog, kinds);
  if (err !== undefined) throw err;
}

/** {@link assertKindsOnce}'s error, returned instead of thrown (for a caller answering with a rejected promise); undefined when each kind is named once. */
export function repeatedKindError(catalog: Pick<Catalog, 'byEventId' | 'byName'>, kinds: readonly string[]): GatewayError | undefined {
  const r = repeatedKind(catalog, kinds);
  if (r === undefined) return undefined;
  return new GatewayError('CEG_INVALID_OPTIONS', `kinds[${r.index}]: ${repeatedKindReason(kinds, r)}`, {
    retriable: false,
    details: { field: `kinds[${r.index}]`, first: r.first },
  });
}
