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
