/**
 * The one per-instance check that watches every subscription without a running member: which of
 * them have records to deliver. It costs one end-offset lookup per topic per check, shared by all
 * the groups reading that topic; a group's committed offsets are fetched only when a topic it reads
 * moved past the positions last seen for it (new records, or a first look), so hundreds of idle
 * subscriptions cost nothing per check while their topics are quiet.
 * Spec: issue 10 ("Hundreds of subscriptions ... members started only where a group has lag").
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { Logger } from '../../observability/index.js';
import type { CommittedOffset, OffsetQuery, PartitionOffset, StartFrom } from '../../transport/port.js';
import { movedPast, pendingOf } from './pending.js';

/** The offsets the check reads (the transport fits). */
export interface OffsetsSource {
  endOffsets(topic: string): Promise<readonly PartitionOffset[]>;
  offsetsAt(topic: string, at: OffsetQuery): Promise<readonly PartitionOffset[]>;
  committedOffsets(group: string, topic: string): Promise<readonly CommittedOffset[]>;
}

/** A group the check looks at: its consumer group, the topics it reads, where it starts without commits. */
export interface WatchedGroup {
  readonly group: string;
  readonly topics: readonly string[];
  /**
   * The subscription's own topics (its retry and redrive topics). Only its own member writes to
   * the retry topic, and a redrive wakes its group where it is asked, so these are looked at when
   * the check first sees the group (after a restart, or once its member stopped) and then at most
   * every `ownTopicsEveryMs`: a retry parked when the instance holding it stopped or died is found
   * without a lookup per subscription and check. A missing own topic is no work (that topic is
   * looked at again after ten turns, the group's others at their turn); a failed lookup is tried
   * again after a quarter of a turn.
   */
  readonly ownTopics?: readonly string[];
  readonly startFrom: StartFrom;
}

/** Runs `work` over `items` with at most `limit` at once; once `signal` aborts, nothing new starts (what runs finishes). */
export async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length && signal?.aborted !== true) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
}

export class WorkCheck {
  readonly #source: OffsetsSource;
  readonly #log: Logger;
  readonly #concurrency: number;
  /** Per group and topic: the positions it resumes from, as last read (commits move only when a member runs or an operator resets). */
  readonly #known = new Map<string, Map<string, ReadonlyMap<number, bigint>>>();
  /** Per group: when its own topics are looked at next (ms since the epoch); absent = at the next check. */
  readonly #ownNext = new Map<string, number>();
  /**
   * Per group: its own topics found missing, and when each is looked at again (ms). Per topic, so
   * that one which may never exist (the retry topic of an `ordering: key` subscription that never
   * had `none`) does not hold back the turn of the others (its redrive topic).
   */
  readonly #ownMissing = new Map<string, Map<string, number>>();
  readonly #ownEveryMs: number;

  /**
   * `concurrency`: offset lookups in flight at once. `ownTopicsEveryMs`: how often a group's own
   * topics are looked at again (ms; each group's turn is spread over 0.75–1.25 × this).
   */
  constructor(source: OffsetsSource, log: Logger, concurrency: number, ownTopicsEveryMs = 30_000) {
    this.#source = source;
    this.#log = log;
    this.#concurrency = concurrency;
    this.#ownEveryMs = ownTopicsEveryMs;
  }

  /**
   * The groups among `groups` that have records to deliver, or that must join once to fix a
   * `latest` start. A lookup that fails is logged and the group is looked at again next time (it
   * is never started blindly, never dropped). Once `signal` aborts (the instance stops), no new
   * lookup starts and what was found so far is answered: a first check of hundreds of groups took
   * longer than the shutdown budget, and the stop waited for it. Never throws.
   */
  async due(groups: readonly WatchedGroup[], signal?: AbortSignal): Promise<Set<string>> {
    const due = new Set<string>();
    if (groups.length === 0) return due;
    const now = Date.now();
    const ownTurn = groups.filter((g) => (g.ownTopics?.length ?? 0) > 0 && now >= (this.#ownNext.get(g.group) ?? 0));
    // The turn is taken now, so a check running at the same time (a pass's first look) does not take it too.
    for (const g of ownTurn) this.#ownNext.set(g.group, now + this.#ownEveryMs * (0.75 + Math.random() / 2));
    const ownNow = new Map(ownTurn.map((g) => [g.group, (g.ownTopics ?? []).filter((t) => (this.#ownMissing.get(g.group)?.get(t) ?? 0) <= now)]));
    const own = new Set([...ownNow.values()].flat());
    const lookedAt = new Map<string, readonly string[]>(groups.map((g) => [g.group, g.topics]));
    for (const g of ownTurn) lookedAt.set(g.group, [...g.topics, ...ownNow.get(g.group)!]);
    const topics = [...new Set([...lookedAt.values()].flat())];
    const ends = new Map<string, readonly PartitionOffset[]>();
    const missing = new Set<string>();
    // `concurrency` topics at once (the kafkajs adapter runs its own look-ups one at a time: its
    // client fails on overlapping ones). One at a time here, a first check of 300 subscriptions'
    // own topics took over 10 s on @platformatic/kafka, and no member started meanwhile.
    await eachLimited(topics, this.#concurrency, async (t) => {
      try {
        ends.set(t, await this.#source.endOffsets(t));
      } catch (err) {
        if (own.has(t) && err instanceof GatewayError && err.code === 'CEG_INVALID_NAME') missing.add(t);
        else if (signal?.aborted !== true) this.#log.warn({ topic: t, err: errorMessage(err) }, 'work check: end offsets unavailable; trying again at the next check');
      }
    }, signal);
    for (const g of ownTurn) {
      const mine = ownNow.get(g.group)!;
      // A failed lookup: again soon, not at every check (an outage would repeat it and its warning each second).
      if (mine.some((t) => !ends.has(t) && !missing.has(t))) this.#ownNext.set(g.group, now + this.#ownEveryMs / 4);
      // An own topic that does not exist yet: its group's member never ran (it creates them), or it
      // is a retry topic its ordering never made, so nothing can be parked there; looked at again
      // after ten turns, or as soon as a member ran here (forget).
      for (const t of mine.filter((x) => missing.has(x))) {
        let m = this.#ownMissing.get(g.group);
        if (m === undefined) this.#ownMissing.set(g.group, (m = new Map<string, number>()));
        m.set(t, now + this.#ownEveryMs * 10);
      }
    }
    const starts = new Map<string, Promise<readonly PartitionOffset[]>>();
    const logStart = (t: string): Promise<readonly PartitionOffset[]> => {
      let p = starts.get(t);
      if (p === undefined) {
        p = this.#source.offsetsAt(t, { kind: 'earliest' });
        starts.set(t, p);
      }
      return p;
    };
    const candidates = groups.filter((g) => lookedAt.get(g.group)!.some((t) => ends.has(t) && movedPast(this.#known.get(g.group)?.get(t), ends.get(t)!)));
    await eachLimited(candidates, this.#concurrency, async (g) => {
      let known = this.#known.get(g.group);
      for (const t of lookedAt.get(g.group)!) {
        const end = ends.get(t);
        if (end === undefined || !movedPast(known?.get(t), end)) continue;
        try {
          const p = pendingOf(await this.#source.committedOffsets(g.group, t), end, await logStart(t), g.startFrom);
          if (known === undefined) this.#known.set(g.group, (known = new Map<string, ReadonlyMap<number, bigint>>()));
          known.set(t, p.positions);
          if (p.records > 0n || p.unpinned) {
            due.add(g.group);
            return;
          }
        } catch (err) {
          if (own.has(t)) this.#ownNext.set(g.group, Date.now() + this.#ownEveryMs / 4); // its own topics again soon
          if (signal?.aborted !== true) this.#log.warn({ subscription: g.group, topic: t, err: errorMessage(err) }, 'work check: committed offsets unavailable; trying again at the next check');
        }
      }
    }, signal);
    return due;
  }

  /**
   * Forgets what is known of a group: its commits move while a member runs, so they are read
   * again when it is idle once more.
   */
  forget(group: string): void {
    this.#known.delete(group);
    this.#ownNext.delete(group);
    this.#ownMissing.delete(group);
  }

  /** True when the check holds positions for `group` (it looked at it since it last ran a member). */
  knows(group: string): boolean {
    return this.#known.has(group);
  }

  /** Groups the check holds positions for (pruned by the reconciler to the active subscriptions). */
  knownGroups(): string[] {
    return [...new Set([...this.#known.keys(), ...this.#ownNext.keys(), ...this.#ownMissing.keys()])];
  }
}
