/**
 * Which failed offset commits are routine. A commit refused because the group moved on — a
 * rebalance, a new generation, a member id the coordinator forgot, a coordinator that moved or is
 * still loading — loses nothing: the group's next generation fetches from the last commit that
 * went through and the consumer's next commit carries the offsets (Kafka protocol, OffsetCommit
 * error codes). Such a failure is logged at debug; any other (authorization, a too-large
 * metadata) at warn.
 */
import { errorTree } from '../core/error-tree.js';
import type { GatewayError } from '../core/errors.js';
import { groupBusy, readFailure } from './topics.js';

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

/**
 * Kafka protocol error names with which the coordinator refuses a member-less commit (generation
 * -1, no member id) because the group has members after all: a member joined between the group's
 * DescribeGroups (which said Empty) and the OffsetCommit. Both clients call them non-retriable, as
 * they are for a member's own commit; for a member-less commit they mean "the group is busy", the
 * same as a DescribeGroups that names members.
 */
const GROUP_HAS_MEMBERS: ReadonlySet<string> = new Set(['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'REBALANCE_IN_PROGRESS', 'FENCED_INSTANCE_ID']);

/**
 * The protocol error name (`UNKNOWN_MEMBER_ID`, …) when `err` is a member-less commit refused
 * because the group has members now, else undefined. Never throws.
 */
export function membersRefusedCommit(err: unknown): string | undefined {
  for (const e of errorTree(err)) {
    for (const name of [e.type, e.apiId]) if (typeof name === 'string' && GROUP_HAS_MEMBERS.has(name)) return name;
  }
  return undefined;
}

/**
 * What a member-less commit of `group`'s offsets on `topic` (`Transport.commitOffsets`) that
 * failed with the client's `err` throws: the retriable "group busy" CEG_INVALID_OPTIONS when the
 * broker refused it because the group has members now (see {@link membersRefusedCommit}) — a
 * replay waiting for the group to empty then asks again (bus/subscriptions/replay/reset.ts), where
 * it answered 503 with `retriable: false` before; else the client's error as `fromClient` maps it
 * (a timeout as the retriable CEG_BROKER_UNAVAILABLE, transport/topics.ts readFailure).
 */
export function commitOffsetsFailure(err: unknown, group: string, topic: string, fromClient: (err: unknown) => GatewayError): GatewayError {
  const refused = membersRefusedCommit(err);
  if (refused !== undefined) return groupBusy(group, topic, `joined by a member meanwhile (the broker refused the member-less commit: ${refused})`);
  return readFailure(fromClient(err));
}
