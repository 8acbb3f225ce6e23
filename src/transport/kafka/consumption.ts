import type { Consumer, ConsumerRunConfig, EachBatchPayload, Kafka, PartitionAssigner } from 'kafkajs';
import { kafkajs } from './kafkajs.js';
import { errorMessage } from '../../core/errors.js';
import { isRoutineCommitFailure } from '../commit-failure.js';
import { GROUP_PROTOCOL_NAMES } from '../group-protocols.js';
import { sleep } from '../../core/retry.js';
import type { Consumption, GroupSpec, RecordContext, RecordHandler, TransportRecord } from '../port.js';
import { RecordRunner } from '../record-runner.js';
import { PartitionLane } from '../in-flight-window.js';
import type { LaneOrder } from '../in-flight-window.js';
import { LANE_HIGH, LanePump } from '../lane-pump.js';
import { fromKafkaError } from './errors.js';
import { toRecord } from './headers.js';
import type { KafkaTransportOptions } from './options.js';
import type { KafkaLogTaps } from './logging.js';
import { outOfRangeReset, outOfRangeWarning } from '../out-of-range.js';
import type { OffsetResetCounts } from '../out-of-range.js';
import { logRejoin, rejoinDelayMs } from '../rejoin.js';
import { topicMissing } from '../topics.js';
import { neverRejects } from '../../core/never-rejects.js';

type Assignment = readonly { readonly topic: string; readonly partition: number }[];

/** Where a new 'latest' group starts, per `topic\0partition`, fixed before it first joins. */
export type LatestPins = ReadonlyMap<string, string>;

/** Of these partitions, the `topic\0partition` keys on which the group has no committed offset now. */
export type UncommittedLookup = (partitions: Assignment) => Promise<ReadonlySet<string>>;

/** What a consumption asks its transport. */
export interface ConsumptionLinks {
  /** The committed offsets of pinned partitions (and added ones, see `startCounts`) a later join hands this member. */
  readonly uncommitted?: UncommittedLookup;
  /**
   * Partition counts per topic when consume() was called: a partition at or past its topic's count
   * that a later join hands this member was added to the topic since; without a commit it starts
   * at its log start (`logRanges`), not where kafkajs would start it (`latest`: records written there
   * before a member got it were skipped; breaker, 2026-12-06). Needs `uncommitted` and `logRanges`.
   */
  readonly startCounts?: ReadonlyMap<string, number>;
  /** The log start and end offsets of each partition of `topic`, decimal text by partition. */
  readonly logRanges?: (topic: string) => Promise<ReadonlyMap<number, { readonly low: string; readonly high: string }>>;
  /** The consumer's log taps (logging.ts): the consumption takes kafkajs's out-of-range resets (#outOfRange). Needs `logRanges`. */
  readonly taps?: KafkaLogTaps;
  /** true while the broker is out or the clients recover from an outage (BrokerOutage.recovering). */
  readonly recovering?: () => boolean;
  /** Where out-of-range resets are counted. */
  readonly resets?: OffsetResetCounts;
  /**
   * Stores the offsets of records processed but not committed when kafkajs stopped this member for
   * good (it left the group before the lanes could commit in it): a commit outside the group, which
   * Kafka takes only while the group has no members (kafka-transport.ts, commit-offsets.ts).
   * Without it (or when it is refused) those records come again to the next owner (at-least-once).
   */
  readonly commitAfterCrash?: (offsets: readonly { readonly topic: string; readonly partition: number; readonly offset: string }[]) => Promise<void>;
}

/**
 * kafkajs's round robin under each of {@link GROUP_PROTOCOL_NAMES} (src/transport/group-protocols.ts):
 * the same assignment, offered under the name @platformatic/kafka and Java use and under kafkajs's own.
 */
export function roundRobinAssigners(): PartitionAssigner[] {
  const roundRobin = kafkajs().PartitionAssigners.roundRobin;
  // kafkajs's assigner reads its name and version through `this` (assign, protocol): a copy with another name.
  return GROUP_PROTOCOL_NAMES.map((name): PartitionAssigner => (config) => ({ ...roundRobin(config), name }));
}

const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;
const fromKey = (k: string): { topic: string; partitions: number[] } => {
  const at = k.lastIndexOf('\u0000');
  return { topic: k.slice(0, at), partitions: [Number(k.slice(at + 1))] };
};

/** Rejections carry Errors; anything else thrown by a handler is wrapped (kept as `cause`). */
const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err), { cause: err }));

/**
 * kafkajs's fetch wait for every consumption, ms (at most the transport's `maxWaitTimeMs`): how
 * long a partition resumed after backpressure or after a redelivery wait can wait for its next
 * fetch. kafkajs cannot cut a fetch under way (a long poll of the other partitions, or its sleep
 * when every partition is paused) short on resume(), and any consumption's handler may ask for a
 * redelivery (a retry in place, a retry-topic record not yet due, a transient decode failure).
 * With 1 s long polls (measured on Kafka 4.1.1, a 200 ms backoff, gaps between attempts):
 * - an unordered subscription's retry-topic record, fetched before it is due: ~1,030 ms;
 * - an ordered bus subscriber without lanes retrying in place: 1,004–1,025 ms;
 * - a lane paused for backpressure: half a batched push subscription's time idle (issue 8).
 * With this wait: 204–253 ms (test/integration/subscriptions/retry-backoff-timing.kafka.test.ts).
 * The price: an idle consumption polls its broker up to 10 times a second instead of once (one
 * empty Fetch request per 100 ms per broker it reads from). The @platformatic/kafka adapter plans
 * each fetch itself (../platformatic/fetch-plan.ts) and keeps long polls when nothing waits.
 */
export const KAFKAJS_MAX_WAIT_MS = 100;

/** kafkajs's `maxWaitTimeInMs` for a consumption, ms: the transport's, cut to {@link KAFKAJS_MAX_WAIT_MS}. */
export function kafkajsMaxWaitMs(maxWaitTimeMs: number): number {
  return Math.min(maxWaitTimeMs, KAFKAJS_MAX_WAIT_MS);
}

/** Tries of the commit look-up of pinned partitions at a later join (#seekOpenPins), 250 ms apart, doubling. */
const PIN_LOOKUP_ATTEMPTS = 5;

/**
 * One `consume()` call on Kafka: one kafkajs consumer in group `spec.group`.
 * - Every consumption runs per-partition lanes (see #laned; src/transport/in-flight-window.ts,
 *   lane-pump.ts): `eachBatch` takes the fetched records into their partition's lane and returns at
 *   once, so fetching goes on while records are in hand — a slow or hanging record holds back its
 *   own partition only. kafkajs fetches again only after every batch of its last fetch returned:
 *   a handler awaited inside `eachBatch` held back every other partition (tester report D1).
 * - Records of a partition are handled one at a time in offset order (lanes one record wide);
 *   with `inFlightPerPartition`, up to that many of one partition at once (by key with
 *   `perKeyOrder`; one at a time on `serialTopics`). Over all partitions at most
 *   `partitionsConcurrently` (default `partitionsConsumedConcurrently`, 3) records are in hand,
 *   and a place freed goes to the next partition waiting at once (round robin), not when the
 *   slowest record of a fetch ends (D6). Fetches wait at most {@link KAFKAJS_MAX_WAIT_MS}.
 * - Commits: kafkajs's autoCommit is off (taken records are resolved, which moves kafkajs's fetch
 *   position); the lanes commit each partition's lowest unfinished offset every
 *   `commitEveryRecords` records or `commitIntervalMs`, when kafkajs is about to rejoin after a
 *   rebalance, and before leaving. A commit never passes a record not yet processed (at-least-once).
 * - `redeliver`: the partition is seeked back to the record and paused; after the wait it
 *   resumes from there. The fetch loop keeps heartbeating (its fetches go on), so a wait or a
 *   record in hand longer than the session timeout causes no rebalance.
 * - stop(): the records in hand see their signal aborted; after `stopTimeoutMs` a record still in
 *   hand is left unresolved (it comes again) and the member leaves regardless of the handler.
 * - A handler rejection halts the partition's lane, lets records in flight on other partitions
 *   finish, disconnects (leaving the group) and rejects `done`; the failed record is not committed.
 * - A member that joined once and is stopped by kafkajs for good on a failure the transport calls
 *   retriable ({@link fromKafkaError}: kafkajs gives up finding the group coordinator of a stalled
 *   broker with a "non-retriable" KafkaJSGroupCoordinatorNotFound, and restarts at most
 *   `maxRestarts` times in a row on its own) joins its group again after a backoff
 *   (`initialRetryTimeMs` doubling up to `maxRetryTimeMs`), each rejoin counted and logged
 *   (#rejoinLater): a running subscription does not end for a cause that waiting cures (a member
 *   ended 1 in 3 runs of a broker stall, test/integration/start-offsets-stall.kafka.test.ts).
 *   A failure that is not retriable (a refused login, an ACL) rejects `done`, as does any failure
 *   before the first join (consume() rejects then).
 * Spec: bus spec S1, S3 (commit after handling), T4, T9; DESIGN "Known traps" (commit only
 *   processed offsets, commit before leaving a generation, bound restarts, surface a dead consumer,
 *   a sleeping eachBatch holds up every partition); issue 7 (batched commits, non-blocking retries,
 *   bounded stop).
 */
export class KafkaConsumption implements Consumption {
  readonly group: string;
  readonly done: Promise<void>;
  readonly #consumer: Consumer;
  readonly #opts: KafkaTransportOptions;
  /** Where partitions without a commit start: the pins given, and the log starts of added partitions once looked up. */
  readonly #pins: Map<string, string>;
  readonly #uncommitted: UncommittedLookup | undefined;
  readonly #startCounts: ReadonlyMap<string, number>;
  readonly #logRanges: ((topic: string) => Promise<ReadonlyMap<number, { readonly low: string; readonly high: string }>>) | undefined;
  /** Partitions kafkajs said are out of range, being moved to their log start (#outOfRange). */
  readonly #resetting = new Set<string>();
  readonly #resets: OffsetResetCounts | undefined;
  /** Pinned partitions known to have a commit (or whose pin this member stored): no lookup at later joins. */
  readonly #pinsSettled = new Set<string>();
  /** Pinned partitions paused at the latest join until the lookup of their commits answers. */
  #pinWait: readonly string[] = [];
  readonly #batches = new Set<Promise<void>>();
  readonly #handledOnce = new Set<string>();
  #assignment: Assignment = [];
  #joins = 0;
  #restarts = 0;
  /** Rejoins this member made after kafkajs stopped it on a retriable failure (#rejoinLater), in all and since its last join. */
  #rejoins = 0;
  #rejoinsSinceJoin = 0;
  #rejoinTimer: NodeJS.Timeout | undefined;
  /** kafkajs's run() options, kept for a rejoin. */
  #runConfig: ConsumerRunConfig | undefined;
  #stopping = false;
  /** kafkajs stopped this member for good (CRASH, restart false): it is disconnected and no longer in its group. */
  #crashed = false;
  /** Ended because kafkajs found a topic it reads missing (see {@link endedOnMissingTopic}). */
  #missingTopic = false;
  readonly #commitAfterCrash: ConsumptionLinks['commitAfterCrash'];
  #failure: { readonly err: unknown } | undefined;
  #stopped: Promise<void> | undefined;
  #settle!: (failure: { readonly err: unknown } | undefined) => void;
  #onJoin: (() => void) | undefined;
  #onDeath: ((err: unknown) => void) | undefined;
  readonly #removers: (() => void)[] = [];
  readonly #runner: RecordRunner;
  readonly #commitEveryRecords: number;
  readonly #commitIntervalMs: number;
  #sinceCommit = 0;
  #lastCommitCheck = Date.now();
  /** Lane width: `inFlightPerPartition`, else 1 (see #laned: every consumption runs lanes). */
  readonly #window: number;
  readonly #serialTopics: ReadonlySet<string>;
  readonly #laneOrder: LaneOrder;
  /** One lane per partition held, and what starts their records (see #laned). */
  readonly #pump: LanePump<TransportRecord>;
  #laneHeartbeat: (() => Promise<void>) | undefined;
  readonly #laneCtx: RecordContext;
  #laneCommitTimer: NodeJS.Timeout | undefined;
  #laneCommitting: Promise<void> | undefined;
  #laneCommitAgain = false;
  readonly #recovering: () => boolean;

  private constructor(kafka: Kafka, spec: GroupSpec, handler: RecordHandler, opts: KafkaTransportOptions, pins: LatestPins, links: ConsumptionLinks) {
    this.group = spec.group;
    this.#opts = opts;
    this.#pins = new Map(pins);
    this.#uncommitted = links.uncommitted;
    this.#startCounts = links.startCounts ?? new Map();
    this.#logRanges = links.logRanges;
    this.#resets = links.resets;
    this.#commitAfterCrash = links.commitAfterCrash;
    if (links.taps !== undefined) {
      links.taps.offsetOutOfRange = (tp) => {
        if (tp.groupId === this.group) this.#outOfRange(tp.topic, tp.partition);
      };
    }
    this.#recovering = links.recovering ?? (() => false);
    this.#runner = new RecordRunner({ handler, stopTimeoutMs: spec.stopTimeoutMs ?? 5000, log: opts.logger, group: spec.group, onFailure: (err) => this.#fail(err) });
    this.#commitEveryRecords = spec.commitEveryRecords ?? 500;
    this.#commitIntervalMs = spec.commitIntervalMs ?? 1000;
    // Without an in-flight window: lanes one record wide (one record at a time per partition, in offset order).
    this.#window = Math.max(1, Math.floor(spec.inFlightPerPartition ?? 1));
    this.#serialTopics = new Set(spec.serialTopics ?? []);
    this.#laneOrder = spec.perKeyOrder === true ? 'key' : 'offset';
    this.#laneCtx = { signal: this.#runner.signal, heartbeat: () => this.#laneHeartbeat?.() ?? Promise.resolve() };
    this.#pump = new LanePump<TransportRecord>(spec.partitionsConcurrently ?? opts.partitionsConsumedConcurrently, {
      run: (r, lane, then) => this.#runner.runThen(r, this.#laneContext(lane), then, lane),
      fault: (err) => this.#fail(err),
      stopping: () => this.#stopping,
      processed: () => this.#laneProcessed(),
      redeliver: (lane, r) => this.#redeliverLane(lane, r),
      unpause: (lane) => {
        lane.paused = false;
        this.#consumer.resume([{ topic: lane.topic, partitions: [lane.partition] }]);
      },
    });
    this.done = new Promise<void>((resolve, reject) => {
      this.#settle = (f) => (f === undefined ? resolve() : reject(asError(f.err)));
    });
    this.done.catch(() => undefined); // nobody has to observe `done`
    this.#consumer = kafka.consumer({
      groupId: spec.group,
      // The same protocol names as the other adapter: a group may have members on both clients.
      partitionAssigners: roundRobinAssigners(),
      sessionTimeout: opts.sessionTimeoutMs,
      heartbeatInterval: opts.heartbeatIntervalMs,
      rebalanceTimeout: opts.rebalanceTimeoutMs,
      // Short: a partition resumed after a redelivery wait or backpressure is fetched again soon (KAFKAJS_MAX_WAIT_MS).
      maxWaitTimeInMs: kafkajsMaxWaitMs(opts.maxWaitTimeMs),
      allowAutoTopicCreation: false,
      // Kafka's metadata.max.age.ms (30 s here, 5 min kafkajs's default): on its refresh kafkajs sees
      // partitions added to a topic it reads and joins again, so they are taken up.
      metadataMaxAge: opts.metadataMaxAgeMs,
      retry: {
        retries: opts.retries,
        initialRetryTime: opts.initialRetryTimeMs,
        maxRetryTime: opts.maxRetryTimeMs,
        restartOnFailure: (err) => Promise.resolve(this.#mayRestart(err)),
      },
    });
  }

  /**
   * Connects, subscribes and runs the consumer; resolves once the GROUP_JOIN event reports this
   * member's assignment. Errors: GatewayError mapped by {@link fromKafkaError} (e.g.
   * CEG_BROKER_UNAVAILABLE, retriable) when the member cannot join; the consumer is disconnected.
   */
  static async start(kafka: Kafka, spec: GroupSpec, handler: RecordHandler, opts: KafkaTransportOptions, pins: LatestPins, links: ConsumptionLinks = {}): Promise<KafkaConsumption> {
    const c = new KafkaConsumption(kafka, spec, handler, opts, pins, links);
    try {
      await c.#run(spec);
    } catch (err) {
      c.#stopping = true;
      await c.#consumer.disconnect().catch(() => undefined);
      c.#cleanup();
      throw fromKafkaError(err, { operation: 'consume', group: spec.group, topics: spec.topics });
    }
    return c;
  }

  assignments(): Assignment {
    return this.#assignment;
  }

  joins(): number {
    return this.#joins;
  }

  /**
   * True once this member ended because kafkajs found a topic it reads missing (deleted): kafkajs
   * refreshes the metadata of all its subscribed topics as one request, so one missing topic fails
   * them all and no restart of the same member gets past it. The transport then starts a new member
   * on the topics that exist (./missing-topics.ts). False for every other end (a handler's failure,
   * even one that names a missing topic, is not this member's topic set).
   */
  get endedOnMissingTopic(): boolean {
    return this.#missingTopic;
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#shutdown();
    return this.#stopped;
  }

  async #run(spec: GroupSpec): Promise<void> {
    const { GROUP_JOIN, CRASH, REBALANCING } = this.#consumer.events;
    const joined = new Promise<void>((resolve, reject) => {
      this.#onJoin = resolve;
      this.#onDeath = reject;
    });
    this.#removers.push(
      this.#consumer.on(GROUP_JOIN, (e) => {
        this.#assignment = Object.freeze(
          Object.entries(e.payload.memberAssignment)
            .flatMap(([topic, partitions]) => partitions.map((partition) => Object.freeze({ topic, partition })))
            .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1)),
        );
        this.#restarts = 0;
        this.#rejoinsSinceJoin = 0;
        // Joined again after a crash it waited out (#rejoinLater): in the group again, it commits there.
        this.#crashed = false;
        this.#revokeLanes();
        // Synchronous inside kafkajs's join, so the seek is in place before the first fetch.
        if (this.#joins++ === 0) this.#seekPins();
        else this.#pinLaterJoin();
        this.#opts.logger.debug({ group: this.group, assignment: this.#assignment.map((a) => `${a.topic}/${a.partition}`) }, 'consumer joined its group');
        this.#onJoin?.();
      }),
      // Emitted just before kafkajs rejoins: what the lanes processed is stored while this member
      // still belongs to the old generation (as kafkajs's autoCommit did before rejoining), so the
      // next owner of a partition given up does not get it again. A commit refused (the generation
      // already over) is logged at debug; the next owner starts at the last commit then.
      this.#consumer.on(REBALANCING, () => {
        if (!this.#stopping) neverRejects(this.#commitLanes());
      }),
      this.#consumer.on(CRASH, (e) => {
        this.#assignment = [];
        const err = e.payload.error;
        this.#opts.logger.error({ group: this.group, err: errorMessage(err), restart: e.payload.restart }, 'kafka consumer crashed');
        if (e.payload.restart || this.#stopping) return;
        this.#crashed = true;
        const mapped = fromKafkaError(err, { operation: 'consume', group: this.group });
        if (topicMissing(mapped)) this.#missingTopic = true;
        // Joined once (#onDeath cleared): a retriable cause is waited out, see #rejoinLater.
        if (mapped.retriable && this.#onDeath === undefined) this.#rejoinLater(err);
        else this.#fail(mapped);
      }),
    );
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topics: [...spec.topics], fromBeginning: spec.startFrom === 'earliest' });
    this.#runConfig = {
      // The lanes commit (kafkajs would commit every taken record: taken records are resolved).
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: spec.partitionsConcurrently ?? this.#opts.partitionsConsumedConcurrently,
      eachBatch: (payload) => this.#track(this.#eachBatch(payload)),
    };
    await this.#consumer.run(this.#runConfig);
    await joined;
    this.#onDeath = undefined;
    await this.#commitPins();
  }

  /** A new 'latest' group starts where the log ended when consume() was called (not at fetch time). */
  #seekPins(): void {
    for (const { topic, partition } of this.#assignment) {
      const offset = this.#pins.get(tpKey(topic, partition));
      if (offset !== undefined) this.#consumer.seek({ topic, partition, offset });
    }
  }

  /**
   * A later join (GroupSpec.startAt): a pinned partition this member now holds may still have no
   * commit (its earlier owner left without one), and kafkajs would start it at `latest` as of now,
   * skipping what was written since the pin. Such partitions stay paused until the commits are
   * looked up; those still without one are seeked to their pin (and it is stored), the rest go on
   * from their commit. Synchronous part inside kafkajs's join, like #seekPins.
   */
  #pinLaterJoin(): void {
    const earlier = this.#pinWait;
    const wanted = this.#uncommitted === undefined ? [] : this.#assignment.filter(({ topic, partition }) => {
      const k = tpKey(topic, partition);
      if (this.#pinsSettled.has(k) || this.#handledOnce.has(k) || this.#pump.lanes.has(k)) return false;
      // Pinned, or added to the topic since consume() (its log start is looked up with the commits).
      return this.#pins.has(k) || (this.#logRanges !== undefined && partition >= (this.#startCounts.get(topic) ?? Number.POSITIVE_INFINITY));
    });
    this.#pinWait = wanted.map((a) => tpKey(a.topic, a.partition));
    // Paused by an earlier join's lookup and not waited for now: kafkajs keeps a pause across joins.
    for (const k of earlier) if (!this.#pinWait.includes(k)) this.#consumer.resume([fromKey(k)]);
    if (wanted.length === 0) return;
    for (const { topic, partition } of wanted) this.#consumer.pause([{ topic, partitions: [partition] }]);
    this.#seekOpenPins(wanted, this.#joins).catch((err: unknown) => {
      // seek/resume refused (the consumer stopping under it): nothing to hold paused any more.
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'could not move pinned partitions to their start after a rebalance');
      try {
        for (const { topic, partition } of wanted) this.#consumer.resume([{ topic, partitions: [partition] }]);
      } catch {
        // not running: its partitions go with it
      }
    });
  }

  async #seekOpenPins(wanted: Assignment, joins: number): Promise<void> {
    let open: ReadonlySet<string>;
    /** The look-up failed for good: nothing is known of their commits, and none is taken as settled. */
    let unknown = false;
    // A rebalance right after a broker outage (or during a stall) finds the coordinator still
    // recovering: the look-up is tried again while that lasts, the partitions paused meanwhile
    // (#whileHeld). Given up, they went on as kafkajs starts them — at `latest` for a partition
    // without a commit, skipping what was written on it since (start-offsets-stall, kafkajs).
    try {
      const found = await this.#whileHeld(() => this.#uncommitted!(wanted), joins, 'the commits of pinned partitions after a rebalance');
      if (found === undefined) return; // a later join took them over
      open = found;
    } catch (err) {
      // Not retriable: they go on as kafkajs starts them; a later join looks them up again.
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'could not look up the commits of pinned partitions after a rebalance');
      open = new Set();
      unknown = true;
    }
    if (this.#joins !== joins || this.#stopping) return; // a later join took them over
    // Added partitions still without a commit: pinned at their log start (kept for later joins).
    const unpinned = wanted.filter(({ topic, partition }) => open.has(tpKey(topic, partition)) && !this.#pins.has(tpKey(topic, partition)));
    for (const topic of new Set(unpinned.map((u) => u.topic))) {
      let starts: ReadonlyMap<number, { readonly low: string }> | undefined;
      try {
        starts = await this.#whileHeld(() => this.#logRanges!(topic), joins, 'the log start of partitions added to a topic');
        if (starts === undefined) return; // a later join took them over
      } catch (err) {
        this.#opts.logger.warn({ group: this.group, topic, err: errorMessage(err) }, 'could not look up the log start of partitions added to a topic; they start where kafkajs starts them');
        continue;
      }
      for (const u of unpinned) if (u.topic === topic && starts.has(u.partition)) this.#pins.set(tpKey(topic, u.partition), starts.get(u.partition)!.low);
    }
    if (this.#joins !== joins || this.#stopping) return; // a later join took them over
    const offsets = wanted
      .filter(({ topic, partition }) => open.has(tpKey(topic, partition)) && this.#pins.has(tpKey(topic, partition)))
      .map(({ topic, partition }) => ({ topic, partition, offset: this.#pins.get(tpKey(topic, partition))! }));
    for (const o of offsets) this.#consumer.seek(o);
    if (!unknown) for (const { topic, partition } of wanted) if (!open.has(tpKey(topic, partition))) this.#pinsSettled.add(tpKey(topic, partition));
    this.#pinWait = [];
    for (const { topic, partition } of wanted) this.#consumer.resume([{ topic, partitions: [partition] }]);
    if (offsets.length === 0) return;
    try {
      await this.#consumer.commitOffsets(offsets);
      for (const o of offsets) this.#pinsSettled.add(tpKey(o.topic, o.partition));
    } catch (err) {
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'could not store the start offsets of pinned partitions after a rebalance');
    }
  }

  /**
   * `lookup` for partitions held paused since join number `joins`, tried again while it fails
   * retriably ({@link fromKafkaError}: a broker stalled or recovering), 250 ms doubling up to
   * `maxRetryTimeMs` apart, as long as no later join took the partitions over and the member is not
   * stopping; a warning once it failed {@link PIN_LOOKUP_ATTEMPTS} times (they stay paused).
   * Undefined when a later join or a stop came meanwhile.
   * Errors: the first failure that is not retriable, as thrown.
   */
  async #whileHeld<T>(lookup: () => Promise<T>, joins: number, what: string): Promise<T | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await lookup();
      } catch (err) {
        if (this.#joins !== joins || this.#stopping) return undefined;
        if (!fromKafkaError(err, { operation: 'consume', group: this.group }).retriable) throw err;
        if (attempt === PIN_LOOKUP_ATTEMPTS) this.#opts.logger.warn({ group: this.group, err: errorMessage(err), attempts: attempt }, `could not look up ${what}; the partitions stay paused, trying again`);
        await sleep(Math.min(this.#opts.maxRetryTimeMs, 250 * 2 ** Math.min(attempt - 1, 10)));
        if (this.#joins !== joins || this.#stopping) return undefined;
      }
    }
  }

  /**
   * kafkajs found the fetch offset of a partition this member runs out of range (records deleted
   * under a lagging member, a topic created again under a running one) and is resetting it to its
   * `fromBeginning` default: the end for a 'latest' subscription, which skipped every record still
   * in the log with one kafkajs error line (kafkajs tells of it only in its log: logging.ts
   * KafkaLogTaps). Called synchronously before that reset's first request: the partition is paused,
   * its log start and end are looked up, and it goes on from its log start ({@link outOfRangeReset}:
   * Kafka's `auto.offset.reset=earliest`, as on the @platformatic/kafka adapter and at a member's
   * start, kafka-transport.ts #idleGroupPins), with the same warning naming the offsets lost; the new
   * position is committed at once (kafkajs's reset stored its default as the group's offset). The
   * seek is applied at the partition's next fetch, which comes after kafkajs's reset (kafkajs fetches
   * from a broker one request at a time and recovers inside that fetch). The lane of the old range is
   * replaced: going back (a topic created again) it would skip the new records as taken. A look-up
   * that fails is tried {@link PIN_LOOKUP_ATTEMPTS} times; then the partition goes on where kafkajs put it.
   * Spec: Kafka consumer `auto.offset.reset`; docs/subscriptions.md "When records vanish under a subscription".
   */
  #outOfRange(topic: string, partition: number): void {
    const key = tpKey(topic, partition);
    if (this.#stopping || this.#logRanges === undefined || this.#resetting.has(key) || !this.#holds(topic, partition)) return;
    this.#resetting.add(key);
    // Where it fetched from: the lane's next offset (after a redelivery, the record to come again);
    // unknown when nothing of it was taken since this member got it (kafkajs's reset overwrites the commit).
    const position = this.#pump.lanes.get(key)?.next;
    this.#consumer.pause([{ topic, partitions: [partition] }]);
    this.#resetToLogStart(topic, partition, position)
      .catch((err: unknown) => this.#opts.logger.warn({ group: this.group, topic, partition, err: errorMessage(err) }, 'offset out of range: could not move the partition to its log start'))
      .finally(() => this.#resetting.delete(key));
  }

  #holds(topic: string, partition: number): boolean {
    return this.#assignment.some((a) => a.topic === topic && a.partition === partition);
  }

  async #resetToLogStart(topic: string, partition: number, position: bigint | undefined): Promise<void> {
    const key = tpKey(topic, partition);
    let range: { readonly low: string; readonly high: string } | undefined;
    for (let attempt = 1; range === undefined; attempt++) {
      try {
        range = (await this.#logRanges!(topic)).get(partition);
        if (range === undefined) throw new Error(`no offsets for ${topic} partition ${partition}`);
      } catch (err) {
        if (this.#stopping) return;
        if (attempt < PIN_LOOKUP_ATTEMPTS) {
          await sleep(250 * 2 ** (attempt - 1));
          continue;
        }
        this.#opts.logger.warn({ group: this.group, topic, partition, err: errorMessage(err), attempts: attempt }, 'offset out of range: could not look up the log start; the partition goes on where kafkajs reset it');
        this.#resumeUnlessHeld(key, topic, partition);
        return;
      }
    }
    if (this.#stopping || !this.#holds(topic, partition)) return; // given up meanwhile: its new owner starts from the group's commit
    const logStart = BigInt(range.low);
    const end = BigInt(range.high);
    const reset = position === undefined ? { to: logStart, lost: undefined, why: 'position-unknown' as const } : outOfRangeReset(position, logStart, end);
    // In range by now (the log grew past it): back where it was, kafkajs's reset undone.
    const to = reset?.to ?? position!;
    this.#consumer.seek({ topic, partition, offset: to.toString() });
    const lane = this.#pump.lanes.get(key);
    if (lane !== undefined && lane.commitOffset() !== to) {
      lane.revoke();
      this.#pump.lanes.delete(key);
    }
    this.#resumeUnlessHeld(key, topic, partition);
    if (reset !== undefined) {
      this.#opts.logger.warn(
        { group: this.group, topic, partition, offset: position?.toString() ?? 'unknown', logStart: range.low, end: range.high, lost: reset.lost?.toString() ?? 'unknown', reason: reset.why },
        outOfRangeWarning(reset.why),
      );
      this.#resets?.note(this.group, reset.why);
    }
    try {
      await this.#consumer.commitOffsets([{ topic, partition, offset: to.toString() }]);
    } catch (err) {
      this.#opts.logger.warn({ group: this.group, topic, partition, err: errorMessage(err) }, 'offset out of range: could not store the new position; the next commit of the partition stores it');
    }
  }

  /** Resumes a partition paused by #outOfRange, unless its lane holds it paused (backpressure, a redelivery wait). */
  #resumeUnlessHeld(key: string, topic: string, partition: number): void {
    if (this.#pump.lanes.get(key)?.paused === true) return;
    this.#consumer.resume([{ topic, partitions: [partition] }]);
  }

  /** Stores the pinned start offsets, so a later owner of a still-unhandled partition cannot skip. */
  async #commitPins(): Promise<void> {
    const offsets = this.#assignment
      .filter(({ topic, partition }) => this.#pins.has(tpKey(topic, partition)) && !this.#handledOnce.has(tpKey(topic, partition)))
      .map(({ topic, partition }) => ({ topic, partition, offset: this.#pins.get(tpKey(topic, partition))! }));
    if (offsets.length === 0) return;
    try {
      await this.#consumer.commitOffsets(offsets);
    } catch (err) {
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'could not store the start offsets of a new group');
    }
  }

  #track(p: Promise<void>): Promise<void> {
    this.#batches.add(p);
    const untrack = (): void => void this.#batches.delete(p);
    p.then(untrack, untrack);
    return p;
  }

  /**
   * Takes the fetched batch into its partition's lane and returns at once: kafkajs fetches again
   * only after every batch of its last fetch returned, so a handler awaited here (a slow or hanging
   * record) held back the fetches of every other partition (tester report D1, a shell hook sleeping
   * 6 s on one partition stalled the others; with `partitionsConsumedConcurrently` 3 the partitions
   * of one fetch ran in groups of 3, the next group only after the slowest of the last, D6).
   */
  #eachBatch(payload: EachBatchPayload): Promise<void> {
    const ctx: RecordContext = {
      signal: this.#runner.signal,
      heartbeat: () => payload.heartbeat().catch((err: unknown) => this.#opts.logger.debug({ group: this.group, err: errorMessage(err) }, 'heartbeat failed')),
    };
    this.#laned(payload, ctx);
    return Promise.resolve();
  }

  /**
   * Every consumption (lanes one record wide without `inFlightPerPartition`): each fetched record
   * is taken into its partition's lane and the batch returns at once, so kafkajs fetches again
   * without waiting for the deliveries (its next fetch starts after the last *resolved* offset:
   * taken records are resolved when taken); a lane with more than {@link LANE_HIGH} records waiting
   * pauses its partition until it is down to `LANE_LOW` (src/transport/lane-pump.ts). Up to the lane's width records are
   * in hand at once (by key with `perKeyOrder`: one per key; 1 for serial topics such as the retry topic).
   * kafkajs's autoCommit is off: the lanes commit the lowest unfinished
   * offset of each partition themselves (every `commitEveryRecords` records or `commitIntervalMs`,
   * before rejoining, and at stop). A `redeliver` seeks the partition back to the record and pauses it until the
   * wait is over.
   */
  #laned(payload: EachBatchPayload, ctx: RecordContext): void {
    const { topic, partition } = payload.batch;
    const key = tpKey(topic, partition);
    let lane = this.#pump.lanes.get(key);
    if (lane === undefined) {
      lane = this.#serialTopics.has(topic) ? new PartitionLane<TransportRecord>(topic, partition, 1) : new PartitionLane<TransportRecord>(topic, partition, this.#window, this.#laneOrder);
      this.#pump.lanes.set(key, lane);
    }
    this.#laneHeartbeat = () => ctx.heartbeat();
    for (const message of payload.batch.messages) {
      if (this.#stopping || !payload.isRunning() || payload.isStale() || lane.halted) break;
      const what = lane.classify(BigInt(message.offset));
      if (what === 'skip') continue;
      lane.take(toRecord(topic, partition, message), what === 'finished');
      // Moves kafkajs's fetch position past the record; what is committed is the lane's business.
      payload.resolveOffset(message.offset);
      this.#handledOnce.add(key);
    }
    this.#pump.pump(lane);
    if (lane.waiting >= LANE_HIGH && !lane.paused && !lane.halted) {
      lane.paused = true;
      this.#consumer.pause([{ topic, partitions: [partition] }]);
    }
  }

  /** The lane's record must come again after `afterMs`: seek back to it, pause, resume later. */
  #redeliverLane(lane: PartitionLane<TransportRecord>, r: { readonly offset: bigint; readonly afterMs: number }): void {
    const tp = { topic: lane.topic, partitions: [lane.partition] };
    this.#consumer.seek({ topic: lane.topic, partition: lane.partition, offset: r.offset.toString() });
    lane.paused = true;
    this.#consumer.pause([tp]);
    this.#runner.resumeLater(
      r.afterMs,
      () => {
        if (lane.revoked) return;
        lane.resume();
        lane.paused = false;
        this.#consumer.resume([tp]);
        this.#pump.wake(lane);
      },
      { topic: lane.topic, partition: lane.partition },
    );
  }

  /** Counts a processed record; commits the lanes when due, or within `commitIntervalMs` at the latest. */
  #laneProcessed(): void {
    if (++this.#sinceCommit >= this.#commitEveryRecords || Date.now() - this.#lastCommitCheck >= this.#commitIntervalMs) {
      neverRejects(this.#commitLanes());
      return;
    }
    this.#laneCommitTimer ??= setTimeout(() => {
      this.#laneCommitTimer = undefined;
      neverRejects(this.#commitLanes());
    }, this.#commitIntervalMs);
  }

  /** Commits each lane's lowest unfinished offset (one commit at a time). Never rejects: a failed commit is logged and retried with the next. */
  #commitLanes(): Promise<void> {
    this.#sinceCommit = 0;
    this.#lastCommitCheck = Date.now();
    if (this.#laneCommitting !== undefined) {
      this.#laneCommitAgain = true;
      return this.#laneCommitting;
    }
    const run = async (): Promise<void> => {
      do {
        this.#laneCommitAgain = false;
        const due = [...this.#pump.lanes.values()].flatMap((l) => {
          const o = l.pendingCommit();
          return o === undefined ? [] : [{ lane: l, offset: o }];
        });
        if (due.length === 0) continue;
        try {
          await this.#consumer.commitOffsets(due.map(({ lane, offset }) => ({ topic: lane.topic, partition: lane.partition, offset: offset.toString() })));
          for (const { lane, offset } of due) lane.committed(offset);
        } catch (err) {
          // A rebalance under way is normal (the new generation's fetch starts at the last commit),
          // as is a failure while the broker is out or the group recovers from an outage (the outage
          // is logged once); anything else is worth a warning.
          const routine = this.#recovering() || isRoutineCommitFailure(err);
          this.#opts.logger[routine ? 'debug' : 'warn']({ group: this.group, err: errorMessage(err) }, 'committing offsets failed; the next commit carries them');
        }
      } while (this.#laneCommitAgain);
    };
    this.#laneCommitting = run().finally(() => (this.#laneCommitting = undefined));
    return this.#laneCommitting;
  }

  #mayRestart(err: unknown): boolean {
    if (this.#stopping) return false;
    // A topic it reads is missing: every restart refreshes the same topic set and fails the same
    // way (maxRestarts wasted, with the member out of its group each time); the member stops at once
    // and the transport starts one on the topics that exist (./missing-topics.ts).
    if (topicMissing(fromKafkaError(err, { operation: 'consume', group: this.group }))) {
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'kafka consumer failed: a topic it reads is missing; not restarting it on the same topics');
      return false;
    }
    this.#restarts += 1;
    const restart = this.#restarts <= this.#opts.maxRestarts;
    this.#opts.logger.warn({ group: this.group, err: errorMessage(err), restarts: this.#restarts, maxRestarts: this.#opts.maxRestarts, restart }, 'kafka consumer failed');
    return restart;
  }

  /**
   * kafkajs stopped this member for good (its CRASH with `restart: false`, after it disconnected)
   * on a failure the transport calls retriable: joins the group again after
   * `initialRetryTimeMs` · 2^(rejoins since the last join − 1), at most `maxRetryTimeMs`, as often
   * as it takes — each rejoin logged (warn, with the count) and counted (`rejoins`; a successful one
   * also counts as a join, `joins()`). A rejoin that fails crashes again and comes back here; one
   * refused for a reason that is not retriable rejects `done`. stop() cancels a rejoin not begun.
   */
  #rejoinLater(err: unknown): void {
    this.#rejoins++;
    this.#rejoinsSinceJoin++;
    const delayMs = rejoinDelayMs(this.#opts, this.#rejoinsSinceJoin);
    logRejoin(this.#opts.logger, { group: this.group, err, rejoins: this.#rejoins, rejoinsSinceJoin: this.#rejoinsSinceJoin, delayMs });
    clearTimeout(this.#rejoinTimer);
    this.#rejoinTimer = setTimeout(() => neverRejects(this.#rejoin()), delayMs); // its failures go to #rejoinLater or #fail
  }

  async #rejoin(): Promise<void> {
    this.#rejoinTimer = undefined;
    if (this.#stopping || this.#runConfig === undefined) return;
    try {
      await this.#consumer.connect();
      if (this.#stopping) return;
      // Joins (GROUP_JOIN) or crashes again (CRASH): both come back through the handlers of #run.
      await this.#consumer.run(this.#runConfig);
    } catch (err) {
      if (this.#stopping) return;
      const mapped = fromKafkaError(err, { operation: 'consume', group: this.group });
      if (mapped.retriable) this.#rejoinLater(err);
      else {
        if (topicMissing(mapped)) this.#missingTopic = true;
        this.#fail(mapped);
      }
    }
  }

  #fail(err: unknown): void {
    this.#failure ??= { err };
    if (this.#onDeath !== undefined) {
      // Not joined yet: start() reports the failure instead of `done`.
      this.#onDeath(err);
      this.#onDeath = undefined;
      return;
    }
    // The shutdown catches its commit and disconnect; should it fail anyway, `done` does not
    // settle, so the failure is said here, naming the group, rather than left unhandled.
    this.stop().catch((err: unknown) => this.#opts.logger.error({ group: this.group, err: errorMessage(err) }, 'kafka consumer did not stop cleanly after a failure'));
  }

  /** Per lane: the member's context plus the lane's revoked signal (made once per lane, not per record). */
  readonly #laneContexts = new WeakMap<PartitionLane<TransportRecord>, RecordContext>();
  #laneContext(lane: PartitionLane<TransportRecord>): RecordContext {
    let ctx = this.#laneContexts.get(lane);
    if (ctx === undefined) {
      ctx = { signal: this.#laneCtx.signal, heartbeat: () => this.#laneCtx.heartbeat(), revoked: lane.revokedSignal };
      this.#laneContexts.set(lane, ctx);
    }
    return ctx;
  }

  /** Lanes of partitions this member no longer holds stop (their records in hand finish; nothing is committed for them). */
  #revokeLanes(): void {
    const held = new Set(this.#assignment.map((a) => tpKey(a.topic, a.partition)));
    for (const [key, lane] of this.#pump.lanes) {
      if (held.has(key)) continue;
      lane.revoke();
      this.#pump.lanes.delete(key);
      // kafkajs keeps a pause across joins: a partition that comes back must not stay paused.
      if (lane.paused) this.#consumer.resume([{ topic: lane.topic, partitions: [lane.partition] }]);
    }
  }

  async #shutdown(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#rejoinTimer);
    const cancelDeadline = this.#runner.beginStop();
    // Records in hand finish (or are abandoned at the deadline); the batches end with a commit of what was processed.
    while (this.#batches.size > 0) await Promise.allSettled([...this.#batches]);
    await this.#pump.idle();
    cancelDeadline();
    clearTimeout(this.#laneCommitTimer);
    // A crashed member is out of its group (kafkajs disconnected it): a commit in the group is refused.
    if (!this.#crashed) await this.#commitLanes();
    try {
      await this.#consumer.disconnect();
    } catch (err) {
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'kafka consumer disconnect failed');
    }
    if (this.#crashed) await this.#commitLeftOver();
    this.#assignment = [];
    this.#cleanup();
    this.#settle(this.#failure);
  }

  /**
   * After a crash: what the lanes processed and did not commit, stored outside the group
   * ({@link ConsumptionLinks.commitAfterCrash}); refused (another member holds the group) or
   * failed, those records come again to the next owner (at-least-once).
   */
  async #commitLeftOver(): Promise<void> {
    const due = [...this.#pump.lanes.values()].flatMap((l) => {
      const o = l.pendingCommit();
      return o === undefined ? [] : [{ lane: l, offset: o }];
    });
    if (due.length === 0 || this.#commitAfterCrash === undefined) return;
    try {
      await this.#commitAfterCrash(due.map(({ lane, offset }) => ({ topic: lane.topic, partition: lane.partition, offset: offset.toString() })));
      for (const { lane, offset } of due) lane.committed(offset);
    } catch (err) {
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err), partitions: due.length }, 'could not store the offsets processed before the member crashed; those records come again');
    }
  }

  #cleanup(): void {
    for (const remove of this.#removers.splice(0)) remove();
  }
}
