/**
 * Which failed offset commits are routine. A commit refused because the group moved on — a
 * rebalance, a new generation, a member id the coordinator forgot, a coordinator that moved or is
 * still loading — loses nothing: the group's next generation fetches from the last commit that
 * went through and the consumer's next commit carries the offsets (Kafka protocol, OffsetCommit
 * error codes). Such a failure is logged at debug; any other (authorization, a too-large
 * metadata) at warn.
 */
import { errorTree } from '../core/error-tree.js';

/** Kafka protocol error names that say the group moved on. */
const GROUP_MOVED_ON: ReadonlySet<string> = new Set([
  'ILLEGAL_GENERATION', 'REBALANCE_IN_PROGRESS', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID',
  'NOT_COORDINATOR', 'COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_LOAD_IN_PROGRESS',
]);

/**
 * true when any error of `err`'s cause tree carries one of those protocol error names: kafkajs's
 * `type` (also wrapped by its retrier in `KafkaJSNonRetriableError` / `KafkaJSNumberOfRetriesExceeded`)
 * or @platformatic/kafka's `apiId`. Never throws.
 */
export function isRoutineCommitFailure(err: unknown): boolean {
  return errorTree(err).some((e) => [e.type, e.apiId].some((name) => typeof name === 'string' && GROUP_MOVED_ON.has(name)));
}
