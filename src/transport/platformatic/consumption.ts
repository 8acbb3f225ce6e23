import { Consumer } from '@platformatic/kafka';
import type { GroupAssignment } from '@platformatic/kafka';
import { errorMessage } from '../../core/errors.js';
import type { KafkaTransportOptions } from '../kafka/options.js';
import type { Consumption, GroupSpec, RecordContext, RecordHandler, TransportRecord } from '../port.js';
import { MAX_REDELIVER_MS } from '../port.js';
import { RecordRunner } from '../record-runner.js';
import { isRoutineCommitFailure } from '../commit-failure.js';
import { GROUP_PROTOCOL_NAMES } from '../group-protocols.js';
import { PartitionLane } from '../in-flight-window.js';
import { LANE_HIGH, LanePump } from '../lane-pump.js';
import { baseOptions, closeForced } from './client-options.js';
import { fromPlatformaticError } from './errors.js';
import { fetchOnce, listOffsets, openFetcher, outOfRangeReset, outOfRangeWarning, recreatedTopicReset, tpKey } from './fetcher.js';
import type { Fetcher } from './fetcher.js';
import type { OffsetResetCounts } from '../out-of-range.js';
import { fetchPlan } from './fetch-plan.js';
import { logRejoin, rejoinDelayMs } from '../rejoin.js';
import { neverRejects } from '../../core/never-rejects.js';

type Assignment = readonly { readonly topic: string; readonly partition: number }[];

/**
 * Without lanes, a partition is fetched again once fewer than this many of its fetched records
 * wait to be handled, so the next fetch is under way while the last ones are handled (it used to
 * be fetched only once all were handled: the handler then waited for every fetch, issue 8).
 */
export const PREFETCH_BELOW = 500;

/** Where a new 'latest' group starts, per `topic\0partition`, fixed before it first joins. */
export type LatestPins = ReadonlyMap<string, bigint>;

/** Rejections carry Errors; anything else thrown by a handler is wrapped (kept as `cause`). */
const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err), { cause: err }));

/** One assigned partition: our fetch position, the records fetched and not yet handled, what to commit. */
interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** Next offset to fetch. */
  next: bigint;
  /** Fetched records not handled yet: `queue[head]` on (a moving head, no shift per record). */
  queue: TransportRecord[];
  head: number;
  /** Its records are being handled (a drive runs). */
  busy: boolean;
  /** Its last fetch brought no record (see ./fetch-plan.ts). */
  idle: boolean;
  /** Waiting for a redelivery: neither fetched nor handled until the timer resumes it. */
  paused: boolean;
  /** While `paused`: when the timer resumes it (performance.now(), ms); a long poll ends by then (./fetch-plan.ts). */
  resumeAt: number | undefined;
  /** Offset after the last handled record (what a commit stores); undefined = nothing handled yet. */
  handled: bigint | undefined;
  committed: bigint | undefined;
  /** Given up in a rebalance: its records in hand finish, nothing of it is committed any more. */
  revoked: boolean;
  /** With an in-flight window (`inFlightPerPartition` set): the partition's lane; `queue` and `busy` are then unused. */
  lane: PartitionLane<TransportRecord> | undefined;
}

/**
 * One `consume()` call on @platformatic/kafka: a group member (joins `spec.group`, heartbeats on
 * its own timer, commits) and a group-less fetcher on connections of its own, so a long-polling
 * fetch never delays a heartbeat or a commit. The library's stream API is not used: its one
 * readable stream cannot pause a single partition, and it fetches ahead of the handler.
 * - Positions are ours: a newly assigned partition starts at its committed offset, else at the
 *   'latest' pin taken when consume() was called (stored at once, so a later owner cannot skip)
 *   or at the earliest offset.
 * - Records of a partition are handled one at a time in offset order; partitions run
 *   concurrently; a partition is fetched again once fewer than {@link PREFETCH_BELOW} of its
 *   fetched records wait (the next fetch overlaps the handling of the last ones).
 *   With `inFlightPerPartition` set (push subscriptions), records go into per-partition lanes
 *   instead, as on the kafkajs adapter (src/transport/in-flight-window.ts, lane-pump.ts): a
 *   partition is fetched again while its records are in hand (until `LANE_HIGH` wait), up to that
 *   many of one partition in hand at once (by key with `perKeyOrder`), `partitionsConcurrently`
 *   over the member; what is committed is each lane's lowest unfinished record.
 * - A handled record's offset is committed in batches: every `commitEveryRecords` records or
 *   `commitIntervalMs`, when the member learns of a rebalance (before it joins again) and before
 *   it leaves. Only handled offsets are committed (at-least-once); a partition given up in a
 *   rebalance is not committed any more by this member.
 * - `redeliver`: only that partition is paused; its unhandled records are dropped and fetched
 *   again from the redelivered offset after the wait (a long poll of the other partitions ends by
 *   then, so the resumed partition is fetched within milliseconds, not after up to `maxWaitTimeMs`). Heartbeats go on, so a wait longer than the
 *   session timeout causes no rebalance.
 * - stop(): the records in hand see their signal aborted; after `stopTimeoutMs` a record still
 *   in hand is left uncommitted (it comes again) and the member leaves regardless of the handler.
 * - A handler rejection stops the consumption and rejects `done`; the failed record is not
 *   committed. A member that joined once and is stopped on a failure {@link fromPlatformaticError}
 *   calls retriable — the library's own rejoin failed (it then stops heartbeating), or fetches or
 *   the look-up of where newly assigned partitions start failed `(retries + 1) × (maxRestarts + 1)`
 *   times in a row — joins its group again after a backoff (`initialRetryTimeMs` doubling up to
 *   `maxRetryTimeMs`), as often as it takes, each rejoin counted and logged (#rejoinLater), as the
 *   kafkajs adapter does: a broker stalled or restarting no longer ends a running subscription.
 *   A failure that is not retriable (a refused login, an ACL) rejects `done` (never idle
 *   silently), as does any failure before the first join (consume() rejects then).
 * Spec: bus spec S1, S3, T4, T9; DESIGN "Known traps" (commit only processed offsets, commit
 *   before leaving a generation, surface a dead consumer); issue 7 (batched commits,
 *   non-blocking retries, bounded stop); issue 14.
 */
export class PlatformaticConsumption implements Consumption {
  readonly group: string;
  readonly done: Promise<void>;
  readonly #member: Consumer;
  readonly #fetcher: Fetcher;
  readonly #spec: GroupSpec;
  readonly #opts: KafkaTransportOptions;
  readonly #pins: LatestPins;
  readonly #partitions = new Map<string, PartitionState>();
  readonly #drives = new Set<Promise<void>>();
  readonly #runner: RecordRunner;
  readonly #commitEveryRecords: number;
  readonly #commitIntervalMs: number;
  readonly #ctx: RecordContext;
  #assignment: Assignment = [];
  #joins = 0;
  #generation = 0;
  #stopping = false;
  #failure: { readonly err: unknown } | undefined;
  #stopped: Promise<void> | undefined;
  #settle!: (failure: { readonly err: unknown } | undefined) => void;
  #sinceCommit = 0;
  #committing: Promise<void> | undefined;
  #commitAgain = false;
  #commitTimer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  /** When the last fetch without waiting began (performance.now(), ms); see ./fetch-plan.ts. */
  #lastQuickPoll = 0;
  /** Records the last fetch brought (the fetch linger's trickle test, ./fetch-plan.ts). */
  #lastFetchRecords = 0;
  #loop: Promise<void> | undefined;
  #firstAssignment: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  /** Lanes (in-flight window) when the group asked for one, else undefined. */
  readonly #pump: LanePump<TransportRecord> | undefined;
  readonly #serialTopics: ReadonlySet<string>;
  /**
   * Without lanes: records in hand over all partitions at most (`partitionsConcurrently`, as
   * kafkajs's `partitionsConsumedConcurrently`; docs/connectors.md "up to 3 of the partitions"),
   * and the partitions waiting for a place, served in turn (a place freed goes to the partition
   * that waited longest). Six hooks ran at once where three were documented (break report D6).
   */
  readonly #plainLimit: number;
  #plainInHand = 0;
  readonly #plainWaiting: (() => void)[] = [];

  readonly #recovering: () => boolean;
  readonly #resets: OffsetResetCounts | undefined;
  /**
   * Partition counts per topic as this consumption first saw them (before it joined): a partition
   * at or past its topic's count was added to the topic since, so without a commit it starts at its
   * log start whatever `startFrom` says — at `latest` the records written there before a member got
   * it would be skipped (breaker, 2026-12-06: push events on added partitions were lost).
   */
  readonly #startCounts = new Map<string, number>();
  /** The partition counts the last growth check saw; a larger one makes this member rejoin. */
  readonly #seenCounts = new Map<string, number>();
  #growthTimer: NodeJS.Timeout | undefined;
  #growthCheck: Promise<void> | undefined;
  /** Rejoins this member made after a retriable failure stopped it (#rejoinLater), in all and since its last join. */
  #rejoins = 0;
  #rejoinsSinceJoin = 0;
  #rejoinTimer: NodeJS.Timeout | undefined;

  private constructor(spec: GroupSpec, handler: RecordHandler, opts: KafkaTransportOptions, pins: LatestPins, recovering: () => boolean, resets: OffsetResetCounts | undefined) {
    this.group = spec.group;
    this.#spec = spec;
    this.#opts = opts;
    this.#pins = pins;
    this.#recovering = recovering;
    this.#resets = resets;
    this.#runner = new RecordRunner({ handler, stopTimeoutMs: spec.stopTimeoutMs ?? 5000, log: opts.logger, group: spec.group, onFailure: (err) => this.#fail(err) });
    this.#commitEveryRecords = spec.commitEveryRecords ?? 500;
    this.#commitIntervalMs = spec.commitIntervalMs ?? 1000;
    this.done = new Promise<void>((resolve, reject) => {
      this.#settle = (f) => (f === undefined ? resolve() : reject(asError(f.err)));
    });
    this.done.catch(() => undefined); // nobody has to observe `done`
    const suffix = spec.instanceId === undefined ? spec.group : `${spec.group}-${spec.instanceId}`;
    this.#member = new Consumer({
      ...baseOptions(opts, suffix),
      groupId: spec.group,
      // The same protocol names as the kafkajs adapter: a group may have members on both clients.
      protocols: GROUP_PROTOCOL_NAMES.map((name) => ({ name, version: 0 })),
      sessionTimeout: opts.sessionTimeoutMs,
      rebalanceTimeout: Math.max(opts.rebalanceTimeoutMs, opts.sessionTimeoutMs),
      heartbeatInterval: opts.heartbeatIntervalMs,
    });
    // The fetcher never joins: the group id is required by the library but never sent.
    this.#fetcher = openFetcher(opts, `${suffix}-fetch`, `${spec.group}.fetcher-never-joins`);
    // Heartbeats run on the member's own timer whatever the handler does.
    this.#ctx = { signal: this.#runner.signal, heartbeat: () => Promise.resolve() };
    this.#serialTopics = new Set(spec.serialTopics ?? []);
    this.#plainLimit = Math.max(1, Math.floor(spec.partitionsConcurrently ?? opts.partitionsConsumedConcurrently));
    this.#pump =
      spec.inFlightPerPartition === undefined
        ? undefined
        : new LanePump<TransportRecord>(spec.partitionsConcurrently ?? opts.partitionsConsumedConcurrently, {
            run: (r, lane, then) => this.#runner.runThen(r, this.#laneContext(lane), then, lane),
            fault: (err) => this.#fail(err),
            stopping: () => this.#stopping,
            processed: () => {
              if (++this.#sinceCommit >= this.#commitEveryRecords) neverRejects(this.#commit());
            },
            redeliver: (lane, r) => this.#redeliverLane(lane, r),
            unpause: (lane) => {
              lane.paused = false;
              this.#wakeUp();
            },
          });
  }

  /**
   * Joins the group and resolves once this member holds its partitions (with their start offsets).
   * Errors: GatewayError mapped by {@link fromPlatformaticError} (e.g. CEG_BROKER_UNAVAILABLE,
   * retriable) when the member cannot join; both clients are closed.
   */
  /** `recovering`: true while the broker is out or the clients recover from an outage (BrokerOutage.recovering); `resets`: where out-of-range resets are counted. */
  static async start(spec: GroupSpec, handler: RecordHandler, opts: KafkaTransportOptions, pins: LatestPins, recovering: () => boolean = () => false, resets?: OffsetResetCounts): Promise<PlatformaticConsumption> {
    const c = new PlatformaticConsumption(spec, handler, opts, pins, recovering, resets);
    try {
      await c.#run();
    } catch (err) {
      c.#stopping = true;
      await Promise.allSettled([closeForced(c.#member), c.#fetcher.close()]);
      throw fromPlatformaticError(err, { operation: 'consume', group: spec.group, topics: spec.topics });
    }
    return c;
  }

  assignments(): Assignment {
    return this.#assignment;
  }

  joins(): number {
    return this.#joins;
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#shutdown();
    return this.#stopped;
  }

  async #run(): Promise<void> {
    const first = new Promise<void>((resolve, reject) => (this.#firstAssignment = { resolve, reject }));
    this.#member.on('consumer:group:join', (payload: { assignments?: GroupAssignment[] }) => {
      this.#joins++;
      neverRejects(this.#onJoin(payload.assignments ?? [])); // its failures go to #stoppedBy
    });
    // Sent before the library's JoinGroup on the same connection: the handled offsets are stored
    // while this member still belongs to the old generation.
    this.#member.on('consumer:group:rebalance', () => neverRejects(this.#commit()));
    // The library's rejoin (after a heartbeat answered UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS…)
    // failed `retries + 1` times: it stops heartbeating, the member is out of its group.
    this.#member.on('error', (err: unknown) => {
      if (!this.#stopping) this.#opts.logger.error({ group: this.group, err: errorMessage(err) }, 'kafka consumer could not rejoin its group');
      this.#stoppedBy(err);
    });
    for (const t of this.#spec.topics) this.#member.topics.track(t);
    for (const [topic, count] of await this.#partitionCounts(false)) {
      this.#startCounts.set(topic, count);
      this.#seenCounts.set(topic, count);
    }
    await this.#member.joinGroup(this.#groupOptions());
    await first;
    this.#firstAssignment = undefined;
    this.#commitTimer = setInterval(() => neverRejects(this.#commit()), this.#commitIntervalMs);
    this.#growthTimer = setInterval(() => neverRejects((this.#growthCheck ??= this.#rejoinWhenTopicsGrew().finally(() => (this.#growthCheck = undefined)))), Math.max(1000, this.#opts.metadataMaxAgeMs));
    this.#growthTimer.unref();
    this.#loop = this.#fetchLoop().catch((err: unknown) => this.#fail(err));
  }

  /**
   * A failure that stops this member (the library's rejoin failed, fetches or start offset
   * look-ups failed too often in a row): before the first join it fails the start; after it, a
   * cause {@link fromPlatformaticError} calls retriable is waited out ({@link #rejoinLater}), any
   * other ends the consumption.
   */
  #stoppedBy(err: unknown): void {
    if (this.#stopping) return;
    const mapped = fromPlatformaticError(err, { operation: 'consume', group: this.group });
    if (mapped.retriable && this.#firstAssignment === undefined && this.#joins > 0) this.#rejoinLater(err);
    else this.#fail(mapped);
  }

  /**
   * This member was stopped by a retriable failure: joins its group again after
   * `initialRetryTimeMs` · 2^(rejoins since the last join − 1), at most `maxRetryTimeMs` — each
   * rejoin logged (warn, with the counts: the same line as the kafkajs adapter's) and counted (a
   * successful one also counts as a join, `joins()`). One rejoin waits at a time (a failure
   * meanwhile is part of the same episode). A rejoin that fails retriably comes back here; one
   * refused for a reason that is not retriable ends the consumption. stop() cancels a rejoin not begun.
   */
  #rejoinLater(err: unknown): void {
    if (this.#stopping || this.#rejoinTimer !== undefined) return;
    this.#rejoins++;
    this.#rejoinsSinceJoin++;
    const delayMs = rejoinDelayMs(this.#opts, this.#rejoinsSinceJoin);
    logRejoin(this.#opts.logger, { group: this.group, err, rejoins: this.#rejoins, rejoinsSinceJoin: this.#rejoinsSinceJoin, delayMs });
    this.#rejoinTimer = setTimeout(() => neverRejects(this.#rejoin()), delayMs); // its failures go to #rejoinLater or #fail
  }

  async #rejoin(): Promise<void> {
    if (this.#stopping) return;
    // Stale metadata (a broker back from a stall, a coordinator moved) is asked again.
    this.#member.clearMetadata();
    this.#fetcher.consumer.clearMetadata();
    try {
      // Resolves after the join: its assignment comes through 'consumer:group:join' (#onJoin).
      await this.#member.joinGroup(this.#groupOptions());
    } catch (err) {
      if (this.#stopping) return;
      this.#rejoinTimer = undefined;
      const mapped = fromPlatformaticError(err, { operation: 'consume', group: this.group });
      if (mapped.retriable) this.#rejoinLater(err);
      else this.#fail(mapped);
      return;
    }
    this.#rejoinTimer = undefined;
  }

  #groupOptions(): { sessionTimeout: number; rebalanceTimeout: number; heartbeatInterval: number } {
    return {
      sessionTimeout: this.#opts.sessionTimeoutMs,
      rebalanceTimeout: Math.max(this.#opts.rebalanceTimeoutMs, this.#opts.sessionTimeoutMs),
      heartbeatInterval: this.#opts.heartbeatIntervalMs,
    };
  }

  /** Partition count per topic read, from the member's metadata (`fresh`: asked of the broker, and the member's cache updated with it). */
  async #partitionCounts(fresh: boolean): Promise<Map<string, number>> {
    const metadata = await this.#member.metadata({ topics: [...this.#spec.topics], forceUpdate: fresh });
    const out = new Map<string, number>();
    for (const topic of this.#spec.topics) {
      const count = metadata.topics.get(topic)?.partitionsCount;
      if (count !== undefined) out.set(topic, count);
    }
    return out;
  }

  /**
   * Every `metadataMaxAgeMs` (30 s; Kafka's `metadata.max.age.ms`, whose default is 5 min — shorter
   * here so added partitions are read sooner, for one metadata request per member per interval): when a topic read has more
   * partitions than the last check saw (`kafka-topics --alter --partitions`), this member commits and
   * joins again, so the group's leader assigns the new partitions (with the fresh metadata: this
   * member's cache was just updated; a leader elsewhere whose cache is older assigns them at its own
   * next check). Java's consumer does the same on its metadata refresh; kafkajs on its own (its
   * `metadataMaxAge`). A failed check is tried at the next tick.
   */
  async #rejoinWhenTopicsGrew(): Promise<void> {
    if (this.#stopping) return;
    let counts: Map<string, number>;
    try {
      counts = await this.#partitionCounts(true);
    } catch (err) {
      this.#opts.logger.debug({ group: this.group, err: errorMessage(err) }, 'partition count check failed; trying again at the next one');
      return;
    }
    const grown = [...counts].filter(([topic, count]) => count > (this.#seenCounts.get(topic) ?? count));
    if (grown.length === 0 || this.#stopping) return;
    this.#opts.logger.info({ group: this.group, topics: Object.fromEntries(grown) }, 'partitions were added to a topic this group reads: joining the group again to take them up (from their log start)');
    await this.#commit();
    try {
      await this.#member.joinGroup(this.#groupOptions());
    } catch (err) {
      // Seen only once joined: a failed join is tried again at the next check.
      if (!this.#stopping) this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'could not join the group again after partitions were added; trying again at the next check');
      return;
    }
    for (const [topic, count] of grown) this.#seenCounts.set(topic, count);
  }

  /** A (re)join: forget given-up partitions, find where the new ones start. */
  async #onJoin(assignments: readonly GroupAssignment[]): Promise<void> {
    const generation = ++this.#generation;
    this.#rejoinsSinceJoin = 0;
    const assigned = assignments
      .filter((a) => this.#spec.topics.includes(a.topic))
      .flatMap((a) => a.partitions.map((partition) => Object.freeze({ topic: a.topic, partition })))
      .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
    const keys = new Set(assigned.map((a) => tpKey(a.topic, a.partition)));
    for (const [key, state] of this.#partitions) {
      if (keys.has(key)) continue;
      state.revoked = true;
      state.lane?.revoke();
      this.#pump?.lanes.delete(key);
      this.#partitions.delete(key);
    }
    const fresh = assigned.filter((a) => !this.#partitions.has(tpKey(a.topic, a.partition)));
    try {
      const starts = await this.#startOffsetsRetried(fresh, generation);
      if (starts === undefined || generation !== this.#generation || this.#stopping) return; // another join came meanwhile
      for (const { topic, partition } of fresh) {
        const next = starts.get(tpKey(topic, partition))!;
        const lane = this.#laneFor(topic, partition);
        this.#partitions.set(tpKey(topic, partition), { topic, partition, next, queue: [], head: 0, idle: false, busy: false, paused: false, resumeAt: undefined, handled: undefined, committed: undefined, revoked: false, lane });
      }
      this.#assignment = Object.freeze(assigned);
      this.#opts.logger.debug({ group: this.group, assignment: assigned.map((a) => `${a.topic}/${a.partition}`) }, 'consumer joined its group');
      this.#firstAssignment?.resolve();
      this.#wakeUp();
    } catch (err) {
      if (this.#firstAssignment !== undefined) this.#firstAssignment.reject(err);
      else this.#stoppedBy(err);
    }
  }

  /**
   * {@link #startOffsets}, tried again while it fails retriably (as {@link fromPlatformaticError}
   * decides: a request timeout while the broker stalls, LEADER_NOT_AVAILABLE or
   * NOT_LEADER_OR_FOLLOWER for a partition just added, a coordinator moving), with the fetch loop's
   * backoff (`initialRetryTimeMs` doubling up to `maxRetryTimeMs`) and limit
   * (`(retries + 1) × (maxRestarts + 1)` tries), both clients' metadata cleared between tries.
   * A failure used to fail the whole consumption at once, while the fetches next to it were retried
   * (a member taking up added partitions under load failed, added-partitions.kafka.test.ts).
   * Undefined when a newer join came or the consumption stops meanwhile (that join decides).
   * Errors: the last failure, mapped (GatewayError) — at once when it is not retriable.
   */
  async #startOffsetsRetried(fresh: Assignment, generation: number): Promise<Map<string, bigint> | undefined> {
    const limit = (this.#opts.retries + 1) * (this.#opts.maxRestarts + 1);
    const superseded = (): boolean => generation !== this.#generation || this.#stopping;
    for (let failures = 1; ; failures++) {
      try {
        return await this.#startOffsets(fresh);
      } catch (err) {
        if (superseded()) return undefined;
        const mapped = fromPlatformaticError(err, { operation: 'consume', group: this.group });
        if (!mapped.retriable || failures >= limit) throw mapped;
        this.#opts.logger.warn({ group: this.group, err: errorMessage(err), failures, limit }, 'could not look up where newly assigned partitions start; trying again');
        this.#member.clearMetadata();
        this.#fetcher.consumer.clearMetadata();
        await new Promise((r) => setTimeout(r, this.#retryDelayMs(failures)).unref());
        if (superseded()) return undefined;
      }
    }
  }

  /** The wait after `failures` failures in a row, ms: `initialRetryTimeMs` doubling, at most `maxRetryTimeMs`. */
  #retryDelayMs(failures: number): number {
    return Math.min(this.#opts.maxRetryTimeMs, this.#opts.initialRetryTimeMs * 2 ** Math.min(failures, 10));
  }

  /** Committed offset, else the 'latest' pin (stored at once), else earliest or latest as told. */
  async #startOffsets(fresh: Assignment): Promise<Map<string, bigint>> {
    const out = new Map<string, bigint>();
    if (fresh.length === 0) return out;
    const byTopic = new Map<string, number[]>();
    for (const { topic, partition } of fresh) byTopic.set(topic, [...(byTopic.get(topic) ?? []), partition]);
    const committed = await this.#member.listCommittedOffsets({ topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })) });
    const toStore: { topic: string; partition: number; offset: bigint; leaderEpoch: number }[] = [];
    for (const [topic, partitions] of byTopic) {
      let fallback: bigint[] | undefined;
      let logStarts: bigint[] | undefined;
      let readBefore: boolean | undefined;
      for (const partition of partitions) {
        const c = committed.get(topic)?.[partition];
        if (c !== undefined && c >= 0n) {
          out.set(tpKey(topic, partition), c);
          continue;
        }
        const pin = this.#pins.get(tpKey(topic, partition));
        if (pin !== undefined) {
          out.set(tpKey(topic, partition), pin);
          toStore.push({ topic, partition, offset: pin, leaderEpoch: -1 });
          continue;
        }
        // A partition added to the topic since this consumption began (see #startCounts), or one
        // without a commit on a topic the group has commits on (added before it began: the group
        // stores a start on every partition it first gets), starts at its log start.
        const added = partition >= (this.#startCounts.get(topic) ?? Number.POSITIVE_INFINITY) || (readBefore ??= await this.#groupReadBefore(topic));
        if (added) {
          logStarts ??= await listOffsets(this.#fetcher.consumer, topic, 'earliest');
          const start = logStarts[partition] ?? 0n;
          out.set(tpKey(topic, partition), start);
          toStore.push({ topic, partition, offset: start, leaderEpoch: -1 });
          continue;
        }
        fallback ??= await listOffsets(this.#fetcher.consumer, topic, this.#spec.startFrom === 'earliest' ? 'earliest' : 'latest');
        out.set(tpKey(topic, partition), fallback[partition] ?? 0n);
      }
    }
    if (toStore.length > 0) {
      try {
        await this.#member.commit({ offsets: toStore });
      } catch (err) {
        this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'could not store the start offsets of a new group');
      }
    }
    return out;
  }

  /** Whether the group has a committed offset on some partition of `topic`. */
  async #groupReadBefore(topic: string): Promise<boolean> {
    const count = (await this.#partitionCounts(false)).get(topic) ?? 0;
    if (count === 0) return false;
    const committed = await this.#member.listCommittedOffsets({ topics: [{ topic, partitions: Array.from({ length: count }, (_, i) => i) }] });
    return (committed.get(topic) ?? []).some((c) => c >= 0n);
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async #fetchLoop(): Promise<void> {
    let failures = 0;
    const limit = (this.#opts.retries + 1) * (this.#opts.maxRestarts + 1);
    while (!this.#stopping) {
      const wanted: PartitionState[] = [];
      let resumeAt = Number.POSITIVE_INFINITY;
      for (const p of this.#partitions.values()) {
        if (p.revoked) continue;
        if (p.paused) resumeAt = Math.min(resumeAt, p.resumeAt ?? Number.POSITIVE_INFINITY);
        else if (p.lane === undefined ? p.queue.length - p.head < PREFETCH_BELOW : !p.lane.paused && !p.lane.halted) wanted.push(p);
      }
      const now = performance.now();
      // A long poll only when no partition will want a fetch soon, and never past a redelivery's resume (./fetch-plan.ts).
      const plan = fetchPlan(this.#partitions.values(), wanted, this.#opts.maxWaitTimeMs, now - this.#lastQuickPoll, { ms: this.#spec.fetchLingerMs ?? 0, lastFetchRecords: this.#lastFetchRecords }, resumeAt - now);
      if ('sleepMs' in plan) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          setTimeout(resolve, plan.sleepMs).unref();
        });
        continue;
      }
      const asked = new Map(wanted.map((p) => [tpKey(p.topic, p.partition), { state: p, offset: p.next }]));
      let fetched;
      try {
        if (plan.maxWaitTimeMs === 0) this.#lastQuickPoll = performance.now();
        fetched = await fetchOnce(this.#fetcher, wanted.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.next })), { maxWaitTimeMs: plan.maxWaitTimeMs, ...(plan.minBytes === undefined ? {} : { minBytes: plan.minBytes }), maxBytes: 10 * 1_048_576, maxBytesPerPartition: 1_048_576 });
        failures = 0;
      } catch (err) {
        if (this.#stopping) return;
        failures++;
        this.#opts.logger.warn({ group: this.group, err: errorMessage(err), failures, limit }, 'kafka fetch failed');
        if (failures >= limit) {
          const mapped = fromPlatformaticError(err, { operation: 'consume', group: this.group });
          if (!mapped.retriable) throw mapped;
          // Waited out: the member joins again (its partitions may have moved meanwhile) and the
          // fetches go on; another `limit` failures in a row join again (with a longer wait when
          // no join came in between).
          this.#rejoinLater(err);
          failures = 0;
        }
        this.#fetcher.consumer.clearMetadata();
        await new Promise((r) => setTimeout(r, this.#retryDelayMs(failures)));
        continue;
      }
      let records = 0;
      const outOfRange: { state: PartitionState; offset: bigint; recreated: boolean }[] = [];
      for (const f of fetched) {
        records += f.records.length;
        const a = asked.get(tpKey(f.topic, f.partition));
        // Moved on meanwhile (revoked, paused for a redelivery, reassigned): drop what came.
        if (a === undefined || a.state !== this.#partitions.get(tpKey(f.topic, f.partition)) || a.state.revoked || a.state.paused || a.state.next !== a.offset) continue;
        if (f.outOfRange === true) {
          outOfRange.push({ ...a, recreated: f.recreated === true });
          continue;
        }
        a.state.next = f.next;
        a.state.idle = f.records.length === 0;
        if (f.records.length === 0) continue;
        if (a.state.lane !== undefined) {
          this.#laned(a.state, a.state.lane, f.records);
          continue;
        }
        const q = a.state;
        if (q.head > 1024 && q.head * 2 > q.queue.length) {
          q.queue = q.queue.slice(q.head);
          q.head = 0;
        }
        for (const r of f.records) q.queue.push(r);
        if (!q.busy) this.#drive(q);
      }
      this.#lastFetchRecords = records;
      if (outOfRange.length > 0) await this.#resetOutOfRange(outOfRange);
    }
  }

  /**
   * Partitions whose fetch offset the broker answered OFFSET_OUT_OF_RANGE for go on from their log
   * start ({@link outOfRangeReset}: Kafka's `auto.offset.reset=earliest`, the least-loss choice;
   * a topic the fetcher saw deleted and there again: {@link recreatedTopicReset}),
   * with a warning naming the group, topic, partition and the offsets lost; the new position is
   * committed with the next commit, so a restart does not lose or warn again. Before, the broker's
   * answer failed the whole fetch: every partition of the member stalled, and after
   * `(retries + 1) × (maxRestarts + 1)` fetches the consumption failed — and failed again at each
   * restart. A look-up that fails is retried at the next fetch (the partition stays where it was).
   * Spec: Kafka consumer `auto.offset.reset`; docs/subscriptions.md "When records vanish under a subscription".
   */
  async #resetOutOfRange(parts: readonly { readonly state: PartitionState; readonly offset: bigint; readonly recreated: boolean }[]): Promise<void> {
    for (const topic of new Set(parts.map((p) => p.state.topic))) {
      let starts: bigint[];
      let ends: bigint[];
      try {
        [starts, ends] = await Promise.all([listOffsets(this.#fetcher.consumer, topic, 'earliest'), listOffsets(this.#fetcher.consumer, topic, 'latest')]);
      } catch (err) {
        this.#opts.logger.warn({ group: this.group, topic, err: errorMessage(err) }, 'offset out of range: could not look up the log start; trying again at the next fetch');
        continue;
      }
      for (const { state, offset, recreated } of parts) {
        if (state.topic !== topic || state.revoked || state.paused || state.next !== offset || this.#partitions.get(tpKey(topic, state.partition)) !== state) continue;
        const reset = recreated ? recreatedTopicReset(starts[state.partition] ?? 0n) : outOfRangeReset(offset, starts[state.partition] ?? 0n, ends[state.partition] ?? 0n);
        if (reset === undefined) continue; // in range by now: fetched again as it is
        this.#opts.logger.warn(
          { group: this.group, topic, partition: state.partition, offset: offset.toString(), logStart: reset.to.toString(), end: (ends[state.partition] ?? 0n).toString(), lost: reset.lost?.toString() ?? 'unknown', reason: reset.why },
          outOfRangeWarning(reset.why),
        );
        this.#resets?.note(this.group, reset.why);
        state.next = reset.to;
        state.idle = false;
        // A lane that took records before knows offsets of the old range: going back (a topic created
        // again) it would skip the new ones as taken, going forward its commit would point below the log start again.
        const lane = state.lane;
        const laneAt = lane?.commitOffset();
        if (lane !== undefined && laneAt !== undefined && laneAt !== reset.to) {
          lane.revoke();
          state.lane = this.#laneFor(topic, state.partition);
        }
        // Stored with the next commit, even if nothing is handled before a restart.
        state.handled = reset.to;
        state.committed = undefined;
      }
    }
  }

  #drive(state: PartitionState): void {
    state.busy = true;
    const run = this.#handleQueue(state).finally(() => {
      state.busy = false;
      this.#drives.delete(run);
      // Records appended after the loop's last check (a fetch that landed meanwhile): drive again.
      if (state.head < state.queue.length && !this.#stopping && !state.revoked && !state.paused) this.#drive(state);
      this.#wakeUp();
    });
    this.#drives.add(run);
  }

  /** A place for one record in hand (see #plainLimit): at once when one is free and nobody waits, else in turn. */
  #place(): Promise<void> | undefined {
    if (this.#plainInHand < this.#plainLimit && this.#plainWaiting.length === 0) {
      this.#plainInHand++;
      return undefined;
    }
    return new Promise<void>((resolve) => this.#plainWaiting.push(resolve));
  }

  /** Hands the place to the partition that waited longest (the count stays), or frees it. */
  #freePlace(): void {
    const next = this.#plainWaiting.shift();
    if (next !== undefined) next();
    else this.#plainInHand--;
  }

  async #handleQueue(state: PartitionState): Promise<void> {
    while (state.head < state.queue.length && !this.#stopping && !state.revoked) {
      const waiting = this.#place();
      if (waiting !== undefined) await waiting;
      if (this.#stopping || state.revoked || state.head >= state.queue.length) {
        this.#freePlace();
        return;
      }
      const record = state.queue[state.head++]!;
      // Fewer than PREFETCH_BELOW left: the fetch loop may be asleep (nothing was wanted); wake it.
      if (state.queue.length - state.head === PREFETCH_BELOW - 1) this.#wakeUp();
      let outcome: Awaited<ReturnType<RecordRunner['run']>>;
      try {
        outcome = await this.#runner.run(record, this.#ctx);
      } finally {
        this.#freePlace();
      }
      if (outcome === 'abandoned' || outcome === 'failed') {
        state.queue = [];
        state.head = 0;
        return;
      }
      if (outcome.kind === 'redeliver') {
        state.queue = [];
        state.head = 0;
        state.next = record.offset;
        state.paused = true;
        state.resumeAt = performance.now() + Math.min(MAX_REDELIVER_MS, outcome.afterMs);
        this.#runner.resumeLater(
          outcome.afterMs,
          () => {
            state.paused = false;
            state.resumeAt = undefined;
            state.idle = false; // fetched at once, not after a quiet partition's poll interval
            this.#wakeUp();
          },
          { topic: state.topic, partition: state.partition },
        );
        return;
      }
      state.handled = record.offset + 1n;
      if (++this.#sinceCommit >= this.#commitEveryRecords) neverRejects(this.#commit());
    }
  }



  /** Per lane: the member's context plus the lane's revoked signal (made once per lane, not per record). */
  readonly #laneContexts = new WeakMap<PartitionLane<TransportRecord>, RecordContext>();
  #laneContext(lane: PartitionLane<TransportRecord>): RecordContext {
    let ctx = this.#laneContexts.get(lane);
    if (ctx === undefined) {
      ctx = { signal: this.#ctx.signal, heartbeat: () => this.#ctx.heartbeat(), revoked: lane.revokedSignal };
      this.#laneContexts.set(lane, ctx);
    }
    return ctx;
  }

  #laneFor(topic: string, partition: number): PartitionLane<TransportRecord> | undefined {
    if (this.#pump === undefined) return undefined;
    const lane = this.#serialTopics.has(topic)
      ? new PartitionLane<TransportRecord>(topic, partition, 1)
      : new PartitionLane<TransportRecord>(topic, partition, this.#spec.inFlightPerPartition!, this.#spec.perKeyOrder === true ? 'key' : 'offset');
    this.#pump.lanes.set(tpKey(topic, partition), lane);
    return lane;
  }

  /** Takes fetched records into the partition's lane and starts what may start; a lane with LANE_HIGH waiting is not fetched until down to LANE_LOW. */
  #laned(state: PartitionState, lane: PartitionLane<TransportRecord>, records: readonly TransportRecord[]): void {
    for (const r of records) {
      if (lane.halted) break;
      const what = lane.classify(r.offset);
      if (what !== 'skip') lane.take(r, what === 'finished');
    }
    this.#pump!.pump(lane);
    if (lane.waiting >= LANE_HIGH && !lane.halted) lane.paused = true;
    this.#laneCommitOffset(state, lane);
  }

  /** What a commit stores for a laned partition: its lowest unfinished record. */
  #laneCommitOffset(state: PartitionState, lane: PartitionLane<TransportRecord>): void {
    const o = lane.commitOffset();
    if (o !== undefined) state.handled = o;
  }

  /** The lane restarts at `r.offset` after `r.afterMs`: fetched from there once the wait is over. */
  #redeliverLane(lane: PartitionLane<TransportRecord>, r: { readonly offset: bigint; readonly afterMs: number }): void {
    const state = this.#partitions.get(tpKey(lane.topic, lane.partition));
    if (state === undefined || state.lane !== lane) return;
    state.next = r.offset;
    state.paused = true;
    state.resumeAt = performance.now() + Math.min(MAX_REDELIVER_MS, r.afterMs);
    this.#runner.resumeLater(
      r.afterMs,
      () => {
        state.resumeAt = undefined;
        if (lane.revoked) return;
        lane.resume();
        state.paused = false;
        state.idle = false; // fetched at once, not after a quiet partition's poll interval
        this.#wakeUp();
      },
      { topic: lane.topic, partition: lane.partition },
    );
  }

  /** Commits the handled offsets not yet committed; one commit at a time (a request meanwhile commits again after it). */
  #commit(): Promise<void> {
    if (this.#committing !== undefined) {
      this.#commitAgain = true;
      return this.#committing;
    }
    this.#sinceCommit = 0;
    for (const p of this.#partitions.values()) if (p.lane !== undefined) this.#laneCommitOffset(p, p.lane);
    const due = [...this.#partitions.values()].filter((p) => !p.revoked && p.handled !== undefined && (p.committed === undefined || p.handled > p.committed));
    if (due.length === 0) return Promise.resolve();
    const offsets = due.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.handled!, leaderEpoch: -1 }));
    this.#committing = this.#member
      .commit({ offsets })
      .then(
        () => offsets.forEach((o, i) => (due[i]!.committed = o.offset > (due[i]!.committed ?? -1n) ? o.offset : due[i]!.committed)),
        // Routine when the group moved on or the clients recover from an outage (logged once already).
        (err: unknown) => this.#opts.logger[this.#recovering() || isRoutineCommitFailure(err) ? 'debug' : 'warn']({ group: this.group, err: errorMessage(err) }, 'offset commit failed (the records come again)'),
      )
      .finally(() => {
        this.#committing = undefined;
        if (this.#commitAgain) {
          this.#commitAgain = false;
          neverRejects(this.#commit());
        }
      });
    return this.#committing;
  }

  #fail(err: unknown): void {
    // Once a stop began, a failure is what the stop does to the clients under a join, a fetch or
    // a commit ("Client is closed"): a planned stop (a PATCH restarting the members, a shutdown)
    // is not a failure of the subscription. What was in hand stays uncommitted and comes again.
    if (this.#stopping && this.#failure === undefined) {
      this.#opts.logger.debug({ group: this.group, err: errorMessage(err) }, 'consumer: failure while stopping (ignored)');
      return;
    }
    this.#failure ??= { err };
    if (this.#firstAssignment !== undefined) {
      this.#firstAssignment.reject(err);
      return;
    }
    // The shutdown catches its close and commits; should it fail anyway, `done` does not settle,
    // so the failure is said here, naming the group, rather than left unhandled.
    this.stop().catch((stopErr: unknown) => this.#opts.logger.error({ group: this.group, err: errorMessage(stopErr) }, 'kafka consumer did not stop cleanly after a failure'));
  }

  async #shutdown(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#rejoinTimer);
    const cancelDeadline = this.#runner.beginStop();
    clearInterval(this.#commitTimer);
    clearInterval(this.#growthTimer);
    this.#wakeUp();
    // A fetch in flight is cut short; what it brings is dropped.
    await this.#fetcher.close().catch((err: unknown) => this.#opts.logger.debug({ group: this.group, err: errorMessage(err) }, 'fetcher close failed'));
    while (this.#drives.size > 0) await Promise.allSettled([...this.#drives]);
    await this.#pump?.idle();
    cancelDeadline();
    await this.#loop;
    while (this.#committing !== undefined) await this.#committing;
    await this.#commit();
    try {
      await closeForced(this.#member);
    } catch (err) {
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'kafka consumer close failed');
    }
    this.#assignment = [];
    this.#settle(this.#failure);
  }
}
