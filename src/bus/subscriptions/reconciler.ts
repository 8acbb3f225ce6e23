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
 * Spec: issue 8 ("Where deliveries run"); bus spec S1 (a subscription is one consumer group).
 */
import { errorMessage } from '../../core/errors.js';
import { retryPolicy } from '../../core/retry.js';
import type { RetryPolicy } from '../../core/retry.js';
import type { Logger } from '../../observability/index.js';
import type { StartFrom } from '../../transport/port.js';
import type { EventHandler, Ordering, SubscribeOptions, Subscription } from '../subscriber/index.js';
import type { FilterExpression } from '../subscriber/pipeline/dialects.js';
import type { SubscriptionState } from './model.js';

/** What the reconciler needs to know of a subscription to run it; the sink reads the rest. */
export interface RunSpec {
  /** The consumer group: the identity of the subscription. */
  readonly group: string;
  readonly kinds: readonly string[];
  readonly filters: readonly FilterExpression[];
  readonly ordering: Ordering;
  readonly retry: {
    readonly maxAttempts: number;
    readonly backoff: { readonly initialMs: number; readonly factor: number; readonly maxMs: number; readonly jitter: number };
    readonly maxAgeMs?: number;
  };
  /** For a group without committed offsets (HTTP subscriptions have theirs committed at create). */
  readonly startFrom: StartFrom;
  readonly state: SubscriptionState;
  /**
   * `ordering: key`: partitions delivered at once by this instance, one record each.
   * `ordering: none`: deliveries in flight on this instance, several of one partition at once.
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

interface Running<D extends RunSpec> {
  d: D;
  readonly sink: RunningSink<D>;
  readonly sub: Subscription;
  readonly restartKey: string;
}

const restartKey = (d: RunSpec): string => JSON.stringify([d.kinds, d.ordering, d.retry, d.concurrency, d.startFrom]);

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
  #timer: NodeJS.Timeout | undefined;

  constructor(host: SubscribeHost, factory: SinkFactory<D>, log: Logger, onGone: (group: string, reason: string) => Promise<void>) {
    this.#host = host;
    this.#factory = factory;
    this.#log = log;
    this.#onGone = onGone;
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

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
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
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#schedule(), delay);
    this.#timer.unref();
  }

  async #reconcile(): Promise<void> {
    const desired = this.#desired;
    for (const [group, r] of [...this.#running]) {
      const d = desired.get(group);
      if (d === undefined || d.state !== 'active' || restartKey(d) !== r.restartKey) {
        await this.#stopOne(group);
        this.#log.info({ subscription: group, why: d === undefined ? 'deleted' : d.state !== 'active' ? d.state : 'changed' }, 'subscription stopped on this instance');
      } else if (d !== r.d) {
        if (JSON.stringify(d.filters) !== JSON.stringify(r.d.filters)) r.sub.setFilters(d.filters);
        r.sink.update(d);
        r.d = d;
      }
    }
    for (const [group, d] of desired) {
      if (this.#stopped) return;
      if (d.state !== 'active' || this.#running.has(group)) continue;
      try {
        await this.#start(d);
        this.#failures.delete(group);
      } catch (err) {
        this.#log.warn({ subscription: group, err: errorMessage(err) }, 'subscription could not start on this instance; trying again');
        this.#retryLater(group);
      }
    }
  }

  async #start(d: D): Promise<void> {
    const group = d.group;
    const topics = this.#host.topicsOf(d.kinds);
    let total = 0;
    for (const t of topics) total += await this.#host.partitionCount(t);
    let sub: Subscription | undefined;
    const ctx: SinkContext = {
      markGone: (reason) => {
        this.#onGone(group, reason).catch((err: unknown) => this.#log.error({ subscription: group, err: errorMessage(err) }, 'could not store the gone state'));
      },
      share: () => {
        const own = sub?.assignments().filter((a) => topics.includes(a.topic)).length ?? 0;
        return total === 0 ? 1 : own / total;
      },
    };
    const sink = this.#factory(d, ctx);
    const b = d.retry.backoff;
    try {
      sub = await this.#host.subscribe({
        subscription: group,
        kinds: d.kinds,
        handler: sink.handler,
        retry: retryPolicy({ maxAttempts: d.retry.maxAttempts, initialDelayMs: b.initialMs, factor: b.factor, maxDelayMs: b.maxMs, jitter: b.jitter }),
        ordering: d.ordering,
        filters: d.filters,
        startFrom: d.startFrom,
        partitionsConcurrently: d.concurrency,
        // Lanes: fetching goes on while deliveries are in hand. Unordered: `concurrency` deliveries
        // in flight on this instance (the sink's bound), several of one partition at once (issue 8,
        // "ordering none"); by key: one per partition.
        inFlightPerPartition: d.ordering === 'none' ? d.concurrency : 1,
        // The sink bounds each attempt itself (retry.timeoutMs, the hook's timeoutMs).
        handlerTimeoutMs: Number.POSITIVE_INFINITY,
        ...(d.retry.maxAgeMs === undefined ? {} : { maxAgeMs: d.retry.maxAgeMs }),
        ...PUSH_COMMIT,
      });
    } catch (err) {
      await sink.close();
      throw err;
    }
    const running: Running<D> = { d, sink, sub, restartKey: restartKey(d) };
    this.#running.set(group, running);
    this.#log.info({ subscription: group, kinds: d.kinds }, 'subscription started on this instance');
    const s = sub;
    s.done.catch((err: unknown) => {
      if (this.#running.get(group)?.sub !== s) return;
      this.#log.error({ subscription: group, err: errorMessage(err) }, 'subscription member stopped on a failure; restarting it');
      this.#running.delete(group);
      void sink.close();
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
      await r.sink.close();
    }
  }
}
