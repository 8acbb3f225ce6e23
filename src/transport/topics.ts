import { GatewayError, isGatewayError } from '../core/errors.js';
import { assertTopicName } from '../core/topic-name.js';
import type { GroupDescription, GroupSpec, TopicSpec } from './port.js';

/** Kafka's default `max.message.bytes` (bytes) when a topic spec gives none. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/**
 * Checks one topic spec before any adapter acts on it; reports every problem at once.
 * Errors: `CEG_INVALID_NAME` (retriable: false) for an illegal name; `CEG_INVALID_OPTIONS`
 *   (retriable: false) for partitions < 1, retention < −1 or a non-positive `maxMessageBytes`.
 * Spec: the topic-name rule of `core/topic-name.ts` (Kafka `Topic.validate`, no `__` prefix).
 */
export function checkTopicSpec(spec: TopicSpec): void {
  assertTopicName(spec.name);
  const problems = [
    !(Number.isInteger(spec.partitions) && spec.partitions >= 1) && 'partitions: integer ≥ 1',
    !(Number.isInteger(spec.retentionMs) && spec.retentionMs >= -1) && 'retentionMs: integer ms ≥ −1',
    !['delete', 'compact', 'compact,delete'].includes(spec.cleanupPolicy) && 'cleanupPolicy: delete | compact | compact,delete',
    spec.maxMessageBytes !== undefined && !(Number.isInteger(spec.maxMessageBytes) && spec.maxMessageBytes > 0) && 'maxMessageBytes: integer bytes > 0',
  ].filter((p): p is string => typeof p === 'string');
  if (problems.length > 0) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `topic ${spec.name}: ${problems.join('; ')}`, {
      retriable: false,
      details: { topic: spec.name, problems },
    });
  }
}

/** The error for a topic that does not exist (topics are never auto-created); `details.topicMissing` says so ({@link topicMissing}). */
export function unknownTopic(topic: string): GatewayError {
  return new GatewayError('CEG_INVALID_NAME', `unknown topic ${topic} (topics are not auto-created; ensureTopics first)`, {
    retriable: false,
    details: { topic, topicMissing: true },
  });
}

/**
 * Whether `err` says that a topic does not exist: the transports' CEG_INVALID_NAME with
 * `details.topicMissing: true` (Kafka UNKNOWN_TOPIC_OR_PARTITION on both clients, the memory
 * transport's unknown topic), or CEG_UNKNOWN_TOPIC (the outbox relay's). Not a name the charset
 * rule refuses, which is CEG_INVALID_NAME too. Pure.
 */
export function topicMissing(err: unknown): boolean {
  return isGatewayError(err) && (err.code === 'CEG_UNKNOWN_TOPIC' || (err.code === 'CEG_INVALID_NAME' && err.details.topicMissing === true));
}

/** The error for a transport used after close(). */
export function closedTransport(kind: string): GatewayError {
  return new GatewayError('CEG_CLOSED', `${kind} transport is closed`, { retriable: false, details: { transport: kind } });
}

/**
 * The error for a produce the caller stopped waiting for.
 * `indeterminate`: true when the records may still land (the send was already under way).
 */
export function abortedProduce(topic: string, indeterminate: boolean, cause?: unknown): GatewayError {
  return new GatewayError('CEG_DELIVERY_TIMEOUT', `produce to ${topic} aborted by the caller${indeterminate ? ' (records may still land)' : ''}`, {
    retriable: true,
    cause,
    details: { topic, indeterminate },
  });
}

/**
 * The error for an offset reset on a group that still has members.
 * Errors: `CEG_INVALID_OPTIONS` (retriable: true — it succeeds once the members have stopped).
 */
export function groupBusy(group: string, topic: string, state: string): GatewayError {
  return new GatewayError('CEG_INVALID_OPTIONS', `group ${group} is ${state}; stop its members before resetting offsets`, {
    retriable: true,
    details: { group, topic, state },
  });
}

/**
 * Checks offsets to commit against a topic of `count` partitions.
 * Errors: `CEG_INVALID_OPTIONS` (not retriable) naming the partition outside the topic or the negative offset.
 */
export function checkCommitOffsets(topic: string, count: number, offsets: readonly { readonly partition: number; readonly offset: bigint }[]): void {
  for (const o of offsets) {
    if (!Number.isInteger(o.partition) || o.partition < 0 || o.partition >= count || o.offset < 0n) {
      throw new GatewayError('CEG_INVALID_OPTIONS', `offset target ${o.partition}/${o.offset} is outside topic ${topic}`, {
        retriable: false,
        details: { topic, partition: o.partition, offset: o.offset.toString() },
      });
    }
  }
}

/**
 * Checks a group spec before an adapter joins the group.
 * Errors: `CEG_INVALID_OPTIONS` (not retriable) naming `group` (empty) or `topics` (none).
 */
export function checkGroupSpec(spec: Pick<GroupSpec, 'group' | 'topics'>): void {
  if (spec.group.length === 0) {
    throw new GatewayError('CEG_INVALID_OPTIONS', 'group: non-empty name required', { retriable: false, details: { field: 'group' } });
  }
  if (spec.topics.length === 0) {
    throw new GatewayError('CEG_INVALID_OPTIONS', 'topics: at least one topic required', { retriable: false, details: { field: 'topics', group: spec.group } });
  }
}

/** Kafka's spelling of the classic group states, keyed by upper case without separators (@platformatic/kafka upper-cases them). */
const GROUP_STATES = new Map(['Stable', 'PreparingRebalance', 'CompletingRebalance', 'Empty', 'Dead'].map((s) => [s.toUpperCase(), s]));

/**
 * A DescribeGroups answer as the port gives it ({@link GroupDescription}): undefined when no member
 * is joined, else the state in Kafka's spelling ('Stable'…; a state it does not know as given) and
 * the member count.
 */
export function describedGroup(state: string | undefined, members: number): GroupDescription | undefined {
  if (!(members > 0)) return undefined;
  const s = state ?? 'Unknown';
  return Object.freeze({ state: GROUP_STATES.get(s.toUpperCase().replace(/[_\s-]/g, '')) ?? s, members });
}

/**
 * The error of a read-only broker request (offsets, metadata, a group description, the admin's
 * connect), or of an offset commit: a timeout there loses no event and leaves no event's fate
 * indeterminate (a commit is idempotent: committing again is safe), so the adapters'
 * CEG_DELIVERY_TIMEOUT ("Event not confirmed in time", a write's) becomes CEG_BROKER_UNAVAILABLE,
 * retriable; every other error stays as it is.
 */
export function readFailure(err: GatewayError): GatewayError {
  if (err.code !== 'CEG_DELIVERY_TIMEOUT') return err;
  return new GatewayError('CEG_BROKER_UNAVAILABLE', err.message, { retriable: true, cause: err.cause ?? err, details: err.details });
}

/**
 * Whether `topic` exists, asked through `lookup.partitionCount` (a transport, or anything that
 * answers like one): false when the lookup says the topic is missing ({@link topicMissing}).
 * Errors: any other failure of the lookup, thrown as it came — a broker outage, and a name the
 * topic-name rule refuses (CEG_INVALID_NAME without `details.topicMissing`, not retriable): such a
 * name is a caller's mistake, not a topic that is not there yet (until 2026-12-07 it was `false`).
 */
export async function topicExists(lookup: { partitionCount(topic: string): Promise<number> }, topic: string): Promise<boolean> {
  try {
    await lookup.partitionCount(topic);
    return true;
  } catch (err) {
    if (topicMissing(err)) return false;
    throw err;
  }
}
