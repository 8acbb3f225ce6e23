/**
 * A subscription handle that survives its member being stopped and started again, which a replay
 * of a library subscription or connector needs (`bus.replay`): Kafka moves a group's offsets only
 * while it has no member, so this process's members leave, the offsets move, and new members join
 * behind the same handle. The caller's handle, its `done` and its `unsubscribe()` stay valid;
 * `stats()` keeps counting across restarts; filters set meanwhile apply to the new member.
 * Spec: issue 9 ("Library subscriptions and connectors replay the same way").
 */
import type { FilterExpression } from '../../subscriber/pipeline/dialects.js';
import type { Subscription, SubscriptionActivity, SubscriptionStats } from '../../subscriber/index.js';

/** Starts one member with the given filters. */
export type MemberStarter = (filters: readonly FilterExpression[] | undefined) => Promise<Subscription>;

function sum(a: SubscriptionStats, b: SubscriptionStats): SubscriptionStats {
  const out: Record<string, number> = { ...(a as unknown as Record<string, number>) };
  for (const [k, v] of Object.entries(b as unknown as Record<string, number>)) out[k] = (out[k] ?? 0) + v;
  return out as unknown as SubscriptionStats;
}

export class RestartableSubscription implements Subscription {
  readonly name: string;
  readonly done: Promise<void>;
  /** The kinds it subscribes (a replay resolves their topics). */
  readonly kinds: readonly string[];
  /** The topics its members read (the first member's; every member reads the same). */
  readonly topics: readonly string[];
  /** The first member's (every member of one subscription has the same topics). */
  readonly deadLetterTopic: string | undefined;
  readonly #start: MemberStarter;
  #inner: Subscription | undefined;
  #filters: readonly FilterExpression[] | undefined;
  #base: SubscriptionStats | undefined;
  #lastActivity: SubscriptionActivity = {};
  #closed = false;
  #resolve!: () => void;
  #reject!: (err: unknown) => void;

  private constructor(name: string, kinds: readonly string[], start: MemberStarter, filters: readonly FilterExpression[] | undefined, first: Subscription) {
    this.name = name;
    this.kinds = kinds;
    this.topics = first.topics;
    this.deadLetterTopic = first.deadLetterTopic;
    this.#start = start;
    this.#filters = filters;
    this.done = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Starts the first member. Errors: the starter's. */
  static async start(name: string, kinds: readonly string[], start: MemberStarter, filters?: readonly FilterExpression[]): Promise<RestartableSubscription> {
    const first = await start(filters);
    const s = new RestartableSubscription(name, kinds, start, filters, first);
    s.#attach(first);
    return s;
  }

  #attach(inner: Subscription): void {
    this.#inner = inner;
    inner.done.then(
      () => {
        if (this.#inner === inner) this.#resolve();
      },
      (err: unknown) => {
        if (this.#inner === inner) this.#reject(err);
      },
    );
  }

  stats(): SubscriptionStats {
    const now = this.#inner?.stats();
    if (this.#base === undefined) return now ?? ({} as SubscriptionStats);
    return now === undefined ? this.#base : sum(this.#base, now);
  }

  /** The last delivery and failure over every member so far. */
  activity(): SubscriptionActivity {
    return this.#inner === undefined ? this.#lastActivity : this.activityOf(this.#inner);
  }

  assignments(): readonly { readonly topic: string; readonly partition: number }[] {
    return this.#inner?.assignments() ?? [];
  }

  setFilters(filters: readonly FilterExpression[]): void {
    this.#filters = filters;
    this.#inner?.setFilters(filters);
  }

  /** Stops the member (it commits what it handled and leaves the group); `done` stays pending. */
  async halt(): Promise<void> {
    const inner = this.#inner;
    if (inner === undefined) return;
    this.#inner = undefined;
    await inner.unsubscribe();
    this.#base = this.#base === undefined ? inner.stats() : sum(this.#base, inner.stats());
    this.#lastActivity = this.activityOf(inner);
  }

  private activityOf(inner: Subscription): SubscriptionActivity {
    const a = inner.activity();
    return { ...this.#lastActivity, ...(a.lastDeliveryMs === undefined ? {} : { lastDeliveryMs: a.lastDeliveryMs }), ...(a.lastError === undefined ? {} : { lastError: a.lastError }) };
  }

  /** Starts a new member after {@link halt} (not after unsubscribe). A failure to start ends the handle: `done` rejects with it. */
  async resume(): Promise<void> {
    if (this.#closed || this.#inner !== undefined) return;
    try {
      this.#attach(await this.#start(this.#filters));
    } catch (err) {
      this.#reject(err);
      throw err;
    }
  }

  async unsubscribe(): Promise<void> {
    this.#closed = true;
    const inner = this.#inner;
    if (inner === undefined) {
      this.#resolve();
      return;
    }
    await inner.unsubscribe();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.unsubscribe();
  }
}
