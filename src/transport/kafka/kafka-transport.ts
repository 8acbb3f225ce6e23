import { OffsetResetCounts, outOfRangeReset, outOfRangeWarning } from '../out-of-range.js';
import { kafkajs } from './kafkajs.js';
import type { CompressionTypes, Kafka } from './kafkajs.js';
import { startKafkaRead } from './read.js';
import type { ReadOffsetLookups } from './read.js';
import type { Admin, ConfigResourceTypes, Message, Producer, SASLOptions } from 'kafkajs';
import { errorMessage, GatewayError } from '../../core/errors.js';
import { PartitionRouter } from '../partition-router.js';
import { commitOffsetsFailure } from '../commit-failure.js';
import { KnownTopics } from '../known-topics.js';
import { isAborted } from '../await.js';
import type {
  Read,
  ReadSpec,
  TransportRecord,
  CommittedOffset, Consumption, GroupDescription, GroupSpec, OffsetQuery, OffsetTarget, OutboundRecord, PartitionOffset, Position, ProduceOptions,
  HealthFailure, RecordHandler, TopicSpec, Transport,
} from '../port.js';
import { assertNoCollision, assertTopicName, invalidTopicRefusal } from '../../core/topic-name.js';
import { raceAbort } from '../../core/race-abort.js';
import { sleep } from '../../core/retry.js';
import { retrying } from '../../core/retrying.js';
import { METADATA_CATCH_UP } from '../metadata-catch-up.js';
import { confirmTopicLeaders } from '../topic-leaders.js';
import type { TopicLeaders } from '../topic-leaders.js';
import { abortedProduce, checkCommitOffsets, checkGroupSpec, checkTopicSpec, closedTransport, describedGroup, groupBusy, readFailure } from '../topics.js';
import { KafkaConsumption } from './consumption.js';
import { TopicSetConsumption } from './missing-topics.js';
import { OffsetCommitter } from './commit-offsets.js';
import { coordinatorUnavailable, fromKafkaError, kafkaErrorTypes } from './errors.js';
import { whileCoordinatorLoads } from '../coordinator-wait.js';
import type { CoordinatorWaitOptions } from '../coordinator-wait.js';
import { toKafkaHeaders } from './headers.js';
import { kafkaLogCreator, toKafkaLogLevel } from './logging.js';
import type { KafkaLogTaps } from './logging.js';
import { BROKER_STALL_MS, BrokerOutage, brokerAnswers, checkBrokerHealth } from './outage.js';
import type { KafkaTransportInput, KafkaTransportOptions } from './options.js';
import { resolveKafkaTransportOptions } from './options.js';
import { SESSION_BOUND_NAMES, sessionBounds, tightestBounds } from '../session-bounds.js';
import { listOffsetsTime } from '../timestamps.js';

// The Kafka protocol's resource type of a topic in DescribeConfigs (kafkajs ConfigResourceTypes.TOPIC).
const TOPIC_RESOURCE = 2 as ConfigResourceTypes;
// … and of a broker (kafkajs ConfigResourceTypes.BROKER).
const BROKER_RESOURCE = 4 as ConfigResourceTypes;

const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;
const buf = (b: Uint8Array | null): Buffer | null => (b === null ? null : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/** Group states in which no member is joined (kafkajs / Kafka DescribeGroups). */
const IDLE_GROUP_STATES = new Set(['Empty', 'Dead']);

/**
 * The Kafka transport (the only kafkajs user). Options are validated here, once
 * (see {@link resolveKafkaTransportOptions}); connections open lazily on first use.
 * - Producer: idempotent, `maxInFlightRequests: 1`, `acks: -1` (all) on every send, no
 *   compression, no topic auto-creation. Keyed records get their partition from the
 *   Java-compatible murmur2 partitioner here (so the memory transport and Java producers agree);
 *   null keys without a partition go round-robin per topic. Producer retries are bounded
 *   (`retries`), so a send fails instead of hanging; kafkajs warns that this may weaken its
 *   idempotence guarantee — the bus dedups by source+id anyway (DESIGN "Known traps"). After a
 *   send that failed without a definite refusal, the next send uses a new producer id (issue 14:
 *   the broker may have written the failed one; reused sequence numbers would make the next batch
 *   a "duplicate", acknowledged but not written).
 * - Consumers: one kafkajs consumer per `consume()` ({@link KafkaConsumption}); a new one on the
 *   topics that exist when one it reads is deleted ({@link TopicSetConsumption}).
 * - Admin: topic creation with configs and `waitForLeaders`, end offsets, offset resets, group descriptions.
 * Errors: GatewayError mapped by `fromKafkaError` (CEG_BROKER_UNAVAILABLE / CEG_DELIVERY_TIMEOUT
 *   retriable; CEG_INVALID_NAME for an unknown topic; CEG_CLOSED after close()).
 * Spec: DESIGN "Kafka mapping" (idempotent producer, acks=all), "Delivery" (groups), "Known traps".
 */
export function createKafkaTransport(input: KafkaTransportInput): Transport {
  return new KafkaTransport(resolveKafkaTransportOptions(input));
}

/** How often a topic offset look-up that met kafkajs's metadata race is tried in all ({@link isMetadataRace}). */
const METADATA_RACE_TRIES = 4;
/**
 * Kafka's answers that a partition's leader is not where the client's metadata says, or not ready:
 * retriable for Kafka's own clients, which refresh their metadata and ask again.
 */
const LEADER_MOVING_TYPES = new Set(['NOT_LEADER_FOR_PARTITION', 'LEADER_NOT_AVAILABLE', 'REPLICA_NOT_AVAILABLE', 'FENCED_LEADER_EPOCH', 'UNKNOWN_LEADER_EPOCH']);
/** How long a retired admin stays connected for the calls still running on it, ms. */
const RETIRED_ADMIN_GRACE_MS = 30_000;

/**
 * kafkajs 2.2's `fetchTopicOffsets` / `fetchTopicOffsetsByTimestamp` failing on partitions missing
 * from its shared metadata (a TypeError inside kafkajs's admin, not a broker answer): transient.
 */
function isMetadataRace(err: unknown): boolean {
  return err instanceof TypeError && /Cannot destructure property 'partitions'/.test(err.message) && /[\\/]kafkajs[\\/]src[\\/]admin[\\/]/.test(err.stack ?? '');
}

/**
 * Whether a look-up failed because the broker does not lead a partition now (NOT_LEADER_OR_FOLLOWER
 * and its kin; kafkajs's fetchTopicOffsets retries none of them). Seen right after partitions were
 * added (`kafka-topics --alter`): the broker's metadata already lists them with itself as leader
 * while it has not taken up their leadership yet, and answers ListOffsets for them so for a moment —
 * a member started then failed (added-partitions, kafkajs, 1 run in 5 on a busy machine).
 */
function leaderNotThereYet(err: unknown): boolean {
  for (const t of kafkaErrorTypes(err)) if (LEADER_MOVING_TYPES.has(t)) return true;
  return false;
}

class KafkaTransport implements Transport {
  readonly kind = 'kafka' as const;
  readonly #opts: KafkaTransportOptions;
  /** The last of kafkajs's topic offset look-ups ({@link #oneAtATime}). */
  #offsetLookups: Promise<void> = Promise.resolve();
  readonly #kafka: Kafka;
  readonly #noCompression: CompressionTypes;
  #topicCreation: Promise<void> = Promise.resolve();
  readonly #consumptions = new Set<TopicSetConsumption>();
  readonly #router: PartitionRouter;
  readonly #known: KnownTopics;
  #admin: Admin | undefined;
  #adminConnecting: Promise<Admin> | undefined;
  /** Admins replaced by {@link #retireAdmin}, not yet disconnected. */
  readonly #retiredAdmins = new Set<Admin>();
  #producer: Producer | undefined;
  #producerConnecting: Promise<Producer> | undefined;
  #closed = false;
  readonly #committer: OffsetCommitter;
  /** One per transport: every client of it (admin, producer, consumers) reports to it. */
  readonly #outage: BrokerOutage;
  readonly offsetResets = new OffsetResetCounts();

  constructor(opts: KafkaTransportOptions) {
    this.#opts = opts;
    this.#router = new PartitionRouter(opts.metadataMaxAgeMs);
    this.#known = new KnownTopics(opts.metadataMaxAgeMs);
    this.#outage = new BrokerOutage(opts.logger, { base: { transport: 'kafka', clientId: opts.clientId, brokers: opts.brokers.join(',') }, probe: () => this.#probe(), security: { ssl: opts.ssl !== undefined && opts.ssl !== false, sasl: opts.sasl !== undefined } });
    const { Kafka, CompressionTypes } = kafkajs();
    this.#noCompression = CompressionTypes.None;
    this.#kafka = new Kafka({
      clientId: opts.clientId,
      brokers: [...opts.brokers],
      connectionTimeout: opts.connectionTimeoutMs,
      requestTimeout: opts.requestTimeoutMs,
      ...(opts.ssl === undefined ? {} : { ssl: opts.ssl }),
      ...(opts.sasl === undefined ? {} : { sasl: { ...opts.sasl } as SASLOptions }),
      retry: { retries: opts.retries, initialRetryTime: opts.initialRetryTimeMs, maxRetryTime: opts.maxRetryTimeMs },
      logLevel: toKafkaLogLevel(opts.logLevel),
      logCreator: kafkaLogCreator(opts.logger, { transport: 'kafka', clientId: opts.clientId }, this.#outage),
    });
    this.#committer = new OffsetCommitter(this.#kafka);
  }

  ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    specs.forEach(checkTopicSpec);
    // One creation at a time: many callers at once (hundreds of POST /subscriptions, each creating
    // its dead-letter topic; issue 10) made kafkajs's createTopics fail (broker errors answered as
    // 503) when run in parallel on one admin client.
    const mine = this.#topicCreation.then(() => this.#ensureTopics(specs));
    this.#topicCreation = mine.catch(() => undefined);
    return mine;
  }

  async #ensureTopics(wanted: readonly TopicSpec[]): Promise<void> {
    const specs = this.#known.unknown(wanted);
    if (specs.length === 0) return;
    const { admin } = await this.#ready();
    let missing: readonly TopicSpec[] = [];
    /** false: another client created every missing topic first (kafkajs resolves createTopics false then). */
    let created = true;
    try {
      const existing = new Set(await admin.listTopics());
      missing = specs.filter((s) => !existing.has(s.name));
      this.#known.exist(specs.filter((s) => existing.has(s.name)).map((s) => s.name));
      if (missing.length === 0) return;
      assertNoCollision(missing.map((s) => s.name), existing);
      // Leaders are waited for below, on every path: kafkajs's own wait (waitForLeaders) runs only
      // when it created every topic, and retries LEADER_NOT_AVAILABLE only.
      created = await admin.createTopics({
        waitForLeaders: false,
        topics: missing.map((s) => ({
          topic: s.name,
          numPartitions: s.partitions,
          replicationFactor: -1, // the broker's default.replication.factor
          configEntries: [
            { name: 'retention.ms', value: String(s.retentionMs) },
            { name: 'cleanup.policy', value: s.cleanupPolicy },
            ...(s.maxMessageBytes === undefined ? [] : [{ name: 'max.message.bytes', value: String(s.maxMessageBytes) }]),
          ],
        })),
      });
    } catch (err) {
      if (!isTopicExists(err)) {
        // Names are checked first, but Kafka's INVALID_TOPIC here is not always a '.'/'_' collision
        // with a topic created meanwhile: the topics as they are now tell whether it is one.
        const invalid = invalidTopicOf(err);
        if (invalid !== undefined) {
          const listed = await admin.listTopics().catch((e: unknown) => {
            throw fromKafkaError(e, { operation: 'ensureTopics', topics: specs.map((s) => s.name) });
          });
          throw invalidTopicRefusal(invalid.topic === undefined ? specs.map((s) => s.name) : [invalid.topic], listed, invalid.message, err);
        }
        throw fromKafkaError(err, { operation: 'ensureTopics', topics: specs.map((s) => s.name) });
      }
      created = false;
    }
    // Created here or, a moment ago, by another instance ("topic already exists"): either way the
    // broker lists the topic and leads its partitions a moment after CreateTopics answered.
    const names = missing.map((s) => s.name);
    await confirmTopicLeaders(names, (ts) => this.#leadersOf(ts), { withinMs: this.#opts.requestTimeoutMs, lagging: (e) => isUnknownTopic(e) || leaderNotThereYet(e) }).catch((err: unknown) => {
      throw fromKafkaError(err, { operation: 'ensureTopics', topics: names });
    });
    this.#known.exist(names);
    this.#opts.logger.info({ transport: 'kafka', topics: names }, created ? 'created topics' : 'topics created meanwhile by another client: confirmed');
  }

  /** Each of `topics`' partition leaders as the broker's metadata has them now (topic-leaders.ts). Errors: kafkajs's, as thrown. */
  async #leadersOf(topics: readonly string[]): Promise<TopicLeaders> {
    const admin = await this.#adminReady();
    const answer = await admin.fetchTopicMetadata({ topics: [...topics] });
    const byName = new Map(answer.topics.map((t) => [t.name, t] as const));
    return new Map(topics.map((name) => {
      const t = byName.get(name);
      return [name, t === undefined ? undefined : [...t.partitions].sort((a, b) => a.partitionId - b.partitionId).map((p) => p.leader)] as const;
    }));
  }

  async partitionCount(topic: string): Promise<number> {
    this.#assertOpen();
    assertTopicName(topic);
    return this.#router.count(topic, () => this.#lookUpCount(topic));
  }

  /** The partition count of `topic` from the broker (not the cache). Errors: unknown topic; the broker's, as read failures. */
  async #lookUpCount(topic: string): Promise<number> {
    try {
      const { topics } = await this.#forgettingDeletedTopics([topic], (admin) => admin.fetchTopicMetadata({ topics: [topic] }));
      const count = topics.find((t) => t.name === topic)?.partitions.length ?? 0;
      if (count === 0) throw unknownTopicError(topic);
      return count;
    } catch (err) {
      throw readFailure(fromKafkaError(err, { operation: 'partitionCount', topic }));
    }
  }

  async produce(topic: string, records: readonly OutboundRecord[], opts: ProduceOptions = {}): Promise<readonly Position[]> {
    const signal = opts.signal;
    if (signal?.aborted === true) throw abortedProduce(topic, false, signal.reason);
    const count = await this.#partitionCountFor(topic, records).catch((err: unknown) => {
      // Deleted since it was created or listed (an operator removed a dead-letter topic): an
      // ensureTopics after this refusal must look at the broker again, not at what it saw before.
      if (err instanceof GatewayError && err.code === 'CEG_INVALID_NAME') this.#known.forget(topic);
      throw err;
    });
    if (records.length === 0) {
      await this.#ready();
      return [];
    }
    // Routed over the cached count; a partition the topic no longer has (deleted and created again
    // with fewer partitions) is refused by the partitioner or the broker: routed again over a fresh count.
    const sendRouted = (): Promise<readonly Position[]> => this.#router.sendRouted(topic, records, count, () => this.#lookUpCount(topic), (partitionOf) => this.#send(topic, records, partitionOf, signal), beyondTopic);
    try {
      return await sendRouted();
    } catch (err) {
      if (!(await this.#producerKnewDeletedTopic(topic, err, signal))) throw err;
      this.#retireProducer();
      this.#opts.logger.info({ transport: 'kafka', topic }, 'kafka producer knew a topic deleted since: sending again on a new producer');
      return await sendRouted();
    }
  }

  /**
   * Whether a send to `topic` failed only because the producer keeps a topic deleted since: kafkajs's
   * producer refreshes the metadata of every topic it ever sent to (every `metadataMaxAge`, 5 min)
   * and fails the whole refresh — so every send, to any topic — with UNKNOWN_TOPIC_OR_PARTITION when
   * one of them is gone (an operator deleted a dead-letter topic: all ingress failed as "unknown
   * topic" until the process restarted). True when the send was refused as an unknown topic (nothing
   * written) while the broker lists `topic`; then a new producer (which knows only the topics sent to
   * from then on) sends again.
   */
  async #producerKnewDeletedTopic(topic: string, err: unknown, signal: AbortSignal | undefined): Promise<boolean> {
    if (isAborted(signal) || !(err instanceof GatewayError) || err.code !== 'CEG_INVALID_NAME' || !errorChain(err).some(isUnknownTopic)) return false;
    try {
      const admin = await this.#adminReady();
      return (await admin.listTopics()).includes(topic);
    } catch {
      return false; // the original refusal stands
    }
  }

  /** One send of `records` to `topic`, each on `partitionOf(record, index)`. Errors: mapped by fromKafkaError. */
  async #send(topic: string, records: readonly OutboundRecord[], partitionOf: (r: OutboundRecord, index: number) => number, signal: AbortSignal | undefined): Promise<readonly Position[]> {
    const { producer } = await this.#ready();
    const messages = records.map((r, index): Message => ({
      key: buf(r.key),
      value: buf(r.value),
      headers: toKafkaHeaders(r.headers),
      partition: partitionOf(r, index),
      ...(r.timestampMs === undefined ? {} : { timestamp: String(r.timestampMs) }),
    }));
    // One state for the partitioner per send (explicitPartitioner: when to stop kafkajs's retries).
    const attempt: SendAttempt = {};
    for (const m of messages) sendAttempts.set(m, attempt);
    // Aborted while we looked up metadata: nothing has been sent yet.
    if (isAborted(signal)) throw abortedProduce(topic, false, signal?.reason);
    const send = producer.send({ topic, acks: -1, timeout: this.#opts.ackTimeoutMs, compression: this.#noCompression, messages });
    const sentAtMs = Date.now();
    const stall = setTimeout(() => this.#outage.failed(`a produce request to ${topic} has had no answer for ${BROKER_STALL_MS} ms`, sentAtMs), BROKER_STALL_MS);
    const settled = (): void => clearTimeout(stall);
    /** This send failed because an earlier failure retired its producer (not a fault of its own). */
    let retired = false;
    send.then(settled, (err: unknown) => {
      settled();
      if (producer !== this.#producer) {
        retired = true;
        return;
      }
      // A send that failed without a definite refusal (timed out, connection lost) may still be
      // written by the broker, while kafkajs did not advance this producer's sequence numbers: the
      // next batch would carry the same ones and be taken as its duplicate — acknowledged, not
      // written (issue 14, test/integration/producer-state-lost). So the next send gets a new
      // producer id. On the raw send, so a caller's abort does not skip it.
      if (!refusedForGood(err)) this.#retireProducer();
    });
    let metadata;
    try {
      metadata = await raceAbort(send, signal, () => abortedProduce(topic, true, signal?.reason));
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      if (producerStateLost(err)) {
        // After a broker crash the idempotent producer's sequence state can disagree with the
        // broker's for good (a known kafkajs trap): start over with a new producer id. The send
        // is indeterminate; the caller retries and consumers drop duplicates by source+id.
        this.#opts.logger.warn({ topic, err: errorMessage(err) }, 'idempotent producer state lost; reconnecting with a new producer');
        throw new GatewayError('CEG_BROKER_UNAVAILABLE', `producer state lost: ${errorMessage(err)}`, { retriable: true, cause: err, details: { topic, indeterminate: true } });
      }
      const hit = errorChain(err).find((x): x is PartitionNotInTopic => x instanceof PartitionNotInTopic);
      if (hit !== undefined) {
        // The broker answered (the producer's metadata lists fewer partitions): no outage. Retriable:
        // the transport routes again when its count changed; if not, the two metadata answers disagree for now.
        throw new GatewayError('CEG_BROKER_UNAVAILABLE', `produce: ${hit.message}`, { retriable: true, cause: err, details: { topic, partition: hit.partition, listed: hit.listed, indeterminate: true } });
      }
      const mapped = fromKafkaError(err, { operation: 'produce', topic, records: records.length });
      if (mapped.code === 'CEG_INVALID_NAME') {
        this.#router.forget(topic);
        this.#known.forget(topic);
      }
      if (mapped.code === 'CEG_BROKER_UNAVAILABLE' && !retired) this.#outage.failed(`produce: ${mapped.message}`, sentAtMs);
      throw mapped;
    }
    this.#outage.ok();
    return positionsInOrder(topic, messages, metadata);
  }

  async consume(spec: GroupSpec, handler: RecordHandler): Promise<Consumption> {
    checkGroupSpec(spec);
    this.#assertOpen();
    const topics = [...new Set(spec.topics)];
    // A topic deleted while the member runs: a new member on the others (./missing-topics.ts).
    const c = await TopicSetConsumption.start(spec.group, topics, {
      start: (ts, fromLogStart) => this.#startMember({ ...spec, topics: ts }, handler, fromLogStart),
      present: async (ts) => {
        try {
          const listed = new Set(await (await this.#adminReady()).listTopics());
          return new Set(ts.filter((t) => listed.has(t)));
        } catch (err) {
          throw fromKafkaError(err, { operation: 'consume', group: spec.group });
        }
      },
    }, this.#opts);
    this.#consumptions.add(c);
    const forget = (): void => void this.#consumptions.delete(c);
    c.done.then(forget, forget);
    return c;
  }

  /**
   * One kafkajs member of `spec.group` on `spec.topics` (deduplicated, each existing); the
   * partitions of the topics in `fromLogStart` start at their log start whatever the group
   * committed on them (a topic created again: its old offsets mean nothing in the new log).
   * Errors: as consume() (an unknown topic: CEG_INVALID_NAME with `details.topicMissing`).
   */
  async #startMember(spec: GroupSpec, handler: RecordHandler, fromLogStart: readonly string[]): Promise<KafkaConsumption> {
    this.#assertOpen();
    const startCounts = new Map<string, number>();
    // A topic created again may have another partition count than the one cached.
    for (const t of fromLogStart) this.#router.forget(t);
    for (const t of spec.topics) startCounts.set(t, await this.partitionCount(t));
    // The group calls of a start meet a coordinator not there yet on a broker just started (or one
    // moving the group): waited for (../coordinator-wait.ts), not failed after the client's few retries.
    const idle = await whileCoordinatorLoads(() => this.#idleGroupPins(spec, (spec.startFrom ?? 'latest') === 'latest'), this.#coordinatorWait(spec.group, 'consume: start offsets'));
    const pins = idle.latest;
    for (const [k, offset] of await whileCoordinatorLoads(() => this.#startAtPins(spec), this.#coordinatorWait(spec.group, 'consume: start positions'))) pins.set(k, offset);
    for (const [k, offset] of idle.outOfRange) pins.set(k, offset);
    const clientSuffix = spec.instanceId === undefined ? spec.group : `${spec.group}-${spec.instanceId}`;
    // A pinned or added partition this member gets at a later join is looked up again (it may still lack a commit).
    const uncommitted = (held: readonly { readonly topic: string; readonly partition: number }[]): Promise<Set<string>> => this.#uncommitted(spec.group, held);
    const logRanges = async (topic: string): Promise<ReadonlyMap<number, { readonly low: string; readonly high: string }>> => {
      const offsets = await this.#oneAtATime(topic, (admin) => admin.fetchTopicOffsets(topic));
      return new Map(offsets.map((o) => [o.partition, { low: o.low, high: o.high }] as const));
    };
    // Created again: read from its log start, as the @platformatic/kafka member reads it (a past-end
    // reset: the group's offset was the deleted topic's). A commit that happens to fall inside the
    // new log (as many records written since as the old topic had) would otherwise skip them.
    for (const topic of fromLogStart) {
      for (const [partition, { low, high }] of await logRanges(topic)) {
        const k = tpKey(topic, partition);
        // Warned and counted once per partition, as #idleGroupPins does for a commit past the end.
        if (!idle.outOfRange.has(k)) {
          this.#opts.logger.warn({ group: spec.group, topic, partition, offset: 'unknown', logStart: low, end: high, lost: 'unknown', reason: 'past-end' }, outOfRangeWarning('past-end'));
          this.offsetResets.note(spec.group, 'past-end');
        }
        pins.set(k, low);
      }
    }
    // Stores what a crashed member processed (it left the group first): refused while the group has members.
    const commitAfterCrash = async (offsets: readonly { readonly topic: string; readonly partition: number; readonly offset: string }[]): Promise<void> => {
      const admin = await this.#adminReady();
      for (const topic of new Set(offsets.map((o) => o.topic))) {
        await this.#committer.commit(admin, spec.group, topic, offsets.filter((o) => o.topic === topic).map(({ partition, offset }) => ({ partition, offset })));
      }
    };
    // A failed start disconnected its consumer: each attempt is a new member.
    return whileCoordinatorLoads(() => {
      this.#assertOpen();
      // kafkajs tells of a running member's position out of range only in its log (logging.ts KafkaLogTaps).
      const taps: KafkaLogTaps = { level: toKafkaLogLevel(this.#opts.logLevel) };
      return KafkaConsumption.start(this.#consumerKafka(clientSuffix, taps), spec, handler, this.#opts, pins, { uncommitted, startCounts, logRanges, taps, resets: this.offsetResets, recovering: () => this.#outage.recovering, commitAfterCrash });
    }, this.#coordinatorWait(spec.group, 'consume: first join'));
  }

  async read(spec: ReadSpec, handler: (record: TransportRecord) => Promise<void>): Promise<Read> {
    this.#assertOpen();
    spec.topics.forEach((t) => assertTopicName(t));
    const admin = await this.#adminReady();
    try {
      // Start positions on the transport's look-ups: asked again while the broker's answer lags.
      const lookups: ReadOffsetLookups = {
        topicOffsets: (topic) => this.#oneAtATime(topic, (a) => a.fetchTopicOffsets(topic)),
        topicOffsetsAt: (topic, timestampMs) => this.#oneAtATime(topic, (a) => a.fetchTopicOffsetsByTimestamp(topic, timestampMs)),
      };
      return await startKafkaRead(this.#consumerKafka('read'), admin, lookups, spec, handler, this.#opts);
    } catch (err) {
      throw fromKafkaError(err, { operation: 'read', topics: spec.topics });
    }
  }

  async endOffsets(topic: string): Promise<readonly PartitionOffset[]> {
    assertTopicName(topic);
    // An unknown topic answers at once here (CEG_INVALID_NAME; cached for a known one), where
    // kafkajs's fetchTopicOffsets retries UNKNOWN_TOPIC_OR_PARTITION for ~11 s first.
    await this.partitionCount(topic);
    try {
      const offsets = await this.#oneAtATime(topic, (admin) => admin.fetchTopicOffsets(topic));
      return offsets.map((o) => ({ partition: o.partition, offset: BigInt(o.high) })).sort((a, b) => a.partition - b.partition);
    } catch (err) {
      throw readFailure(fromKafkaError(err, { operation: 'endOffsets', topic }));
    }
  }

  async resetOffsets(group: string, topic: string, to: OffsetTarget): Promise<void> {
    const offsets = to.kind === 'offset' ? [{ partition: to.partition, offset: to.offset }] : await this.offsetsAt(topic, to);
    await this.commitOffsets(group, topic, offsets);
    this.#opts.logger.info({ transport: 'kafka', group, topic, to: to.kind }, 'reset group offsets');
  }

  async offsetsAt(topic: string, at: OffsetQuery): Promise<readonly PartitionOffset[]> {
    assertTopicName(topic);
    const count = await this.partitionCount(topic);
    try {
      const ends = await this.#oneAtATime(topic, (admin) => admin.fetchTopicOffsets(topic));
      // Partitions added since the count was cached: the committed offsets read next must list them too.
      if (ends.length > count) this.#router.forget(topic);
      let out: PartitionOffset[];
      if (at.kind === 'timestamp') {
        const byTime = await this.#oneAtATime(topic, (admin) => admin.fetchTopicOffsetsByTimestamp(topic, listOffsetsTime(at.timestampMs)));
        // No record at or after the time: Kafka answers -1; that is the end offset.
        out = byTime.map((o) => ({ partition: o.partition, offset: BigInt(o.offset) < 0n ? BigInt(ends.find((e) => e.partition === o.partition)?.high ?? '0') : BigInt(o.offset) }));
      } else {
        out = ends.map((o) => ({ partition: o.partition, offset: BigInt(at.kind === 'earliest' ? o.low : o.high) }));
      }
      return out.sort((a, b) => a.partition - b.partition);
    } catch (err) {
      throw readFailure(fromKafkaError(err, { operation: 'offsetsAt', topic }));
    }
  }

  async committedOffsets(group: string, topic: string): Promise<readonly CommittedOffset[]> {
    assertTopicName(topic);
    const count = await this.partitionCount(topic);
    try {
      const [answer] = await this.#groupCall(group, 'committedOffsets', () => this.#forgettingDeletedTopics([topic], (admin) => admin.fetchOffsets({ groupId: group, topics: [topic] })));
      const byPartition = new Map((answer?.partitions ?? []).map((p) => [p.partition, p.offset]));
      return Array.from({ length: count }, (_, partition) => {
        const o = byPartition.get(partition);
        return { partition, offset: o === undefined || BigInt(o) < 0n ? null : BigInt(o) };
      });
    } catch (err) {
      throw readFailure(fromKafkaError(err, { operation: 'committedOffsets', group, topic }));
    }
  }

  async committedOffsetsOf(group: string, topics: readonly string[]): Promise<ReadonlyMap<string, readonly CommittedOffset[]>> {
    for (const t of topics) assertTopicName(t);
    const counts: number[] = [];
    for (const t of topics) counts.push(await this.partitionCount(t));
    try {
      const answer = await this.#groupCall(group, 'committedOffsets', () => this.#forgettingDeletedTopics(topics, (admin) => admin.fetchOffsets({ groupId: group, topics: [...topics] })));
      const out = new Map<string, readonly CommittedOffset[]>();
      topics.forEach((topic, i) => {
        const byPartition = new Map((answer.find((a) => a.topic === topic)?.partitions ?? []).map((p) => [p.partition, p.offset]));
        out.set(topic, Array.from({ length: counts[i]! }, (_, partition) => {
          const o = byPartition.get(partition);
          return { partition, offset: o === undefined || BigInt(o) < 0n ? null : BigInt(o) };
        }));
      });
      return out;
    } catch (err) {
      throw readFailure(fromKafkaError(err, { operation: 'committedOffsets', group, topics }));
    }
  }

  async commitOffsets(group: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void> {
    this.#assertOpen();
    assertTopicName(topic);
    // A partition beyond the cached count may have been added since: asked again before it is refused.
    const count = await this.#router.countCovering(topic, offsets.map((o) => o.partition), () => this.#lookUpCount(topic));
    checkCommitOffsets(topic, count, offsets);
    if (offsets.length === 0) return;
    const admin = await this.#adminReady();
    try {
      await this.#groupCall(group, 'commitOffsets', async () => {
        const { groups } = await admin.describeGroups([group]);
        const state = groups[0]?.state ?? 'Dead';
        if (!IDLE_GROUP_STATES.has(state)) throw groupBusy(group, topic, state);
        await this.#committer.commit(admin, group, topic, offsets.map((o) => ({ partition: o.partition, offset: o.offset.toString() })));
      });
    } catch (err) {
      throw commitOffsetsFailure(err, group, topic, (e) => fromKafkaError(e, { operation: 'commitOffsets', group, topic }));
    }
  }

  async groupMembers(group: string): Promise<GroupDescription | undefined> {
    this.#assertOpen();
    if (group === '') return undefined; // no group can be joined under an empty id
    try {
      const admin = await this.#adminReady();
      const { groups } = await this.#groupCall(group, 'groupMembers', () => admin.describeGroups([group]));
      const g = groups.find((x) => x.groupId === group);
      // An unknown group: 'Dead' with no member (DescribeGroups < v6), or GROUP_ID_NOT_FOUND (v6+).
      return describedGroup(g?.state, g?.members.length ?? 0);
    } catch (err) {
      if (kafkaErrorTypes(err).has('GROUP_ID_NOT_FOUND')) return undefined;
      throw readFailure(fromKafkaError(err, { operation: 'groupMembers', group }));
    }
  }

  async maxMessageBytes(topic: string): Promise<number> {
    assertTopicName(topic);
    const admin = await this.#adminReady();
    try {
      const answer = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: TOPIC_RESOURCE, name: topic, configNames: ['max.message.bytes'] }] });
      const value = Number(answer.resources[0]?.configEntries.find((e) => e.configName === 'max.message.bytes')?.configValue);
      if (!Number.isInteger(value) || value <= 0) throw unknownTopicError(topic);
      return value;
    } catch (err) {
      throw readFailure(fromKafkaError(err, { operation: 'maxMessageBytes', topic }));
    }
  }

  async groupSessionTimeoutBounds(): Promise<{ readonly minMs: number; readonly maxMs: number } | undefined> {
    const admin = await this.#adminReady();
    try {
      // Every broker (any may coordinate the group): the tightest bounds (session-bounds.ts).
      const nodes = (await admin.describeCluster()).brokers;
      if (nodes.length === 0) return undefined;
      const answer = await admin.describeConfigs({ includeSynonyms: false, resources: nodes.map((n) => ({ type: BROKER_RESOURCE, name: String(n.nodeId), configNames: [...SESSION_BOUND_NAMES] })) });
      return tightestBounds(answer.resources.map((r) => sessionBounds((name) => r.configEntries.find((e) => e.configName === name)?.configValue)));
    } catch (err) {
      const e = fromKafkaError(err, { operation: 'groupSessionTimeoutBounds' });
      // Describing the broker needs DESCRIBE_CONFIGS on the cluster, which a gateway's user may lack.
      if (e.details?.reason === 'authorization') return undefined;
      throw readFailure(e);
    }
  }

  async isHealthy(): Promise<boolean> {
    if (this.#closed) return false;
    return checkBrokerHealth(this.#outage, async () => (await this.#adminReady()).describeCluster(), { requestTimeoutMs: this.#opts.requestTimeoutMs, logger: this.#opts.logger, base: { transport: 'kafka' }, describe: (err) => fromKafkaError(err, { operation: 'health check' }).message });
  }

  lastHealthFailure(): HealthFailure | undefined {
    return this.#outage.lastHealthFailure;
  }

  /** The outage's probe: one admin request; true when the broker answered. */
  async #probe(): Promise<boolean> {
    if (this.#closed) return false;
    return brokerAnswers(async () => (await this.#adminReady()).describeCluster(), this.#opts.requestTimeoutMs);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#outage.close();
    await Promise.allSettled([...this.#consumptions].map((c) => c.stop()));
    const connecting: Promise<unknown>[] = [this.#adminConnecting, this.#producerConnecting].filter((p) => p !== undefined);
    this.#adminConnecting = undefined;
    this.#producerConnecting = undefined;
    await Promise.allSettled(connecting);
    await Promise.allSettled([this.#producer?.disconnect(), this.#admin?.disconnect(), ...[...this.#retiredAdmins].map((a) => a.disconnect()), this.#committer.close()]);
    this.#retiredAdmins.clear();
  }

  /**
   * Retires the producer at once: the next call connects a new one (a new producer id) next to
   * the same admin; the old one is disconnected in the background, failing sends still queued on
   * it (retriable) rather than letting them go out with its stale sequence numbers.
   */
  #retireProducer(): void {
    const old = this.#producer;
    this.#producer = undefined;
    this.#producerConnecting = undefined;
    old?.disconnect().catch((err: unknown) => this.#opts.logger.debug({ transport: 'kafka', err: errorMessage(err) }, 'retired producer: disconnect failed'));
  }

  #assertOpen(): void {
    if (this.#closed) throw closedTransport(this.kind);
  }

  /** How a start-time call of `group` waits for its coordinator: the transport's retry delays and logger. */
  #coordinatorWait(group: string, operation: string, waitMs?: number): CoordinatorWaitOptions {
    return {
      group,
      operation,
      coordinatorBusy: coordinatorUnavailable,
      map: (err) => fromKafkaError(err, { operation: operation.startsWith('consume') ? 'consume' : operation, group }),
      initialDelayMs: this.#opts.initialRetryTimeMs,
      maxDelayMs: this.#opts.maxRetryTimeMs,
      logger: this.#opts.logger,
      ...(waitMs === undefined ? {} : { waitMs }),
    };
  }

  /**
   * A group call outside a consumer's start (`operation`: the transport method), tried again while
   * the group's coordinator is not there yet, for up to the option `groupCallCoordinatorWaitMs`
   * (default GROUP_CALL_COORDINATOR_WAIT_MS, 3 s, ../coordinator-wait.ts): kafkajs retries such an answer only `retries` times. Errors: `fn`'s
   * as fromKafkaError maps them (a GatewayError as thrown); the bounded wait's retriable
   * CEG_BROKER_UNAVAILABLE.
   */
  #groupCall<T>(group: string, operation: string, fn: () => Promise<T>): Promise<T> {
    return whileCoordinatorLoads(fn, this.#coordinatorWait(group, operation, this.#opts.groupCallCoordinatorWaitMs));
  }

  /**
   * The admin and the idempotent producer, for the calls that write (produce, topic creation: a
   * gateway that creates its topics at start has its producer id before the first event).
   */
  async #ready(): Promise<{ admin: Admin; producer: Producer }> {
    const [admin, producer] = await Promise.all([this.#adminReady(), this.#producerReady()]);
    return { admin, producer };
  }

  /**
   * Connects the admin once (single flight); a failed attempt is retried by the next call. The
   * read-only calls use it alone: connecting the idempotent producer asks the broker for a
   * producer id (InitProducerId), which a principal without write rights is refused
   * (`tail` and `trace` run with read-only credentials: README, "From the command line").
   */
  /**
   * Runs kafkajs's topic offset look-ups one after the other, each tried again (up to
   * {@link METADATA_RACE_TRIES} times, 50 ms apart) when it met kafkajs 2.2's metadata race:
   * `fetchTopicOffsets` reads the topic's partitions from the client's shared metadata, which
   * another admin call may have just replaced without that topic, and then fails with a TypeError
   * ("Cannot destructure property 'partitions' of 'high.pop(...)'") instead of refreshing. Seen
   * at start-up with tens of subscriptions (the subscriptions were then never loaded) and in every
   * work check. A broker that answers it does not lead a partition (yet) is asked again as
   * {@link METADATA_CATCH_UP} says (about 3 s), as Kafka's own clients retry such an answer
   * (kafkajs gives up at once). On the same admin: one retired for fresh metadata at each such
   * answer kept a kafkajs member from recovering a topic deleted and created again
   * (offset-out-of-range.kafka, 3 runs in 3). Each call keeps its own result or error.
   */
  #oneAtATime<T>(topic: string, lookup: (admin: Admin) => Promise<T>): Promise<T> {
    const once = async (): Promise<T> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.#forgettingDeletedTopics([topic], lookup);
        } catch (err) {
          if (attempt >= METADATA_RACE_TRIES || !isMetadataRace(err)) throw err;
          await sleep(50);
        }
      }
    };
    const call = (): Promise<T> => retrying(once, { policy: METADATA_CATCH_UP, classify: leaderNotThereYet });
    const run = this.#offsetLookups.then(call, call);
    this.#offsetLookups = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /**
   * Runs an admin read of `topics`, on a new admin when the current one keeps a topic that was
   * deleted since. kafkajs's admin refreshes the metadata of every topic it was ever asked about
   * (its cluster's target topics, never pruned) and fails the whole refresh with
   * UNKNOWN_TOPIC_OR_PARTITION when one of them is gone: after an operator deleted one topic, every
   * read of any other topic failed (after ~11 s of retries) until the process restarted. So when a
   * read fails with an unknown topic while the broker lists `topic`, the admin is retired and the
   * read is tried once more on a fresh one (which knows only the topics asked of it from then on).
   * Errors: the read's, when one of `topics` is not listed or the fresh admin fails too.
   */
  async #forgettingDeletedTopics<T>(topics: readonly string[], read: (admin: Admin) => Promise<T>): Promise<T> {
    const admin = await this.#adminReady();
    try {
      return await read(admin);
    } catch (err) {
      if (!isUnknownTopic(err)) throw err;
      const listed = await admin.listTopics().catch(() => [] as string[]);
      if (!topics.every((t) => listed.includes(t))) throw err;
      this.#retireAdmin(admin);
      this.#opts.logger.info({ transport: 'kafka', topics }, 'kafka admin knew a topic deleted since: reading again on a new admin');
      return await read(await this.#adminReady());
    }
  }

  /** The next admin call connects a new admin; the old one is disconnected once calls still running on it had time to end (and at close). */
  #retireAdmin(admin: Admin): void {
    if (this.#admin !== admin) return;
    this.#admin = undefined;
    this.#adminConnecting = undefined;
    this.#retiredAdmins.add(admin);
    const later = setTimeout(() => {
      this.#retiredAdmins.delete(admin);
      admin.disconnect().catch((err: unknown) => this.#opts.logger.debug({ transport: 'kafka', err: errorMessage(err) }, 'disconnecting a retired kafka admin failed'));
    }, RETIRED_ADMIN_GRACE_MS);
    later.unref();
  }

  #adminReady(): Promise<Admin> {
    this.#assertOpen();
    this.#adminConnecting ??= (async () => {
      const admin = this.#kafka.admin({ retry: { retries: this.#opts.retries } });
      this.#admin = admin;
      try {
        await admin.connect();
      } catch (err) {
        await admin.disconnect().catch(() => undefined);
        // Connecting writes nothing: a timeout here is the broker's absence, not an indeterminate write.
        throw readFailure(fromKafkaError(err, { operation: 'connect', brokers: this.#opts.brokers }));
      }
      return admin;
    })();
    return this.#retriedIfFailed(this.#adminConnecting, () => this.#adminConnecting, () => (this.#adminConnecting = undefined));
  }

  /** Connects the idempotent producer once (single flight; again after {@link #retireProducer}). */
  #producerReady(): Promise<Producer> {
    this.#assertOpen();
    this.#producerConnecting ??= (async () => {
      const producer = this.#kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        // The transport's metadata age for the producer too (kafkajs's own default: 5 min).
        metadataMaxAge: this.#opts.metadataMaxAgeMs,
        createPartitioner: explicitPartitioner,
        retry: { retries: this.#opts.retries, initialRetryTime: this.#opts.initialRetryTimeMs, maxRetryTime: this.#opts.maxRetryTimeMs },
      });
      this.#producer = producer;
      try {
        await producer.connect();
      } catch (err) {
        await producer.disconnect().catch(() => undefined);
        // Connecting writes nothing: a timeout (a broker that accepts but does not answer) is its absence, not an indeterminate write.
        throw readFailure(fromKafkaError(err, { operation: 'connect', brokers: this.#opts.brokers }));
      }
      return producer;
    })();
    return this.#retriedIfFailed(this.#producerConnecting, () => this.#producerConnecting, () => (this.#producerConnecting = undefined));
  }

  /** `attempt`, forgotten when it fails (if it is still the current one) so the next call connects again. */
  #retriedIfFailed<T>(attempt: Promise<T>, current: () => Promise<T> | undefined, forget: () => void): Promise<T> {
    attempt.catch(() => {
      if (current() === attempt) forget();
    });
    return attempt;
  }

  async #partitionCountFor(topic: string, records: readonly OutboundRecord[]): Promise<number> {
    try {
      this.#assertOpen();
      assertTopicName(topic);
      return await this.#router.countForRecords(topic, records, () => this.#lookUpCount(topic));
    } catch (err) {
      throw err instanceof GatewayError ? err : fromKafkaError(err, { operation: 'produce', topic });
    }
  }

  /**
   * Where an idle group (no members) starts, from one look at its commits and its topics' offsets:
   * - `latest` (only when `latest` is asked: a 'latest' subscription): for each partition without a
   *   commit, the offset at which it starts ('latest' as of this call). Seeked on first join, so
   *   records produced after consume() resolves are never skipped by a later "latest" lookup. On a
   *   topic where the group has a commit on another partition, such a partition was added to the
   *   topic since the group began (the group stores a start on every partition when it first gets
   *   it): it starts at its log start.
   * - `outOfRange`: committed offsets that lie outside their partition's log — below the log start
   *   (retention or `kafka-delete-records` removed records the group had not read) or past the end
   *   (the topic deleted and created again) — pinned at the log start, with a warning naming the
   *   group, topic, partition and the offsets lost (src/transport/out-of-range.ts). kafkajs would
   *   answer the broker's OFFSET_OUT_OF_RANGE by resetting to its `fromBeginning` default, which is
   *   `latest` for a 'latest' subscription: the records between the log start and the end were
   *   skipped with one kafkajs error line. A position that leaves the log while this member runs is
   *   moved the same way by the consumption (consumption.ts #outOfRange).
   * Both empty for a group with members (a member's position is its own). kafkajs seeks pins on the
   * first join and they are stored (consumption.ts #commitPins).
   * Errors: mapped by fromKafkaError (CEG_BROKER_UNAVAILABLE, retriable).
   */
  async #idleGroupPins(spec: GroupSpec, latest: boolean): Promise<{ readonly latest: Map<string, string>; readonly outOfRange: Map<string, string> }> {
    const out = { latest: new Map<string, string>(), outOfRange: new Map<string, string>() };
    const admin = await this.#adminReady();
    try {
      const { groups } = await admin.describeGroups([spec.group]);
      if (!IDLE_GROUP_STATES.has(groups[0]?.state ?? 'Dead')) return out;
      // On a new admin when this one keeps a topic deleted since (a member started again without it: missing-topics.ts).
      const committed = await this.#forgettingDeletedTopics(spec.topics, (a) => a.fetchOffsets({ groupId: spec.group, topics: [...new Set(spec.topics)] }));
      for (const { topic, partitions } of committed) {
        const open = latest ? partitions.filter((p) => BigInt(p.offset) < 0n) : [];
        const held = partitions.filter((p) => BigInt(p.offset) >= 0n);
        if (open.length === 0 && held.length === 0) continue;
        const offsets = await this.#oneAtATime(topic, (a) => a.fetchTopicOffsets(topic));
        // The group read this topic before: its partitions without a commit were added since, and
        // start at their log start (latest would skip what was written there meanwhile).
        const readBefore = held.length > 0;
        for (const p of open) {
          const end = offsets.find((e) => e.partition === p.partition);
          if (end !== undefined) out.latest.set(tpKey(topic, p.partition), readBefore ? end.low : end.high);
        }
        for (const p of held) {
          const o = offsets.find((x) => x.partition === p.partition);
          if (o === undefined) continue;
          const reset = outOfRangeReset(BigInt(p.offset), BigInt(o.low), BigInt(o.high));
          if (reset === undefined) continue;
          this.#opts.logger.warn(
            { group: spec.group, topic, partition: p.partition, offset: p.offset, logStart: o.low, end: o.high, lost: reset.lost?.toString() ?? 'unknown', reason: reset.why },
            outOfRangeWarning(reset.why),
          );
          this.offsetResets.note(spec.group, reset.why);
          out.outOfRange.set(tpKey(topic, p.partition), reset.to.toString());
        }
      }
      return out;
    } catch (err) {
      throw fromKafkaError(err, { operation: 'consume', group: spec.group });
    }
  }

  /**
   * The positions of `spec.startAt` for the partitions that have no committed offset now (kafkajs
   * seeks its pins on the first join whatever the commits say, so a committed partition is left
   * out here). A member of the group that commits a listed partition between this lookup and this
   * member's first join makes it redeliver from the pin (duplicates, never a gap). A pinned
   * partition this member gets at a later join is looked up again then (consumption.ts #pinLaterJoin).
   */
  async #startAtPins(spec: GroupSpec): Promise<Map<string, string>> {
    const wanted = (spec.startAt ?? []).filter((p) => spec.topics.includes(p.topic));
    const pins = new Map<string, string>();
    if (wanted.length === 0) return pins;
    const open = await this.#uncommitted(spec.group, wanted);
    for (const p of wanted) if (open.has(tpKey(p.topic, p.partition))) pins.set(tpKey(p.topic, p.partition), p.offset.toString());
    return pins;
  }

  /** Of `partitions`, the `topic\0partition` keys on which `group` has no committed offset now. */
  async #uncommitted(group: string, partitions: readonly { readonly topic: string; readonly partition: number }[]): Promise<Set<string>> {
    const asked = new Set(partitions.map((p) => tpKey(p.topic, p.partition)));
    if (asked.size === 0) return new Set();
    try {
      const topics = [...new Set(partitions.map((p) => p.topic))];
      const committed = await this.#forgettingDeletedTopics(topics, (a) => a.fetchOffsets({ groupId: group, topics }));
      return new Set(committed.flatMap(({ topic, partitions: ps }) => ps.filter((p) => BigInt(p.offset) < 0n).map((p) => tpKey(topic, p.partition))).filter((k) => asked.has(k)));
    } catch (err) {
      throw fromKafkaError(err, { operation: 'consume', group });
    }
  }

  /** A client whose id names the group and instance (bus spec T1: endpoint = service + instance). */
  /** A Kafka client for a consumer; with `taps`, its log is seen at ERROR at least and handed to them (logging.ts KafkaLogTaps). */
  #consumerKafka(suffix: string, taps?: KafkaLogTaps): Kafka {
    const o = this.#opts;
    const { Kafka } = kafkajs();
    return new Kafka({
      clientId: `${o.clientId}-${suffix}`.slice(0, 255),
      brokers: [...o.brokers],
      connectionTimeout: o.connectionTimeoutMs,
      requestTimeout: o.requestTimeoutMs,
      ...(o.ssl === undefined ? {} : { ssl: o.ssl }),
      ...(o.sasl === undefined ? {} : { sasl: { ...o.sasl } as SASLOptions }),
      retry: { retries: o.retries, initialRetryTime: o.initialRetryTimeMs, maxRetryTime: o.maxRetryTimeMs },
      logLevel: taps === undefined ? toKafkaLogLevel(o.logLevel) : Math.max(toKafkaLogLevel(o.logLevel), kafkajs().logLevel.ERROR),
      logCreator: kafkaLogCreator(o.logger, { transport: 'kafka', clientId: o.clientId, consumer: suffix }, this.#outage, Date.now, taps),
    });
  }
}

/** What the partitioner saw during one send (kafkajs retries a send within one `producer.send`). */
interface SendAttempt {
  /** The producer's partition list of the topic when the partitioner last asked kafkajs to refresh it. */
  notLoadedOn?: readonly unknown[];
}

/** Each message's send (its objects are passed to the partitioner as given). */
const sendAttempts = new WeakMap<object, SendAttempt>();

/**
 * A partition the producer's metadata of the topic, refreshed for this very send, does not list:
 * the topic has fewer partitions now (deleted and created again) than the count the partition was
 * chosen over. Not retriable for kafkajs (`retriable: false` stops its retries: more refreshes
 * would not list it either); nothing of this attempt was sent. The transport asks the count again.
 */
class PartitionNotInTopic extends Error {
  readonly retriable = false;
  constructor(readonly topic: string, readonly partition: number, readonly listed: number) {
    super(`the producer's metadata of ${topic}, refreshed, lists ${listed} partitions, not partition ${partition}`);
    this.name = 'PartitionNotInTopic';
  }
}

/**
 * kafkajs calls its partitioner for every message; every message of ours already carries its
 * partition (murmur2 for keys, round-robin for null keys), so this passes it through — unless the
 * producer's own metadata does not list that partition. The first time in a send, that may be
 * stale metadata (partitions added by `kafka-topics --alter --partitions`, which the transport's
 * partition count saw first): kafkajs would then leave those records out of the request and
 * answer without them. Thrown before any request is sent, its `KafkaJSMetadataNotLoaded` makes
 * kafkajs refresh the producer's metadata and try the send again (kafkajs 2.2
 * producer/sendMessages.js: "the number of partitions for this topic has increased in the
 * meantime"). Still not listed by the refreshed metadata (another list than the one it was
 * refused on), the topic has fewer partitions than the transport's count (deleted and created
 * again): {@link PartitionNotInTopic} ends the send at once, where more NotLoaded retries would
 * have failed it after kafkajs's whole retry budget (seconds) with nothing to show.
 */
function explicitPartitioner(): (args: { topic: string; partitionMetadata: readonly unknown[]; message: { partition?: number } }) => number {
  return ({ topic, partitionMetadata, message }) => {
    const partition = message.partition ?? 0;
    if (partition < partitionMetadata.length) return partition;
    const attempt = sendAttempts.get(message);
    if (attempt?.notLoadedOn !== undefined && attempt.notLoadedOn !== partitionMetadata) throw new PartitionNotInTopic(topic, partition, partitionMetadata.length);
    if (attempt !== undefined) attempt.notLoadedOn = partitionMetadata;
    // kafkajs's types declare no constructor argument; its errors.js takes the message.
    const NotLoaded = kafkajs().KafkaJSMetadataNotLoaded as unknown as new (message: string) => Error;
    throw new NotLoaded(`the producer's metadata of ${topic} lists ${partitionMetadata.length} partitions, not partition ${partition}`);
  };
}

/**
 * A send refused for a partition the topic does not have now: the partitioner's
 * {@link PartitionNotInTopic} (kafkajs may wrap it), or an unknown topic or partition
 * (CEG_INVALID_NAME; whether the topic itself is gone the count's look-up then tells).
 */
function beyondTopic(err: unknown): boolean {
  return errorChain(err).some((e) => e instanceof PartitionNotInTopic) || (err instanceof GatewayError && err.code === 'CEG_INVALID_NAME');
}

/** `err` and its causes (kafkajs wraps a bailed error in KafkaJSNonRetriableError), at most 8. */
function errorChain(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e: unknown = err; e !== undefined && e !== null && out.length < 8; e = (e as { cause?: unknown }).cause) out.push(e);
  return out;
}

/**
 * kafkajs answers one RecordMetadata per partition written (with the base offset of that
 * partition's batch); records of one partition are consecutive in input order, so each record's
 * offset is the base plus its rank within its partition.
 */
function positionsInOrder(topic: string, messages: readonly Message[], metadata: readonly { partition: number; baseOffset?: string; offset?: string }[]): Position[] {
  const next = new Map<number, bigint>();
  for (const m of metadata) next.set(m.partition, BigInt(m.baseOffset ?? m.offset ?? '-1'));
  return messages.map((msg) => {
    const partition = msg.partition ?? -1;
    const offset = next.get(partition);
    if (offset === undefined || offset < 0n) {
      throw new GatewayError('CEG_DELIVERY_TIMEOUT', `broker acknowledged ${topic} without an offset for partition ${partition}`, {
        retriable: true,
        details: { topic, partition, indeterminate: true },
      });
    }
    next.set(partition, offset + 1n);
    return Object.freeze({ topic, partition, offset });
  });
}




function isTopicExists(err: unknown): boolean {
  const e = err as { type?: unknown; errors?: unknown } | null;
  if (e?.type === 'TOPIC_ALREADY_EXISTS') return true;
  return Array.isArray(e?.errors) && e.errors.length > 0 && e.errors.every((x: { type?: unknown }) => x.type === 'TOPIC_ALREADY_EXISTS');
}

/**
 * Whether kafkajs's createTopics failed with INVALID_TOPIC_EXCEPTION: then the topic it names
 * (undefined when the answer names none) and the broker's message.
 */
function invalidTopicOf(err: unknown): { readonly topic?: string; readonly message?: string } | undefined {
  const e = err as { type?: unknown; errors?: unknown; message?: unknown } | null;
  const all = Array.isArray(e?.errors) ? (e.errors as { type?: unknown; topic?: unknown; message?: unknown }[]) : [];
  const hit = all.find((x) => x?.type === 'INVALID_TOPIC_EXCEPTION') ?? (e?.type === 'INVALID_TOPIC_EXCEPTION' ? e : undefined);
  if (hit === undefined) return undefined;
  return { ...('topic' in hit && typeof hit.topic === 'string' ? { topic: hit.topic } : {}), ...(typeof hit.message === 'string' ? { message: hit.message } : {}) };
}

function isUnknownTopic(err: unknown): boolean {
  return (err as { type?: unknown } | null)?.type === 'UNKNOWN_TOPIC_OR_PARTITION';
}

function unknownTopicError(topic: string): Error & { type: string } {
  return Object.assign(new Error(`unknown topic ${topic}`), { type: 'UNKNOWN_TOPIC_OR_PARTITION' });
}

const PRODUCER_STATE_ERRORS = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH', 'INVALID_PRODUCER_ID_MAPPING', 'DUPLICATE_SEQUENCE_NUMBER']);

/** A send the broker refused for good (unknown topic, too large): nothing written, sequence numbers still in step. */
function refusedForGood(err: unknown): boolean {
  const code = fromKafkaError(err, {}).code;
  return code === 'CEG_INVALID_NAME' || code === 'CEG_PAYLOAD_TOO_LARGE';
}

/** True when a kafkajs error (or one it wraps) says the idempotent producer's state is no longer valid. */
function producerStateLost(err: unknown): boolean {
  for (const type of kafkaErrorTypes(err)) if (PRODUCER_STATE_ERRORS.has(type)) return true;
  return false;
}
