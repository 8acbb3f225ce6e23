/**
 * Confirms that topics a CreateTopics just answered for — created by this call or, a moment
 * before, by another client ("topic already exists") — show in the broker's metadata with a
 * leader on every partition. A broker answers CreateTopics before its metadata lists the topic
 * (a KRaft broker answers UNKNOWN_TOPIC_OR_PARTITION for a moment) and before it leads the new
 * partitions (leader -1, LEADER_NOT_AVAILABLE): a produce, an offset look-up or a member started
 * then would fail. Both Kafka adapters' `ensureTopics` end here, whichever way the topic came to be.
 * Spec: the port's `ensureTopics` ("resolves once the topics can be produced to and read").
 */
import { GatewayError } from '../core/errors.js';
import { retrying } from '../core/retrying.js';
import { METADATA_CATCH_UP, metadataCatchUpAsks } from './metadata-catch-up.js';

/**
 * One metadata answer: per topic asked, the leader's node id of each partition in partition order
 * (-1: none yet), or undefined when the answer does not list the topic.
 */
export type TopicLeaders = ReadonlyMap<string, readonly number[] | undefined>;

/** Options of {@link confirmTopicLeaders}. */
export interface ConfirmTopicLeadersOptions {
  /** How long the broker's answer may lag, ms (the adapters: their request timeout); asked as {@link METADATA_CATCH_UP} says, over about this long. */
  readonly withinMs: number;
  /** Whether a failed look-up is the broker's lag (unknown topic, no leader yet) rather than a failure of its own. */
  readonly lagging: (err: unknown) => boolean;
}

/** A look-up whose answer lacks a topic or a leader (kept inside; never thrown out of here). */
class NotConfirmed extends Error {
  constructor() {
    super('not every partition has a leader yet');
  }
}

/** Whether one topic's answer shows it with at least one partition, each with a leader. */
function led(leaders: readonly number[] | undefined): boolean {
  return leaders !== undefined && leaders.length > 0 && leaders.every((l) => l >= 0);
}

/**
 * Resolves once `lookUp` has shown every topic of `topics` with a leader on every partition
 * (each topic confirmed once is not asked again). Asks again while the answer lacks a topic or a
 * leader, or fails as `o.lagging` says: {@link METADATA_CATCH_UP}'s delays, about `o.withinMs`
 * in all (through core/retrying, as every retry loop of the project).
 * Errors: CEG_BROKER_UNAVAILABLE (retriable: true; `details.topics`: the topics still not
 *   confirmed, `details.leadersNotConfirmed`: true; no `details.reason`, which marks the
 *   not-retriable ones: docs/errors.md) when they never show so;
 *   `lookUp`'s own failure, as thrown, when `o.lagging` does not call it lag.
 */
export async function confirmTopicLeaders(topics: readonly string[], lookUp: (topics: readonly string[]) => Promise<TopicLeaders>, o: ConfirmTopicLeadersOptions): Promise<void> {
  let unconfirmed = [...new Set(topics)];
  if (unconfirmed.length === 0) return;
  const asks = metadataCatchUpAsks(o.withinMs);
  try {
    await retrying(
      async () => {
        const answer = await lookUp(unconfirmed);
        unconfirmed = unconfirmed.filter((t) => !led(answer.get(t)));
        if (unconfirmed.length > 0) throw new NotConfirmed();
      },
      { policy: METADATA_CATCH_UP, maxAttempts: asks, classify: (err) => err instanceof NotConfirmed || o.lagging(err) },
    );
  } catch (err) {
    if (!(err instanceof NotConfirmed) && !o.lagging(err)) throw err;
    throw new GatewayError(
      'CEG_BROKER_UNAVAILABLE',
      `ensureTopics: the broker's metadata does not show ${unconfirmed.length === 1 ? 'topic' : 'topics'} ${unconfirmed.join(', ')} with a leader on every partition (asked ${asks} times over about ${Math.round(o.withinMs / 1000)} s after CreateTopics answered)`,
      { retriable: true, ...(err instanceof NotConfirmed ? {} : { cause: err }), details: { operation: 'ensureTopics', topics: unconfirmed, leadersNotConfirmed: true } },
    );
  }
}
