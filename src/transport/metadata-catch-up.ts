/**
 * How long the Kafka adapters ask the broker again while its answer lags behind a change an
 * operator just made: partitions added by `kafka-topics --alter --partitions` show in the metadata
 * a broker answers with a moment after the request that added them returned, and the broker leads
 * them a moment after that (ListOffsets answers NOT_LEADER_OR_FOLLOWER meanwhile). Seen on the
 * stack: a count of 2 asked right after growing a topic to 4; a member started then failed.
 * Java's clients wait for such metadata (a producer up to `max.block.ms`, 60 s) and retry such
 * answers; shorter here, since a partition beyond the topic is mostly a client's mistake whose
 * error should come soon.
 */
import { retryPolicy } from '../core/retry.js';
import type { RetryPolicy } from '../core/retry.js';

/** Six asks, 100, 200, 400, 800 and 1,600 ms apart (about 3.1 s in all), no jitter. For core/retrying. */
export const METADATA_CATCH_UP: RetryPolicy = retryPolicy({ maxAttempts: 6, initialDelayMs: 100, factor: 2, maxDelayMs: 1_600, jitter: 0 });

/**
 * How many asks of {@link METADATA_CATCH_UP} fit in `withinMs` (its own six at least): its delays
 * (the last one, 1,600 ms, repeated) for a wait bounded by a time rather than by the policy's
 * ~3.1 s — a topic just created is the broker's to lead, not a client's mistake, so waiting for it
 * is bounded by the request timeout. `withinMs`: ms, ≥ 0 (0 or less: the policy's own six).
 */
export function metadataCatchUpAsks(withinMs: number): number {
  let asks = 1;
  let waited = 0;
  while (asks < METADATA_CATCH_UP.maxAttempts || waited + METADATA_CATCH_UP.delayMs(asks) <= withinMs) {
    waited += METADATA_CATCH_UP.delayMs(asks);
    asks++;
  }
  return asks;
}
