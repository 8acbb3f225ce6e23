import { Admin, ConfigResourceTypes, Consumer, Producer } from '@platformatic/kafka';
import { GatewayError } from '../../core/errors.js';
import { assertNoCollision, assertTopicName, invalidTopicRefusal } from '../../core/topic-name.js';
import type { KafkaTransportOptions } from '../kafka/options.js';
import { SESSION_BOUND_NAMES, sessionBounds, tightestBounds } from '../session-bounds.js';
import type { TransportLogger } from '../kafka/logging.js';
import { BROKER_STALL_MS, BrokerOutage, brokerAnswers, checkBrokerHealth, healthFailureOf, quietDuringOutage } from '../kafka/outage.js';
import { PartitionRouter } from '../partition-router.js';
import { commitOffsetsFailure } from '../commit-failure.js';
import { KnownTopics } from '../known-topics.js';
import { isAborted } from '../await.js';
import type {
  CommittedOffset, Consumption, GroupDescription, GroupSpec, OffsetQuery, OffsetTarget, OutboundRecord, PartitionOffset, Position, ProduceOptions,
  HealthFailure, Read, ReadSpec, RecordHandler, TopicSpec, Transport, TransportRecord,
} from '../port.js';
import { abortedProduce, checkCommitOffsets, checkGroupSpec, checkTopicSpec, closedTransport, describedGroup, groupBusy, readFailure } from '../topics.js';
import { baseOptions, closeForced } from './client-options.js';
import { PlatformaticConsumption } from './consumption.js';
import { brokerMessageOf, coordinatorUnavailable, fromPlatformaticError, protocolIds } from './errors.js';
import { whileCoordinatorLoads } from '../coordinator-wait.js';
import { confirmTopicLeaders } from '../topic-leaders.js';
import type { TopicLeaders } from '../topic-leaders.js';
import type { CoordinatorWaitOptions } from '../coordinator-wait.js';
import { listOffsets, tpKey } from './fetcher.js';
import type { OffsetResetCounts } from '../out-of-range.js';
import { startPlatformaticRead } from './read.js';
import { asBuffer, toHeaderMap } from './records.js';
import type { Message } from './sender.js';
import { SerialSender, partitionNotListed } from './sender.js';

/** Group states in which no member is joined (DescribeGroups, as @platformatic/kafka spells them). */
const IDLE_GROUP_STATES = new Set(['EMPTY', 'DEAD']);

/**
 * The transport this module makes: every call of the port, the optional ones too (what
 * ./lazy-transport.ts hands on; a call the port adds must be added there as well, which its
 * `implements Required<Transport>` enforces).
 */
export type PlatformaticTransportCore = Required<Transport>;

/**
 * The @platformatic/kafka transport ({@link PlatformaticTransport}) on options already resolved
 * (resolveKafkaTransportOptions); `offsetResets`: the counts its groups' resets are noted in (those
 * of the transport createPlatformaticTransport returned). Called by ./lazy-transport.ts only, at
 * that transport's first use: importing this module is what loads the library. Never throws.
 */
export function openPlatformaticTransport(opts: KafkaTransportOptions, offsetResets: OffsetResetCounts): PlatformaticTransportCore {
  return new PlatformaticTransport(opts, offsetResets);
}

/**
 * The Kafka transport on @platformatic/kafka ^1.35 (pure JavaScript; the only user of that
 * library). Same semantics as the kafkajs adapter, chosen with `KAFKA_CLIENT=platformatic`.
 * Options: the kafkajs adapter's (resolveKafkaTransportOptions), validated once by
 *   createPlatformaticTransport (./lazy-transport.ts), which creates this at the transport's first use.
 * - Producer: idempotent, acks=all (-1), no compression, no topic auto-creation; keyed records
 *   get their partition from the Java-compatible murmur2 partitioner here, null keys round-robin
 *   per topic; headers go as a Map of Buffers. ONE send in flight, with our own batching of the
 *   calls that wait meanwhile ({@link SerialSender}: why, and the facts about the library's
 *   idempotent producer). After a failed send the next one uses a new producer id.
 * - Consumers: one group member plus one group-less fetcher per `consume()` ({@link PlatformaticConsumption}).
 * - Reads: group-less fetches (`consumer.fetch`), no group joined, created or left behind.
 * - Admin: topics with configs (waiting until every partition has a leader), end offsets, offset resets, configs, group descriptions.
 * Logs: a broker outage once when it starts and once when it ends ({@link BrokerOutage}, issue 15),
 *   as on kafkajs: a produce or health check without an answer for BROKER_STALL_MS, or a warn line
 *   of this adapter about the connection, starts it; its other warn/error lines meanwhile go to debug.
 * Errors: GatewayError mapped by `fromPlatformaticError` (CEG_BROKER_UNAVAILABLE / CEG_DELIVERY_TIMEOUT
 *   retriable; CEG_INVALID_NAME for an unknown topic; CEG_PAYLOAD_TOO_LARGE; CEG_CLOSED after close()).
 * Spec: DESIGN "Kafka mapping" (idempotent producer, acks=all), "Delivery" (groups), "Known traps"; issue 14.
 */
class PlatformaticTransport implements Transport {
  readonly kind = 'kafka' as const;
  readonly #opts: KafkaTransportOptions;
  readonly #admin: Admin;
  /** Group-less client for offset look-ups (never joins a group). */
  readonly #tools: Consumer;
  readonly #sender: SerialSender;
  readonly #consumptions = new Set<PlatformaticConsumption>();
  readonly #reads = new Set<Read>();
  readonly #router: PartitionRouter;
  readonly #known: KnownTopics;
  /** One per transport (issue 15 "Logs"): the producer, health checks and every consumer report to it. */
  readonly #outage: BrokerOutage;
  readonly offsetResets: OffsetResetCounts;
  /** The logger with the outage's rule: warn/error lines go to debug while the broker is down. */
  readonly #log: TransportLogger;
  #closed = false;

  constructor(opts: KafkaTransportOptions, offsetResets: OffsetResetCounts) {
    this.offsetResets = offsetResets;
    this.#outage = new BrokerOutage(opts.logger, { base: { transport: 'kafka', clientId: opts.clientId, brokers: opts.brokers.join(',') }, probe: () => this.#probe(), security: { ssl: opts.ssl !== undefined && opts.ssl !== false, sasl: opts.sasl !== undefined } });
    this.#log = quietDuringOutage(opts.logger, this.#outage);
    this.#opts = { ...opts, logger: this.#log };
    this.#router = new PartitionRouter(opts.metadataMaxAgeMs);
    this.#known = new KnownTopics(opts.metadataMaxAgeMs);
    // A failed attempt the admin client retries (a refused login, a refused connection) is why the
    // health check has not answered yet: kept for lastHealthFailure().
    this.#admin = new Admin(baseOptions(opts, 'admin', (err) => this.#outage.clientFailed(healthFailureOf(err, (e) => fromPlatformaticError(e, { operation: 'health check' }).message))));
    this.#tools = new Consumer({ ...baseOptions(opts, 'tools'), groupId: `${opts.clientId}-tools-never-joined` });
    this.#sender = new SerialSender(
      () =>
        new Producer({
          ...baseOptions(opts),
          // At least 2: the library turns 0 or 1 into "retry forever" for an idempotent producer.
          retries: Math.max(2, opts.retries),
          idempotent: true,
          acks: -1,
          timeout: opts.ackTimeoutMs,
          compression: 'none',
        }),
      this.#log,
    );
  }

  async ensureTopics(wanted: readonly TopicSpec[]): Promise<void> {
    wanted.forEach(checkTopicSpec);
    this.#assertOpen();
    const specs = this.#known.unknown(wanted);
    if (specs.length === 0) return;
    try {
      const existing = new Set(await this.#admin.listTopics());
      const missing = specs.filter((s) => !existing.has(s.name));
      this.#known.exist(specs.filter((s) => existing.has(s.name)).map((s) => s.name));
      if (missing.length === 0) return;
      assertNoCollision(missing.map((s) => s.name), existing);
      let created = 0;
      for (const s of missing) {
        try {
          await this.#admin.createTopics({
            topics: [s.name],
            partitions: s.partitions,
            replicas: -1, // the broker's default.replication.factor
            configs: [
              { name: 'retention.ms', value: String(s.retentionMs) },
              { name: 'cleanup.policy', value: s.cleanupPolicy },
              ...(s.maxMessageBytes === undefined ? [] : [{ name: 'max.message.bytes', value: String(s.maxMessageBytes) }]),
            ],
          });
          created++;
        } catch (err) {
          const ids = protocolIds(err);
          // Names are checked first, but Kafka's INVALID_TOPIC here is not always a '.'/'_' collision
          // with a topic created meanwhile: the topics as they are now tell whether it is one.
          if (ids.has('INVALID_TOPIC_EXCEPTION')) throw invalidTopicRefusal([s.name], await this.#admin.listTopics(), brokerMessageOf(err, 'INVALID_TOPIC_EXCEPTION'), err);
          // Created a moment ago by another client: confirmed below, as a topic created here is.
          if (!ids.has('TOPIC_ALREADY_EXISTS')) throw err;
        }
      }
      // The broker lists a new topic and leads its partitions a moment after CreateTopics answered.
      const names = missing.map((s) => s.name);
      await confirmTopicLeaders(names, (ts) => this.#leadersOf(ts), { withinMs: this.#opts.requestTimeoutMs, lagging: metadataLags });
      this.#known.exist(names);
      this.#opts.logger.info({ transport: 'kafka', topics: names }, created === missing.length ? 'created topics' : 'topics created (some or all meanwhile by another client): confirmed');
    } catch (err) {
      throw fromPlatformaticError(err, { operation: 'ensureTopics', topics: specs.map((s) => s.name) });
    }
  }

  async partitionCount(topic: string): Promise<number> {
    this.#assertOpen();
    assertTopicName(topic);
    return this.#router.count(topic, () => this.#lookUpCount(topic));
  }

  /** The partition count of `topic` from the broker (not the cache). Errors: unknown topic; the broker's, as read failures. */
  async #lookUpCount(topic: string): Promise<number> {
    try {
      const metadata = await this.#admin.metadata({ topics: [topic], forceUpdate: true });
      const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
      if (count === 0) throw unknownTopic(topic);
      return count;
    } catch (err) {
      throw readFailure(fromPlatformaticError(err, { operation: 'partitionCount', topic }));
    }
  }

  async produce(topic: string, records: readonly OutboundRecord[], opts: ProduceOptions = {}): Promise<readonly Position[]> {
    const signal = opts.signal;
    if (signal?.aborted === true) throw abortedProduce(topic, false, signal.reason);
    this.#assertOpen();
    assertTopicName(topic);
    const count = await this.#router.countForRecords(topic, records, () => this.#lookUpCount(topic)).catch((err: unknown) => {
      // Deleted since it was created or listed (an operator removed a dead-letter topic): an
      // ensureTopics after this refusal must look at the broker again, not at what it saw before.
      if (err instanceof GatewayError && err.code === 'CEG_INVALID_NAME') this.#known.forget(topic);
      throw err;
    });
    if (records.length === 0) return [];
    // Routed over the cached count; a partition the topic no longer has (deleted and created again
    // with fewer partitions) is refused by the sender or the broker: routed again over a fresh count.
    return this.#router.sendRouted(topic, records, count, () => this.#lookUpCount(topic), (partitionOf) => this.#send(topic, records, partitionOf, signal), beyondTopic);
  }

  /** One send of `records` to `topic`, each on `partitionOf(record, index)`. Errors: the sender's, mapped. */
  async #send(topic: string, records: readonly OutboundRecord[], partitionOf: (r: OutboundRecord, index: number) => number, signal: AbortSignal | undefined): Promise<readonly Position[]> {
    const now = BigInt(Date.now());
    const messages = records.map((r, index): Message => ({
      topic,
      key: r.key === null ? undefined : asBuffer(r.key),
      value: r.value === null ? undefined : asBuffer(r.value),
      headers: toHeaderMap(r.headers),
      partition: partitionOf(r, index),
      timestamp: r.timestampMs === undefined ? now : BigInt(r.timestampMs),
    }));
    // Aborted while we looked up metadata: nothing has been sent yet.
    if (isAborted(signal)) throw abortedProduce(topic, false, signal?.reason);
    // A paused broker refuses nothing: a request that hangs this long starts the outage's one line.
    const sentAtMs = Date.now();
    const stall = setTimeout(() => this.#outage.failed(`a produce request to ${topic} has had no answer for ${BROKER_STALL_MS} ms`, sentAtMs), BROKER_STALL_MS);
    try {
      const positions = await this.#sender.send(topic, messages, signal);
      this.#outage.ok();
      return positions;
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'CEG_INVALID_NAME') {
        this.#router.forget(topic);
        this.#known.forget(topic);
      }
      // A partition the producer's fresh metadata does not list is no outage: the broker answered.
      if (err instanceof GatewayError && err.code === 'CEG_BROKER_UNAVAILABLE' && !partitionNotListed(err)) this.#outage.failed(`produce: ${err.message}`, sentAtMs);
      throw err;
    } finally {
      clearTimeout(stall);
    }
  }

  async consume(spec: GroupSpec, handler: RecordHandler): Promise<Consumption> {
    checkGroupSpec(spec);
    this.#assertOpen();
    for (const t of spec.topics) await this.partitionCount(t);
    // The group calls of a start meet a coordinator not there yet on a broker just started (or one
    // moving the group): waited for (../coordinator-wait.ts), not failed after the client's few retries.
    const pins = (spec.startFrom ?? 'latest') === 'latest' ? await whileCoordinatorLoads(() => this.#latestPins(spec), this.#coordinatorWait(spec.group, 'consume: start offsets')) : new Map<string, bigint>();
    // Positions fixed by the caller win over this moment's 'latest'; the member uses a pin only for
    // a partition without a commit when it is assigned it (#startOffsets), so no commit moves.
    for (const p of spec.startAt ?? []) if (spec.topics.includes(p.topic)) pins.set(tpKey(p.topic, p.partition), p.offset);
    const topics = [...new Set(spec.topics)];
    // A failed start closed its clients: each attempt is a new member.
    const c = await whileCoordinatorLoads(() => {
      this.#assertOpen();
      return PlatformaticConsumption.start({ ...spec, topics }, handler, this.#opts, pins, () => this.#outage.recovering, this.offsetResets);
    }, this.#coordinatorWait(spec.group, 'consume: first join'));
    this.#consumptions.add(c);
    const forget = (): void => void this.#consumptions.delete(c);
    c.done.then(forget, forget);
    return c;
  }

  async read(spec: ReadSpec, handler: (record: TransportRecord) => Promise<void>): Promise<Read> {
    this.#assertOpen();
    spec.topics.forEach((t) => assertTopicName(t));
    for (const t of spec.topics) await this.partitionCount(t);
    try {
      const r = await startPlatformaticRead(this.#tools, spec, handler, this.#opts);
      this.#reads.add(r);
      const forget = (): void => void this.#reads.delete(r);
      r.done.then(forget, forget);
      return r;
    } catch (err) {
      throw fromPlatformaticError(err, { operation: 'read', topics: spec.topics });
    }
  }

  async endOffsets(topic: string): Promise<readonly PartitionOffset[]> {
    assertTopicName(topic);
    this.#assertOpen();
    await this.partitionCount(topic);
    try {
      const ends = await listOffsets(this.#tools, topic, 'latest');
      return ends.map((offset, partition) => ({ partition, offset }));
    } catch (err) {
      throw readFailure(fromPlatformaticError(err, { operation: 'endOffsets', topic }));
    }
  }

  async resetOffsets(group: string, topic: string, to: OffsetTarget): Promise<void> {
    const offsets = to.kind === 'offset' ? [{ partition: to.partition, offset: to.offset }] : await this.offsetsAt(topic, to);
    await this.commitOffsets(group, topic, offsets);
    this.#opts.logger.info({ transport: 'kafka', group, topic, to: to.kind }, 'reset group offsets');
  }

  async offsetsAt(topic: string, at: OffsetQuery): Promise<readonly PartitionOffset[]> {
    assertTopicName(topic);
    this.#assertOpen();
    const count = await this.partitionCount(topic);
    try {
      let out: PartitionOffset[];
      if (at.kind !== 'timestamp') out = (await listOffsets(this.#tools, topic, at.kind)).map((offset, partition) => ({ partition, offset }));
      else {
        const [byTime, ends] = await Promise.all([listOffsets(this.#tools, topic, { timestampMs: at.timestampMs }), listOffsets(this.#tools, topic, 'latest')]);
        // No record at or after the time: Kafka answers -1; that is the end offset.
        out = byTime.map((offset, partition) => ({ partition, offset: offset < 0n ? (ends[partition] ?? 0n) : offset }));
      }
      // Partitions added since the count was cached: the committed offsets read next must list them too.
      if (out.length > count) this.#router.forget(topic);
      return out;
    } catch (err) {
      throw readFailure(fromPlatformaticError(err, { operation: 'offsetsAt', topic }));
    }
  }

  async committedOffsets(group: string, topic: string): Promise<readonly CommittedOffset[]> {
    const count = await this.partitionCount(topic);
    try {
      const [answer] = await this.#groupCall(group, 'committedOffsets', () => this.#admin.listConsumerGroupOffsets({ groups: [{ groupId: group, topics: [{ name: topic, partitionIndexes: Array.from({ length: count }, (_, i) => i) }] }] }));
      const byPartition = new Map<number, bigint>();
      for (const t of answer?.topics ?? []) if (t.name === topic) for (const p of t.partitions) byPartition.set(p.partitionIndex, p.committedOffset);
      return Array.from({ length: count }, (_, partition) => {
        const o = byPartition.get(partition);
        return { partition, offset: o === undefined || o < 0n ? null : o };
      });
    } catch (err) {
      throw readFailure(fromPlatformaticError(err, { operation: 'committedOffsets', group, topic }));
    }
  }

  async committedOffsetsOf(group: string, topics: readonly string[]): Promise<ReadonlyMap<string, readonly CommittedOffset[]>> {
    const counts = await Promise.all(topics.map((t) => this.partitionCount(t)));
    try {
      const [answer] = await this.#groupCall(group, 'committedOffsets', () => this.#admin.listConsumerGroupOffsets({ groups: [{ groupId: group, topics: topics.map((name, i) => ({ name, partitionIndexes: Array.from({ length: counts[i]! }, (_, p) => p) })) }] }));
      const out = new Map<string, readonly CommittedOffset[]>();
      topics.forEach((topic, i) => {
        const byPartition = new Map<number, bigint>();
        for (const t of answer?.topics ?? []) if (t.name === topic) for (const p of t.partitions) byPartition.set(p.partitionIndex, p.committedOffset);
        out.set(topic, Array.from({ length: counts[i]! }, (_, partition) => {
          const o = byPartition.get(partition);
          return { partition, offset: o === undefined || o < 0n ? null : o };
        }));
      });
      return out;
    } catch (err) {
      throw readFailure(fromPlatformaticError(err, { operation: 'committedOffsets', group, topics }));
    }
  }

  async commitOffsets(group: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void> {
    this.#assertOpen();
    assertTopicName(topic);
    // A partition beyond the cached count may have been added since: asked again before it is refused.
    const count = await this.#router.countCovering(topic, offsets.map((o) => o.partition), () => this.#lookUpCount(topic));
    checkCommitOffsets(topic, count, offsets);
    if (offsets.length === 0) return;
    try {
      await this.#groupCall(group, 'commitOffsets', async () => {
        const state = await this.#groupState(group);
        if (!IDLE_GROUP_STATES.has(state)) throw groupBusy(group, topic, state);
        await this.#admin.alterConsumerGroupOffsets({ groupId: group, topics: [{ name: topic, partitionOffsets: offsets.map((o) => ({ partition: o.partition, offset: o.offset })) }] });
      });
    } catch (err) {
      throw commitOffsetsFailure(err, group, topic, (e) => fromPlatformaticError(e, { operation: 'commitOffsets', group, topic }));
    }
  }

  async groupMembers(group: string): Promise<GroupDescription | undefined> {
    this.#assertOpen();
    if (group === '') return undefined; // no group can be joined under an empty id
    try {
      const g = (await this.#groupCall(group, 'groupMembers', () => this.#admin.describeGroups({ groups: [group] }))).get(group);
      // An unknown group: 'DEAD' with no member (DescribeGroups < v6), or GROUP_ID_NOT_FOUND (v6+).
      return describedGroup(g?.state, g?.members.size ?? 0);
    } catch (err) {
      if (protocolIds(err).has('GROUP_ID_NOT_FOUND')) return undefined;
      throw readFailure(fromPlatformaticError(err, { operation: 'groupMembers', group }));
    }
  }

  async maxMessageBytes(topic: string): Promise<number> {
    assertTopicName(topic);
    this.#assertOpen();
    try {
      const answer = await this.#admin.describeConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configurationKeys: ['max.message.bytes'] }] });
      const value = Number(answer[0]?.configs.find((c) => c.name === 'max.message.bytes')?.value);
      if (!Number.isInteger(value) || value <= 0) throw unknownTopic(topic);
      return value;
    } catch (err) {
      throw readFailure(fromPlatformaticError(err, { operation: 'maxMessageBytes', topic }));
    }
  }

  async groupSessionTimeoutBounds(): Promise<{ readonly minMs: number; readonly maxMs: number } | undefined> {
    this.#assertOpen();
    try {
      // Every broker (any may coordinate the group): the tightest bounds (session-bounds.ts).
      const nodeIds = [...(await this.#admin.metadata({ topics: [] })).brokers.keys()];
      if (nodeIds.length === 0) return undefined;
      const answer = await this.#admin.describeConfigs({ resources: nodeIds.map((id) => ({ resourceType: ConfigResourceTypes.BROKER, resourceName: String(id), configurationKeys: [...SESSION_BOUND_NAMES] })) });
      return tightestBounds(answer.map((r) => sessionBounds((name) => r.configs.find((c) => c.name === name)?.value)));
    } catch (err) {
      const e = fromPlatformaticError(err, { operation: 'groupSessionTimeoutBounds' });
      // Describing the broker needs DESCRIBE_CONFIGS on the cluster, which a gateway's user may lack.
      if (e.details?.reason === 'authorization') return undefined;
      throw readFailure(e);
    }
  }

  async isHealthy(): Promise<boolean> {
    if (this.#closed) return false;
    return checkBrokerHealth(this.#outage, () => this.#admin.metadata({ topics: [], forceUpdate: true }), { requestTimeoutMs: this.#opts.requestTimeoutMs, logger: this.#opts.logger, base: { transport: 'kafka' }, describe: (err) => fromPlatformaticError(err, { operation: 'health check' }).message });
  }

  lastHealthFailure(): HealthFailure | undefined {
    return this.#outage.lastHealthFailure;
  }

  /** The outage's probe: one metadata request; true when the broker answered. */
  async #probe(): Promise<boolean> {
    if (this.#closed) return false;
    return brokerAnswers(() => this.#admin.metadata({ topics: [], forceUpdate: true }), this.#opts.requestTimeoutMs);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#outage.close();
    await Promise.allSettled([...this.#consumptions].map((c) => c.stop()));
    await Promise.allSettled([...this.#reads].map((r) => r.stop()));
    await this.#sender.close(closedTransport(this.kind));
    await Promise.allSettled([this.#admin.close(), closeForced(this.#tools)]);
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
      map: (err) => fromPlatformaticError(err, { operation: operation.startsWith('consume') ? 'consume' : operation, group }),
      initialDelayMs: this.#opts.initialRetryTimeMs,
      maxDelayMs: this.#opts.maxRetryTimeMs,
      logger: this.#opts.logger,
      ...(waitMs === undefined ? {} : { waitMs }),
    };
  }

  /**
   * A group call outside a consumer's start (`operation`: the transport method), tried again while
   * the group's coordinator is not there yet, for up to the option `groupCallCoordinatorWaitMs`
   * (default GROUP_CALL_COORDINATOR_WAIT_MS, 3 s, ../coordinator-wait.ts): the library retries such an answer only `retries` times. Errors:
   * `fn`'s as fromPlatformaticError maps them (a GatewayError as thrown); the bounded wait's
   * retriable CEG_BROKER_UNAVAILABLE.
   */
  #groupCall<T>(group: string, operation: string, fn: () => Promise<T>): Promise<T> {
    return whileCoordinatorLoads(fn, this.#coordinatorWait(group, operation, this.#opts.groupCallCoordinatorWaitMs));
  }

  async #groupState(group: string): Promise<string> {
    try {
      const groups = await this.#admin.describeGroups({ groups: [group] });
      return groups.get(group)?.state ?? 'DEAD';
    } catch (err) {
      if (protocolIds(err).has('GROUP_ID_NOT_FOUND')) return 'DEAD';
      throw err;
    }
  }

  /** Each of `topics`' partition leaders as the broker's metadata has them now (../topic-leaders.ts). Errors: the library's, as thrown. */
  async #leadersOf(topics: readonly string[]): Promise<TopicLeaders> {
    const metadata = await this.#admin.metadata({ topics: [...topics], forceUpdate: true });
    return new Map(topics.map((t) => {
      const m = metadata.topics.get(t);
      return [t, m === undefined ? undefined : Array.from({ length: m.partitionsCount }, (_, i) => m.partitions[i]?.leader ?? -1)] as const;
    }));
  }

  /**
   * For a group that has no member and no commit on a partition, the offsets at which it starts
   * ('latest' as of this call), so records produced after consume() resolves are never skipped. On
   * a topic where the group has a commit on another partition, such a partition was added to the
   * topic since the group began (the group stores a start on every partition when it first gets
   * it): it starts at its log start.
   */
  async #latestPins(spec: GroupSpec): Promise<Map<string, bigint>> {
    const pins = new Map<string, bigint>();
    try {
      if (!IDLE_GROUP_STATES.has(await this.#groupState(spec.group))) return pins;
      const [answer] = await this.#admin.listConsumerGroupOffsets({ groups: [{ groupId: spec.group, topics: null }] });
      const committed = new Map<string, bigint>();
      for (const t of answer?.topics ?? []) for (const p of t.partitions) committed.set(tpKey(t.name, p.partitionIndex), p.committedOffset);
      for (const topic of spec.topics) {
        const ends = await listOffsets(this.#tools, topic, 'latest');
        const isOpen = (partition: number): boolean => {
          const c = committed.get(tpKey(topic, partition));
          return c === undefined || c < 0n;
        };
        // The group read this topic before: its partitions without a commit were added since, and
        // start at their log start (latest would skip what was written there meanwhile).
        const readBefore = ends.some((_end, partition) => !isOpen(partition));
        const starts = readBefore ? await listOffsets(this.#tools, topic, 'earliest') : ends;
        ends.forEach((end, partition) => {
          if (isOpen(partition)) pins.set(tpKey(topic, partition), readBefore ? (starts[partition] ?? 0n) : end);
        });
      }
      return pins;
    } catch (err) {
      throw fromPlatformaticError(err, { operation: 'consume', group: spec.group });
    }
  }
}

/** Ids of the broker's answers that it does not lead a partition (yet). */
const LEADER_MOVING_IDS = new Set(['LEADER_NOT_AVAILABLE', 'NOT_LEADER_OR_FOLLOWER', 'REPLICA_NOT_AVAILABLE', 'FENCED_LEADER_EPOCH', 'UNKNOWN_LEADER_EPOCH']);

/**
 * Whether a metadata look-up of a topic just created failed only because the broker's answer lags:
 * the topic unknown yet (the library's "Unknown topic" UserError or the broker's code), or no leader yet.
 */
function metadataLags(err: unknown): boolean {
  if (fromPlatformaticError(err, {}).details.topicMissing === true) return true;
  for (const id of protocolIds(err)) if (LEADER_MOVING_IDS.has(id)) return true;
  return false;
}

function unknownTopic(topic: string): Error & { apiId: string } {
  return Object.assign(new Error(`unknown topic ${topic}`), { apiId: 'UNKNOWN_TOPIC_OR_PARTITION' });
}



/**
 * A send refused for a partition the topic does not have now: the sender's fresh metadata does not
 * list it, or the broker called it unknown (UNKNOWN_TOPIC_OR_PARTITION, mapped CEG_INVALID_NAME;
 * whether the topic itself is gone the count's look-up then tells).
 */
function beyondTopic(err: unknown): boolean {
  return partitionNotListed(err) || (err instanceof GatewayError && err.code === 'CEG_INVALID_NAME');
}
