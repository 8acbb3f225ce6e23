/**
 * Keeps the running subscriptions of this instance equal to the desired set (the definitions topic
 * plus connector files): starts what is new or re-activated, stops what was deleted, paused or
 * gone, updates in place what changed only in its filters or its sink (URL, secrets, headers,
 * content mode, rate), and restarts what changed in a way its consumer group member cannot take
 * in place (kinds, ordering, retry policy, concurrency). Every instance runs one reconciler; every
 * active subscription has one member of its group on every instance, so partitions spread over the
 * instances and a dead instance's partitions move to the others (Kafka's group protocol).
 *
 * Passes run one at a time; a change arriving during a pass is applied by the next one. A start
 * that fails (broker unreachable) and a member that stopped on a failure are retried with backoff.
 *
 * Members on demand (issue 10, "Hundreds of subscriptions"): with `onDemand`, a subscription has a
 * member on this instance only while its group has work. One timer per instance runs a
 * {@link WorkCheck} over the subscriptions without a member (end offsets per topic, commits only
 * when a topic moved) and starts the members of those with lag; a member that delivered nothing
 * for `idleStopMs` and has nothing uncommitted on its partitions is stopped (its commits are
 * flushed when it leaves). Each subscription stays one consumer group; a member resumes from the
 * group's commits, so at-least-once delivery, order per key and the start position hold as with a
 * member that never stops. Every instance sees the same lag, so every instance starts a member and
 * the partitions spread as before. See docs/subscriptions.md ("Hundreds of subscriptions").
 * Spec: issue 8 ("Where deliveries run"); issue 10; bus spec S1 (a subscription is one consumer group).
 */
import { errorMessage } from '../../core/errors.js';
import { topicExists } from '../../transport/topics.js';
import { retryPolicy } from '../../core/retry.js';
import type { RetryPolicy } from '../../core/retry.js';
import type { Logger } from '../../observability/index.js';
import type { StartFrom, TopicPartitionOffset } from '../../transport/port.js';
import { redriveTopic, retryTopic } from '../subscriber/index.js';
import type { EventHandler, Ordering, SubscribeOptions, Subscription } from '../subscriber/index.js';
import type { FilterExpression } from '../subscriber/pipeline/dialects.js';
import type { SubscriptionState } from './model.js';
import { pendingOf } from './pending.js';
import { liveStartAt } from './stored.js';
import { WorkCheck, eachLimited } from './work-check.js';
import type { OffsetsSource, WatchedGroup } from './work-check.js';

/** What the reconciler needs to know of a subscription to run it; the sink reads the rest. */
export interface RunSpec {
  /** The consumer group: the identity of the subscription. */
  readonly group: string;
  readonly kinds: readonly string[];
  /**
   * Stored kinds not run now: the owner may no longer read them (docs/security.md "Revoking a
   * permission"). Not delivered; their retries and redrives are recognised and dead-lettered
   * (SubscribeOptions.heldKinds). Default none.
   */
  readonly heldKinds?: readonly string[];
  readonly filters: readonly FilterExpression[];
  readonly ordering: Ordering;
  readonly retry: {
    readonly maxAttempts: number;
    readonly backoff: { readonly initialMs: number; readonly factor: number; readonly maxMs: number; readonly jitter: number };
    readonly maxAgeMs?: number;
  };
  /** For a group without committed offsets (HTTP subscriptions have theirs committed at create). */
  readonly startFrom: StartFrom;
  /**
   * Start positions resolved earlier for partitions without commits (topics a PATCH added): a
   * member starts there rather than at `startFrom` where the group has no commit when it is
   * assigned the partition (GroupSpec.startAt). Offsets: the next record to read.
   */
  readonly startAt?: readonly (TopicPartitionOffset & { readonly takenAtMs?: number })[];
  readonly state: SubscriptionState;
  /**
   * Deliveries in flight on this instance, several of one partition at once: with `ordering: key`
   * one per key (per-key lanes), with `ordering: none` any.
   */
  readonly concurrency: number;
}

/** A sink serving one running subscription. */
export interface RunningSink<D> {
  readonly handler: EventHandler;
  /** The definition changed in a way the sink takes in place. */
  update(d: D): void;
  /** The subscription stopped: release connections and timers. */
  close(): Promise<void>;
}

/** What a sink may ask of the reconciler. */
export interface SinkContext {
  /** The sink said the subscription must stop for good (410 Gone). */
  markGone(reason: string): void;
  /** This instance's share of the subscription's partitions, 0–1 (for a rate limit over all instances). */
  share(): number;
  /**
   * false once the subscription is no longer active in this instance's desired set (paused,
   * deleted, gone), before its member has stopped: the sink sends nothing more. Absent: always active.
   */
  active?(): boolean;
}

export type SinkFactory<D> = (d: D, ctx: SinkContext) => RunningSink<D>;

/** What the reconciler needs from the gateway (`Gateway.subscribe` fits). */
export interface SubscribeHost {
  subscribe(o: Omit<SubscribeOptions, 'retry'> & { retry?: RetryPolicy }): Promise<Subscription>;
  partitionCount(topic: string): Promise<number>;
  topicsOf(kinds: readonly string[]): string[];
}

/** Commit batching of push subscriptions: a crash redelivers at most this much (at-least-once). */
export const PUSH_COMMIT = Object.freeze({ commitEveryRecords: 100, commitIntervalMs: 250 });

/**
 * How an instance runs many subscriptions (issue 10). Units: ms.
 * - `idleStopMs`: a member that delivered nothing for this long, with nothing uncommitted on its
 *   partitions, is stopped; 0 = every active subscription keeps a member (issue 8's behaviour).
 * - `checkIntervalMs`: how often the subscriptions without a member are checked for work (the
 *   longest wait of the first event after an idle period, plus a member's join).
 * - `concurrency`: offset lookups, and member starts, in flight at once.
 */
export interface OnDemandOptions {
  readonly idleStopMs: number;
  readonly checkIntervalMs: number;
  readonly concurrency: number;
}

/** Defaults of {@link OnDemandOptions}: SUBSCRIPTION_IDLE_STOP_MS, SUBSCRIPTION_CHECK_INTERVAL_MS, SUBSCRIPTION_START_CONCURRENCY. */
export const DEFAULT_ON_DEMAND: OnDemandOptions = Object.freeze({ idleStopMs: 30_000, checkIntervalMs: 1000, concurrency: 16 });

/** Members on demand: where offsets are read, and the options. */
export interface OnDemand {
  readonly source: OffsetsSource;
  readonly options: OnDemandOptions;
}

/** How many subscriptions of this instance run a member, and how many wait without one. */
export interface MemberCounts {
  readonly running: number;
  readonly idle: number;
}

interface Running<D extends RunSpec> {
  d: D;
  readonly sink: RunningSink<D>;
  readonly sub: Subscription;
  readonly restartKey: string;
  /** Sum of the member's record counters when last looked at, and when they last moved (ms). */
  seen: number;
  activeAtMs: number;
}

const activity = (sub: Subscription): number => {
  const s = sub.stats();
  return s.handled + s.retried + s.deadLettered + s.skipped + s.filtered + s.duplicates + s.lost;
};

/**
 * The stored start positions a member starting now takes: those resolved less than
 * START_AT_TTL_MS ago, by the one rule of {@link liveStartAt} (stored.ts says why they expire,
 * and why an entry without a time counts as expired).
 */
export function startPositions(startAt: RunSpec['startAt'], nowMs = Date.now()): { startAt?: readonly TopicPartitionOffset[] } {
  const live = liveStartAt(startAt, nowMs).map((p) => ({ topic: p.topic, partition: p.partition, offset: p.offset }));
  return live.length === 0 ? {} : { startAt: live };
}

const restartKey = (d: RunSpec): string => JSON.stringify([d.kinds, d.heldKinds ?? [], d.ordering, d.retry, d.concurrency, d.startFrom]);

export class Reconciler<D extends RunSpec> {
  readonly #host: SubscribeHost;
  readonly #factory: SinkFactory<D>;
  readonly #log: Logger;
  readonly #onGone: (group: string, reason: string) => Promise<void>;
  readonly #running = new Map<string, Running<D>>();
  readonly #failures = new Map<string, number>();
  #desired: ReadonlyMap<string, D> = new Map();
  #pass: Promise<void> = Promise.resolve();
  #again = false;
  #busy = false;
  #stopped = false;
  /** Aborted by {@link stop}: work checks in progress start no new look-up. */
  readonly #stopping = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  readonly #onDemand: OnDemand | undefined;
  readonly #check: WorkCheck | undefined;
  /** Groups the work check found due (started by the next pass), and idle members to stop. */
  readonly #wake = new Set<string>();
  readonly #sleep = new Set<string>();
  /** Groups not to start before this time, ms (backoff after a failed start). */
  readonly #notBefore = new Map<string, number>();
  #checkTimer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;

  /**
   * `onDemand` absent, or its `idleStopMs` 0: every active subscription keeps a member on this
   * instance (issue 8). Present: members run only while their group has work (issue 10).
   */
  constructor(host: SubscribeHost, factory: SinkFactory<D>, log: Logger, onGone: (group: string, reason: string) => Promise<void>, onDemand?: OnDemand) {
    this.#host = host;
    this.#factory = factory;
    this.#log = log;
    this.#onGone = onGone;
    if (onDemand !== undefined && onDemand.options.idleStopMs > 0) {
      this.#onDemand = onDemand;
      // Own topics (retries parked by a member that is gone) are looked at as often as an idle member would stop.
      this.#check = new WorkCheck(onDemand.source, log, onDemand.options.concurrency, onDemand.options.idleStopMs);
      this.#checkTimer = setInterval(() => this.#runCheck(), onDemand.options.checkIntervalMs);
      this.#checkTimer.unref();
    }
  }

  /** Sets the desired set and reconciles (soon, one pass at a time). */
  apply(desired: ReadonlyMap<string, D>): void {
    this.#desired = desired;
    this.#schedule();
  }

  /** Resolves when the passes scheduled so far have run. */
  async settled(): Promise<void> {
    while (this.#busy || this.#again) await this.#pass;
  }

  /** Groups running on this instance, with their subscriptions. */
  running(): ReadonlyMap<string, Subscription> {
    return new Map([...this.#running].map(([g, r]) => [g, r.sub]));
  }

  /** True when `group` is an active subscription this reconciler runs (with a member or waiting for work). */
  knows(group: string): boolean {
    return this.#desired.get(group)?.state === 'active';
  }

  /** True when `group` is a subscription of the desired set in any state (active, paused — a replay pauses it too —, gone). */
  has(group: string): boolean {
    return this.#desired.has(group);
  }

  /** Active subscriptions of this instance with a member now, and without one (waiting for work). */
  members(): MemberCounts {
    let idle = 0;
    for (const [g, d] of this.#desired) if (d.state === 'active' && !this.#running.has(g)) idle++;
    return { running: this.#running.size, idle };
  }

  /** Groups whose member failed to start and that wait out a backoff before the next try (each one's count of failures is kept until a start succeeds or the group leaves the active set). */
  backingOff(): number {
    return this.#failures.size;
  }

  /**
   * Starts the member of `group` at the next pass without waiting for the work check (a caller
   * that just wrote records for it, e.g. a redrive). No effect on an unknown or inactive group.
   */
  wake(group: string): void {
    if (this.#desired.get(group)?.state !== 'active' || this.#running.has(group)) return;
    this.#wake.add(group);
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    clearTimeout(this.#timer);
    clearInterval(this.#checkTimer);
    await this.#checking;
    await this.#pass;
    await Promise.allSettled([...this.#running.keys()].map((g) => this.#stopOne(g)));
  }

  #schedule(): void {
    if (this.#stopped) return;
    if (this.#busy) {
      this.#again = true;
      return;
    }
    this.#busy = true;
    this.#pass = (async () => {
      try {
        do {
          this.#again = false;
          await this.#reconcile();
        } while (this.#again && !this.#stopped);
      } finally {
        this.#busy = false;
      }
    })();
    this.#pass.catch((err: unknown) => this.#log.error({ err: errorMessage(err) }, 'reconciling subscriptions failed'));
  }

  /** A later pass after a failure, with backoff per group (max 30 s). */
  #retryLater(group: string): void {
    const n = (this.#failures.get(group) ?? 0) + 1;
    this.#failures.set(group, n);
    const delay = Math.min(30_000, 500 * 2 ** Math.min(n - 1, 6));
    this.#notBefore.set(group, Date.now() + delay);
    // On demand, the work check starts it again once the backoff is over (if it still has work).
    if (this.#check !== undefined) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#schedule(), delay);
    this.#timer.unref();
  }

  async #reconcile(): Promise<void> {
    const desired = this.#desired;
    const limit = this.#onDemand?.options.concurrency ?? DEFAULT_ON_DEMAND.concurrency;
    const stops: [group: string, why: string][] = [];
    for (const [group, r] of [...this.#running]) {
      const d = desired.get(group);
      if (d === undefined || d.state !== 'active' || restartKey(d) !== r.restartKey) {
        stops.push([group, d === undefined ? 'deleted' : d.state !== 'active' ? d.state : 'changed']);
      } else if (this.#sleep.has(group) && activity(r.sub) === r.seen) {
        stops.push([group, 'idle']);
      } else if (d !== r.d) {
        if (JSON.stringify(d.filters) !== JSON.stringify(r.d.filters)) r.sub.setFilters(d.filters);
        r.sink.update(d);
        r.d = d;
      }
    }
    this.#sleep.clear();
    // Members leave their groups in parallel (each leave waits for its records in hand and a commit).
    await eachLimited(stops, limit, async ([group, why]) => {
      try {
        await this.#stopOne(group);
      } catch (err) {
        this.#log.warn({ subscription: group, err: errorMessage(err) }, 'subscription member did not stop cleanly');
      }
      if (why === 'idle') this.#log.debug({ subscription: group }, 'subscription member stopped on this instance: no work (started again when records arrive)');
      else this.#log.info({ subscription: group, why }, 'subscription stopped on this instance');
    });
    const waiting = [...desired.values()].filter((d) => d.state === 'active' && !this.#running.has(d.group));
    // A group that failed to start and is now deleted (or no longer active) has no start to back
    // off: its failure count and backoff go (they stayed for the life of the process).
    for (const g of [...this.#failures.keys(), ...this.#notBefore.keys()]) {
      if (desired.get(g)?.state === 'active') continue;
      this.#failures.delete(g);
      this.#notBefore.delete(g);
    }
    if (this.#check !== undefined) for (const g of this.#check.knownGroups()) if (desired.get(g)?.state !== 'active') this.#check.forget(g);
    let toStart = waiting;
    if (this.#check !== undefined) {
      // On demand: a group seen for the first time is checked in this pass (so a new subscription
      // with a backlog, or a 'latest' group to pin, starts before the pass settles); the others
      // start when the work check found them due.
      const fresh = waiting.filter((d) => !this.#check!.knows(d.group) && !this.#wake.has(d.group));
      const due = await this.#check.due(fresh.map((d) => this.#watched(d)), this.#stopping.signal);
      const now = Date.now();
      toStart = waiting.filter((d) => (this.#wake.has(d.group) || due.has(d.group)) && (this.#notBefore.get(d.group) ?? 0) <= now);
    }
    this.#wake.clear();
    await eachLimited(toStart, limit, async (d) => {
      const group = d.group;
      if (this.#stopped || this.#running.has(group)) return;
      // `toStart` is this pass's snapshot: the set may have changed while the pass waited (work
      // check, other starts). A subscription paused or deleted since is not started (another
      // gateway started a paused one's member for seconds); a changed one starts as it is now.
      const now = this.#desired.get(group);
      if (now === undefined || now.state !== 'active') return;
      d = now;
      try {
        await this.#start(d);
        this.#failures.delete(group);
        this.#notBefore.delete(group);
      } catch (err) {
        this.#log.warn({ subscription: group, err: errorMessage(err) }, 'subscription could not start on this instance; trying again');
        this.#retryLater(group);
      }
    });
  }

  #watched(d: D): WatchedGroup {
    // The retry topic under `key` too: one left from an earlier `ordering: none` may hold parked
    // retries, which only a member drains (the check takes a missing one as no work).
    return { group: d.group, topics: this.#host.topicsOf(d.kinds), ownTopics: [redriveTopic(d.group), retryTopic(d.group)], startFrom: d.startFrom };
  }

  /**
   * Whether a member of `d` reads its retry topic beyond what its ordering implies: under `key`,
   * when the topic exists (left from an earlier `ordering: none`, its parked retries would
   * otherwise be stranded). Errors: other than the topic's absence, thrown (the start is retried).
   */
  async #readsLeftoverRetries(d: D): Promise<boolean> {
    return d.ordering === 'key' && (await topicExists(this.#host, retryTopic(d.group)));
  }

  /** One work check at a time; it only reads offsets, the pass it schedules starts and stops members. */
  #runCheck(): void {
    if (this.#stopped || this.#checking !== undefined || this.#check === undefined) return;
    const check = this.#check;
    this.#checking = (async () => {
      try {
        const waiting = [...this.#desired.values()].filter((d) => d.state === 'active' && !this.#running.has(d.group) && (this.#notBefore.get(d.group) ?? 0) <= Date.now());
        const due = await check.due(waiting.map((d) => this.#watched(d)), this.#stopping.signal);
        for (const g of due) this.#wake.add(g);
        const idle = await this.#idleMembers();
        for (const g of idle) this.#sleep.add(g);
        if (due.size > 0 || idle.length > 0) this.#schedule();
      } catch (err) {
        this.#log.error({ err: errorMessage(err) }, 'work check failed; trying again at the next check');
      } finally {
        this.#checking = undefined;
      }
    })();
  }

  /**
   * Running members that delivered nothing for `idleStopMs` and have nothing uncommitted on their
   * own partitions (a record waiting for its next attempt is uncommitted, so a retry keeps its member).
   */
  async #idleMembers(): Promise<string[]> {
    const od = this.#onDemand;
    if (od === undefined) return [];
    const now = Date.now();
    const candidates: [string, Running<D>][] = [];
    for (const [group, r] of this.#running) {
      const seen = activity(r.sub);
      if (seen !== r.seen) {
        r.seen = seen;
        r.activeAtMs = now;
      } else if (now - r.activeAtMs >= od.options.idleStopMs) {
        candidates.push([group, r]);
      }
    }
    const idle: string[] = [];
    await eachLimited(candidates, od.options.concurrency, async ([group, r]) => {
      const mine = r.sub.assignments();
      try {
        for (const topic of new Set(mine.map((a) => a.topic))) {
          const parts = new Set(mine.filter((a) => a.topic === topic).map((a) => a.partition));
          const only = <T extends { partition: number }>(xs: readonly T[]): T[] => xs.filter((x) => parts.has(x.partition));
          const [committed, ends, starts] = await Promise.all([od.source.committedOffsets(group, topic), od.source.endOffsets(topic), od.source.offsetsAt(topic, { kind: 'earliest' })]);
          const p = pendingOf(only(committed), only(ends), only(starts), r.d.startFrom);
          if (p.records > 0n || p.unpinned) return;
        }
        if (activity(r.sub) === r.seen) idle.push(group);
      } catch (err) {
        if (!this.#stopped) this.#log.warn({ subscription: group, err: errorMessage(err) }, 'idle check: offsets unavailable; the member keeps running');
      }
    }, this.#stopping.signal);
    return idle;
  }

  /**
   * Starts the member of `d` and registers it as running. A start that {@link stop} overtook (the
   * gateway's shutdown began while it awaited the broker) starts nothing: before the member
   * subscribes it stops there; when its subscribe was already in flight, the member is left at once
   * (its sink told it is inactive, so it sends nothing) and never registered. Either way it is said
   * at info (`subscription not started on this instance: shutting down`), not as started, and
   * {@link stop} waits for it through the pass. Errors: those of the host's calls (the start is retried).
   */
  async #start(d: D): Promise<void> {
    const group = d.group;
    const topics = this.#host.topicsOf(d.kinds);
    let total = 0;
    for (const t of topics) total += await this.#host.partitionCount(t);
    let sub: Subscription | undefined;
    /** The subscribe resolved after stop() began: the member is being left, never registered. */
    let abandoned = false;
    const notStarted = (): void => this.#log.info({ subscription: group }, 'subscription not started on this instance: shutting down');
    const ctx: SinkContext = {
      markGone: (reason) => {
        this.#onGone(group, reason).catch((err: unknown) => this.#log.error({ subscription: group, err: errorMessage(err) }, 'could not store the gone state'));
      },
      share: () => {
        const own = sub?.assignments().filter((a) => topics.includes(a.topic)).length ?? 0;
        return total === 0 ? 1 : own / total;
      },
      active: () => !abandoned && this.#desired.get(group)?.state === 'active',
    };
    const readRetryTopic = await this.#readsLeftoverRetries(d);
    // The look-ups above wait on the broker: a shutdown that began meanwhile joins no group.
    if (this.#stopped) {
      notStarted();
      return;
    }
    const sink = this.#factory(d, ctx);
    const b = d.retry.backoff;
    try {
      sub = await this.#host.subscribe({
        subscription: group,
        kinds: d.kinds,
        ...(d.heldKinds === undefined || d.heldKinds.length === 0 ? {} : { heldKinds: d.heldKinds }),
        handler: sink.handler,
        // Sinks never publish: no correlation context (its AsyncLocalStorage costs every promise).
        correlationContext: false,
        retry: retryPolicy({ maxAttempts: d.retry.maxAttempts, initialDelayMs: b.initialMs, factor: b.factor, maxDelayMs: b.maxMs, jitter: b.jitter }),
        ordering: d.ordering,
        ...(readRetryTopic ? { readRetryTopic } : {}),
        filters: d.filters,
        startFrom: d.startFrom,
        ...startPositions(d.startAt),
        partitionsConcurrently: d.concurrency,
        // Lanes: fetching goes on while deliveries are in hand; `concurrency` deliveries in flight
        // on this instance (the sink's bound), several of one partition at once (issue 8). By key:
        // records of one key one after the other, other keys of the partition alongside.
        inFlightPerPartition: d.concurrency,
        // The sink bounds each attempt itself (retry.timeoutMs, the hook's timeoutMs).
        handlerTimeoutMs: Number.POSITIVE_INFINITY,
        ...(d.retry.maxAgeMs === undefined ? {} : { maxAgeMs: d.retry.maxAgeMs }),
        ...PUSH_COMMIT,
      });
    } catch (err) {
      await sink.close();
      throw err;
    }
    if (this.#stopped) {
      // Joined while the shutdown began: left at once, as stop() leaves the running members.
      abandoned = true;
      notStarted();
      try {
        await sub.unsubscribe();
      } finally {
        await sink.close();
      }
      return;
    }
    const running: Running<D> = { d, sink, sub, restartKey: restartKey(d), seen: activity(sub), activeAtMs: Date.now() };
    this.#check?.forget(group);
    this.#running.set(group, running);
    this.#log.info({ subscription: group, kinds: d.kinds }, 'subscription started on this instance');
    const s = sub;
    s.done.catch((err: unknown) => {
      if (this.#running.get(group)?.sub !== s) return;
      // During shutdown no restart follows (#retryLater does nothing once stopped): say so.
      const next = this.#stopped ? 'not restarted: shutting down' : 'restarting it';
      this.#log.error({ subscription: group, err: errorMessage(err) }, `subscription member stopped on a failure; ${next}`);
      this.#running.delete(group);
      sink.close().catch((closeErr: unknown) => {
        this.#log.warn({ subscription: group, err: errorMessage(closeErr) }, 'subscription sink did not close cleanly after its member failed');
      });
      this.#retryLater(group);
    });
  }

  async #stopOne(group: string): Promise<void> {
    const r = this.#running.get(group);
    if (r === undefined) return;
    this.#running.delete(group);
    try {
      await r.sub.unsubscribe();
    } finally {
      // Its commits moved while it ran: the work check reads them again.
      this.#check?.forget(group);
      await r.sink.close();
    }
  }
}
