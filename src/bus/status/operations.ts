/**
 * What operators and partners do with a subscription by its name (issue 10): its dead letters
 * (list, redrive, purge) and its status (state, lag per partition, counts, last error and last
 * delivery). One place for every kind of subscription — HTTP resources, connector files, and
 * subscriptions run in this process through the library (`gateway.subscribe`, connectors) — given
 * a resolver from name to consumer group.
 *
 * Counts and times come from this instance's members only (kept in memory, since they started);
 * with several instances each reports its own share and says so (`scope: "instance"`). Lag is
 * exact, from Kafka, whichever instance answers. One source with the metrics: the counts are
 * `Subscription.stats()`, which `ce_gateway_subscription_records_total` reads too; the lag gauge
 * (`ce_gateway_subscription_lag`) reads lag.ts subscriptionLags, the same rule as {@link existingTopicsLag}.
 * Spec: issue 10 "Dead letters as a product", "Status".
 */
import { GatewayError } from '../../core/errors.js';
import { DEFAULT_OWNER } from '../subscriptions/model.js';
import type { TopicPartitionOffset, Transport } from '../../transport/port.js';
import type { DeadLetterPage, DeadLetters, PurgeResult, RedriveResult, Selection } from '../deadletters/index.js';
import type { Subscription } from '../subscriber/index.js';
import { existingTopicsLag } from './lag.js';
import type { SubscriptionLag } from './lag.js';

/** A subscription found by name. */
export interface SubscriptionTarget {
  readonly name: string;
  /** Who it belongs to: the partner that created an HTTP resource, the file's owner, `anonymous` for the gateway's own (library, connectors). */
  readonly owner: string;
  /** The consumer group: its dead letters are on `<group>.dlq`. */
  readonly group: string;
  /**
   * Where it is defined, as `GET /subscriptions` says it: `api` (HTTP resource), `file` (a connector
   * file: `kind: subscription`, and the short forms `shell-hook` / `file-drop`), `library` (run in
   * this process by the library's `subscribe`, not listed).
   */
  readonly origin: 'api' | 'file' | 'library';
  /** The resource's state; `active` for a library subscription running here, `failed` for one whose consumer stopped on a failure. */
  readonly state: 'active' | 'paused' | 'gone' | 'failed';
  /** Topics the group reads (its kinds' topics, its retry and redrive topics); those that do not exist are left out of the lag. */
  readonly topics: readonly string[];
  /** A pull subscription: no member runs in the gateway and nothing reads its redrive topic (its clients read the kinds' topics). */
  readonly pull?: boolean;
  /**
   * Its kinds (catalog names) its owner may no longer read (docs/security.md "Revoking a
   * permission"; the gateway decides them from the partners file it loaded): their dead letters are
   * listed without the event and skipped by a redrive, left to redrive once the permission is back.
   * Absent or empty: none.
   */
  readonly heldKinds?: readonly string[];
  /** When and why its consumer stopped (`failed` only), epoch ms. */
  readonly failure?: { readonly atMs: number; readonly reason: string };
  /** A stored subscription a connector file's shadows (subscriptions/service.ts shadowingFile): not run; the file's name, owner, group and why. */
  readonly shadowedBy?: { readonly name: string; readonly owner: string; readonly group: string; readonly reason: string };
  /**
   * Where the group starts on partitions it has no commit on yet, when its definition says so (an
   * HTTP push subscription's live `startAt`: SubscriptionService.startPositions); the lag counts
   * from there. Absent: such a partition has no lag figure.
   */
  readonly startAt?: readonly TopicPartitionOffset[];
}

/** The answer of `GET /subscriptions/{name}/status`. */
export interface SubscriptionStatus {
  readonly name: string;
  readonly group: string;
  readonly origin: SubscriptionTarget['origin'];
  readonly state: SubscriptionTarget['state'];
  /** A member of the group runs on the instance that answered. */
  readonly running: boolean;
  /**
   * Present when a connector file's subscription shadows this stored one (the same consumer group,
   * or the same name for the anonymous owner): the file's wins and this one is not run; its name,
   * owner, group and what to do.
   */
  readonly shadowedBy?: { readonly name: string; readonly owner: string; readonly group: string; readonly reason: string };
  /** Exact, from Kafka. */
  readonly lag: SubscriptionLag;
  /** Events handled (acknowledged by the handler or the sink) on this instance, by every member it ran since the subscription appeared here (a member stopped when idle keeps its counts). */
  readonly delivered: number;
  /** Failed attempts that were retried, on this instance. */
  readonly retried: number;
  /** Events dead-lettered, on this instance. */
  readonly deadLettered: number;
  /** The last failure here (a retried or dead-lettered attempt), RFC 3339 UTC; null when none. */
  readonly lastError: { readonly time: string; readonly reason: string } | null;
  /** When this instance last delivered an event, RFC 3339 UTC; null when it has not. */
  readonly lastDeliveryTime: string | null;
  /** What the counts and times cover: this instance only (`instance` names it). */
  readonly scope: 'instance';
  readonly instance: string;
}

/** Counters and last delivery/failure of the members of a group that stopped on this instance. */
export interface EarlierFigures {
  readonly handled: number;
  readonly retried: number;
  readonly deadLettered: number;
  /** Epoch ms. */
  readonly lastDeliveryMs?: number;
  readonly lastError?: { readonly atMs: number; readonly reason: string };
}

export interface OperationsDeps {
  readonly transport: Transport;
  readonly deadLetters: DeadLetters;
  /** The subscription of this name (an HTTP resource of `owner`, else a file-declared or library one), or undefined. */
  readonly resolve: (name: string, owner: string) => SubscriptionTarget | undefined;
  /** This instance's member of a group, if it runs one. */
  readonly member: (group: string) => Subscription | undefined;
  /** What this instance's members of a group that stopped counted (idle stops, restarts), kept while the subscription exists here. */
  readonly earlier?: (group: string) => EarlierFigures | undefined;
  /** What pulls of a pull subscription's group handed out on this instance (issue 9); undefined when none ran. */
  readonly pullStats?: (group: string) => { readonly delivered: number; readonly deadLettered: number; readonly lastDeliveryMs?: number } | undefined;
  readonly instance: string;
}

/** Errors of every method: CEG_NOT_FOUND (`field: name`) for an unknown name; the transport's. */
export class SubscriptionOperations {
  readonly #d: OperationsDeps;

  constructor(deps: OperationsDeps) {
    this.#d = deps;
  }

  /** The subscription `name` as `owner` addresses it. Errors: CEG_NOT_FOUND. */
  target(name: string, owner: string = DEFAULT_OWNER): SubscriptionTarget {
    return this.#target(name, owner);
  }

  #target(name: string, owner: string = DEFAULT_OWNER): SubscriptionTarget {
    const t = this.#d.resolve(name, owner);
    if (t === undefined) throw new GatewayError('CEG_NOT_FOUND', `no subscription named ${name.slice(0, 200)}`, { retriable: false, details: { field: 'name' } });
    return t;
  }

  /** Dead letters of the target's `heldKinds` come without their event (DeadLetters.list). */
  deadLetters(name: string, q: { readonly limit?: number; readonly after?: string }, owner: string = DEFAULT_OWNER): Promise<DeadLetterPage> {
    const t = this.#target(name, owner);
    return this.#d.deadLetters.list(t.group, q, t.heldKinds);
  }

  /**
   * Dead letters of the target's `heldKinds` are skipped, each named in `skipped` with the kind
   * (DeadLetters.redrive); the others go as usual.
   * Errors also: CEG_CONFLICT (`field: name`) for a pull subscription (its dead letters are poison records its clients never read; nothing would deliver them).
   */
  redrive(name: string, sel: Selection, owner: string = DEFAULT_OWNER): Promise<RedriveResult> {
    const t = this.#target(name, owner);
    if (t.pull === true) {
      return Promise.reject(new GatewayError('CEG_CONFLICT', `subscription ${name.slice(0, 200)} is a pull subscription: its dead letters are records no client can read (poison); list and purge them, redrive is for subscriptions the gateway delivers`, { retriable: false, details: { field: 'name' } }));
    }
    return this.#d.deadLetters.redrive(t.group, sel, t.heldKinds);
  }

  purge(name: string, sel: Selection, owner: string = DEFAULT_OWNER): Promise<PurgeResult> {
    return this.#d.deadLetters.purge(this.#target(name, owner).group, sel);
  }

  async status(name: string, owner: string = DEFAULT_OWNER): Promise<SubscriptionStatus> {
    const t = this.#target(name, owner);
    // The retry and redrive topics exist only once the subscription ran (or was created over HTTP);
    // a topic missing (as the transport says it, not any CEG_INVALID_NAME) is left out, also one
    // deleted after its partition count was cached: its offsets' read says so, not a 400.
    const lag = await existingTopicsLag(this.#d.transport, t.group, t.topics, t.startAt);
    // A stored subscription a connector file's of the same consumer group shadows is not run: the
    // group's members here run the file's definition, so their counts and times are not this
    // one's (it says `running: false`, 0 and null). The lag stays the group's: its commits are
    // where this one resumes once the clash is gone.
    const own = t.shadowedBy === undefined || t.shadowedBy.group !== t.group;
    const m = own ? this.#d.member(t.group) : undefined;
    const live = m?.stats();
    const now = m?.activity();
    // The subscription on this instance: members that stopped (idle, restarted) and the one running.
    const e = own ? this.#d.earlier?.(t.group) : undefined;
    const s = { handled: (e?.handled ?? 0) + (live?.handled ?? 0), retried: (e?.retried ?? 0) + (live?.retried ?? 0), deadLettered: (e?.deadLettered ?? 0) + (live?.deadLettered ?? 0) };
    const lastDeliveryMs = Math.max(e?.lastDeliveryMs ?? -Infinity, now?.lastDeliveryMs ?? -Infinity);
    const lastError = now?.lastError !== undefined && (e?.lastError === undefined || now.lastError.atMs >= e.lastError.atMs) ? now.lastError : e?.lastError;
    const a = { ...(Number.isFinite(lastDeliveryMs) ? { lastDeliveryMs } : {}), ...(lastError === undefined ? {} : { lastError }) };
    const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());
    // No member runs a pull subscription: its counts are what pulls handed out here (an event
    // pulled again counts again), and nothing is retried (a client pulls again instead).
    const p = own && t.pull === true ? this.#d.pullStats?.(t.group) : undefined;
    const counts = p !== undefined
      ? { delivered: p.delivered, retried: 0, deadLettered: p.deadLettered, lastDeliveryMs: p.lastDeliveryMs }
      : { delivered: s.handled, retried: s.retried, deadLettered: s.deadLettered, lastDeliveryMs: a.lastDeliveryMs };
    return {
      name: t.name,
      group: t.group,
      origin: t.origin,
      state: t.state,
      running: m !== undefined,
      ...(t.shadowedBy === undefined ? {} : { shadowedBy: t.shadowedBy }),
      lag,
      delivered: counts.delivered,
      retried: counts.retried,
      deadLettered: counts.deadLettered,
      lastError: a.lastError !== undefined ? { time: iso(a.lastError.atMs)!, reason: a.lastError.reason } : t.failure !== undefined ? { time: iso(t.failure.atMs)!, reason: t.failure.reason.slice(0, 500) } : null,
      lastDeliveryTime: iso(counts.lastDeliveryMs),
      scope: 'instance',
      instance: this.#d.instance,
    };
  }
}
