/**
 * Pull delivery of a subscription (issue 9), stateless: every request starts from what Kafka and
 * the definitions topic say — the cursor it brings (signed positions) or the group's committed
 * offsets — and nothing about it is kept afterwards. Consecutive requests may land on different
 * gateway instances; a restart loses nothing but requests in flight (their events come again).
 *
 * Kafka-native semantics, no leases: a subscription has one committed position per partition
 * (its consumer group's offsets). A pull without a cursor starts there, so events after it are
 * handed out again (at-least-once, e.g. after a client restart); a pull with a cursor continues
 * after it (read ahead before committing); `POST …/cursors` commits a cursor's positions with a
 * member-less offset commit (a pull subscription's group never has members). Two clients pulling
 * one subscription both see the same events unless they split it with `partitions`.
 * A partition without a committed offset (its offsets expired, or the topic grew) is read from
 * its log start: nothing is missed, some events may come again.
 * Spec: issue 9 ("Pull", "Semantics", "Stateless").
 */
import { GatewayError, isGatewayError } from '../../../core/errors.js';
import { MAX_TIMER_MS } from '../../../core/timer-limit.js';
import { linkedSignal } from '../../../core/abort-fanout.js';
import { raceAbort } from '../../../core/race-abort.js';
import type { Catalog, EventKind } from '../../../catalog/index.js';
import type { EventCodec } from '../../../codec/event/index.js';
import type { Logger } from '../../../observability/index.js';
import type { TopicPartitionOffset, Transport } from '../../../transport/port.js';
import { DEFAULT_OWNER, groupOf } from '../model.js';
import type { StoredSubscription } from '../stored.js';
import { DeadLetteredMemo, Positions, pull } from './batch.js';
import type { PullResult, PullTarget } from './batch.js';
import type { CursorSigner } from './cursor.js';
import { splitReadable } from '../readable.js';
import { kindNameOf } from '../../../catalog/lookup.js';

/**
 * How long past its `wait` a pull's broker calls may run before it answers 503
 * CEG_BROKER_UNAVAILABLE (retriable, `Retry-After`), ms; also the bound of opening a pull (partition
 * counts, committed offsets) and of a cursor commit. A stalled broker otherwise holds a request
 * (and one of its partner's `PULL_MAX_CONCURRENT_PER_PARTNER` slots) for the client's ~30 s
 * request timeout. 5 s is far above a healthy broker's round trips (ms, see docs "Cost").
 * Source: docs/subscriptions.md "Pull delivery" (a pull answers within about its `wait`).
 */
export const PULL_BROKER_GRACE_MS = 5_000;

/**
 * `p`, or a retriable CEG_BROKER_UNAVAILABLE once `ms` milliseconds have passed (its later
 * outcome is dropped: core/race-abort). `what` names the call in the message.
 */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return raceAbort(p, AbortSignal.timeout(Math.max(0, Math.round(ms))), () => new GatewayError('CEG_BROKER_UNAVAILABLE', `${what}: the broker did not answer within ${Math.round(ms)} ms; try again`, { retriable: true }));
}

/** Most events one pull answers. */
export const MAX_PULL_EVENTS = 1000;
/** Longest `wait` of one pull, ms. */
export const MAX_PULL_WAIT_MS = 30_000;
/**
 * Most bytes of one pull answer, and its default: the UTF-8 size of the answer's JSON array text
 * (4 MiB = 4,194,304 bytes). An answer stops before the event that would pass it, except that a
 * single event larger than it goes alone (as Kafka's `fetch.max.bytes`), so nothing stalls.
 */
export const MAX_PULL_BYTES = 4 * 1_048_576;

export interface PullServiceDeps {
  /**
   * How long past its `wait` a pull's broker calls may run, ms, and the bound of opening a pull
   * and of a cursor commit; default {@link PULL_BROKER_GRACE_MS}. An integer ≥ 1. Not an operator
   * setting (createGateway's `pullBrokerGraceMs` sets it): tests shorten it.
   */
  readonly brokerGraceMs?: number;
  /** The stored subscription of a group (the definitions store). */
  readonly subscription: (group: string) => StoredSubscription | undefined;
  readonly catalog: Catalog;
  readonly codec: () => EventCodec;
  readonly transport: Transport;
  /** Undefined: this gateway has no key to sign cursors with (CEG_SECRETS_KEY_MISSING on every pull). */
  readonly signer: CursorSigner | undefined;
  readonly log: Logger;
  /**
   * Whether the subscription's owner may read `kind` now (http/auth `ownerMayRead`); absent: every
   * kind. Only the kinds it may read are pulled: a revoked kind's topic is not read and its
   * committed offsets stay (docs/security.md "Revoking a permission").
   */
  readonly mayRead?: (owner: string, kind: EventKind) => boolean;
  /**
   * True when a connector file declares the subscription of this consumer group: the file's runs
   * and the stored one is not (docs/subscriptions.md "a file wins"), so a stored pull subscription
   * of that group is not pulled, streamed or committed (CEG_CONFLICT, `name`). Absent: none.
   */
  readonly declared?: (group: string) => boolean;
  /**
   * The connector file's subscription that shadows the stored one of this consumer group, of the
   * same group or (for the anonymous owner) of the same name under another owner
   * (subscriptions/service.ts shadowingFile): the file's wins, so the stored pull subscription is
   * not pulled, streamed or committed either (CEG_CONFLICT, `name`, its `reason`). Absent: none.
   */
  readonly shadowedBy?: (group: string) => { readonly owner: string; readonly group: string; readonly reason: string } | undefined;
  /**
   * Calls its listener after every change the definitions store applied (SubscriptionStore
   * onChange: this instance's and the other instances' changes alike): the counters of a
   * subscription deleted (or deleted and created again) are dropped then. Absent: only when read.
   */
  readonly onChange?: (listener: () => void) => unknown;
}

export interface PullOptions {
  /** A cursor from an earlier answer (`ce-gateway-cursor`, an SSE `id:`); absent: the committed positions. */
  readonly cursor?: string;
  /** Only these partition numbers (of every topic of the subscription); absent: all. */
  readonly partitions?: readonly number[];
}

/** One pull's answer: events in the JSON format and the cursor after them. */
export interface PullAnswer {
  /** `text`: the event's JSON text (`JSON.stringify(json)`), the bytes counted against `maxBytes`. */
  readonly events: readonly { readonly json: PullResult['events'][number]['json']; readonly text: string; readonly cursor: string }[];
  readonly cursor: string;
}

/** What this instance handed out and committed per pull subscription since it started (metrics). */
export interface PullStats {
  /** Events answered (long-poll and SSE); the same event counts again when it is pulled again. */
  readonly delivered: number;
  /** Records passed over: other kinds, refused by the filters. */
  readonly skipped: number;
  /** Poison records written to `<group>.dlq` and passed over. */
  readonly deadLettered: number;
  /** Cursors committed. */
  readonly commits: number;
  /** When a pull on this instance last answered events, ms since the epoch; undefined when none has. */
  readonly lastDeliveryMs?: number;
}

/**
 * A pull in progress over several answers (an SSE stream); each answer continues after the last.
 * `next`: up to `max` events and at most `maxBytes` bytes of them as one JSON array (UTF-8, `[`,
 * `,` and `]` included; one event larger than that goes alone), waiting up to `waitMs` ms for the
 * first. The subscription is looked at again before every poll round and before answering, so a
 * pause or delete during the wait ends it with the error a new pull would get.
 * Each answer reads the kinds the subscription has now: a kind added by PATCH joins at the
 * positions fixed for it (its committed offsets), a kind removed stops being read.
 * Its broker calls are bounded: an answer not ready `waitMs` + the broker grace ({@link PullServiceDeps.brokerGraceMs}) after
 * it began fails with CEG_BROKER_UNAVAILABLE.
 * Errors: CEG_CONFLICT (paused or gone meanwhile: `state`), CEG_NOT_FOUND (deleted, or deleted and
 *   created again, meanwhile); see `pull`. After a retriable error (CEG_BROKER_UNAVAILABLE,
 *   CEG_REGISTRY_UNAVAILABLE…) the session may be used again: it continues after the last answer
 *   it gave; after any other error it throws that error again.
 */
export interface PullSession {
  next(o: { readonly max: number; readonly maxBytes: number; readonly waitMs: number; readonly signal: AbortSignal }): Promise<PullAnswer>;
}

/** Thrown by an answer's check when the subscription's kinds changed during it (caught in `next`). */
const KINDS_CHANGED = new Error('the subscription kinds changed during the pull');

function notFound(name: string): GatewayError {
  return new GatewayError('CEG_NOT_FOUND', `no subscription named ${name.slice(0, 100)}`, { retriable: false, details: { field: 'name' } });
}

export class PullService {
  readonly #d: PullServiceDeps;
  /** Per group, for the incarnation (`createdAt`) they were counted for: a new subscription of the same name starts at zero. */
  readonly #stats = new Map<string, { incarnation: string; delivered: number; skipped: number; deadLettered: number; commits: number; lastDeliveryMs?: number }>();
  /** Poison records this process dead-lettered: a pull passing over one again does not write it again. */
  readonly #deadLettered = new DeadLetteredMemo();

  /** {@link PullServiceDeps.brokerGraceMs}, ms. */
  readonly #graceMs: number;

  /** Errors: CEG_INVALID_OPTIONS (not retriable) for a `brokerGraceMs` that is not an integer ≥ 1. */
  constructor(deps: PullServiceDeps) {
    const graceMs = deps.brokerGraceMs ?? PULL_BROKER_GRACE_MS;
    if (!(Number.isInteger(graceMs) && graceMs >= 1 && graceMs <= MAX_TIMER_MS)) throw new GatewayError('CEG_INVALID_OPTIONS', `brokerGraceMs: an integer from 1 to ${MAX_TIMER_MS} ms`, { retriable: false, details: { field: 'brokerGraceMs' } });
    this.#graceMs = graceMs;
    this.#d = deps;
    // At the delete, not at the next scrape: until then (for ever on an instance nobody scrapes)
    // every deleted pull subscription's counters stayed in memory.
    deps.onChange?.(() => this.#forgetGone());
  }

  /**
   * Counters per group, for the subscriptions that still exist: those of a subscription deleted
   * (and maybe created again under its name: another `createdAt`) are forgotten — when the store
   * applies the change (`onChange`), and again here in case a change was missed — so its counts
   * start over (docs/subscriptions.md "Status"). A live view: it follows later pulls and deletes.
   */
  stats(): ReadonlyMap<string, PullStats> {
    this.#forgetGone();
    return this.#stats;
  }

  /** Drops the counters of every group whose subscription is gone or is another incarnation now. */
  #forgetGone(): void {
    for (const [g, c] of this.#stats) if (this.#d.subscription(g)?.createdAt !== c.incarnation) this.#stats.delete(g);
  }

  /**
   * The counters of `group`'s incarnation. A pull or commit that ends after its subscription was
   * deleted counts into a throw-away one: stored, it brought the deleted subscription's counters
   * back after they were dropped.
   */
  #count(group: string, incarnation: string): { delivered: number; skipped: number; deadLettered: number; commits: number; lastDeliveryMs?: number } {
    const fresh = { incarnation, delivered: 0, skipped: 0, deadLettered: 0, commits: 0 };
    if (this.#d.subscription(group)?.createdAt !== incarnation) return fresh;
    let c = this.#stats.get(group);
    if (c?.incarnation !== incarnation) this.#stats.set(group, (c = fresh));
    return c;
  }

  /**
   * Opens a pull of subscription `name`: checks it, the cursor and the partitions, and resolves
   * the start positions.
   * Errors: CEG_NOT_FOUND; CEG_CONFLICT (a push subscription: `delivery.mode`; a paused or gone
   *   one: `state`); CEG_INVALID_CURSOR; CEG_INVALID_PARAMETER (`partitions` naming no partition of
   *   the subscription); CEG_SECRETS_KEY_MISSING (no cursor key); CEG_FORBIDDEN (its owner may
   *   read none of its kinds now: `mayRead`); CEG_CONFLICT (`name`) when a connector file declares
   *   a subscription of its group (the file's wins); CEG_BROKER_UNAVAILABLE (retriable) when the
   *   broker does not answer within the broker grace ({@link PullServiceDeps.brokerGraceMs}); the transport's (retriable).
   */
  async open(name: string, o: PullOptions = {}, owner: string = DEFAULT_OWNER): Promise<PullSession> {
    const signer = this.#signer();
    let s = this.#pullable(name, owner);
    const owned = { group: s.group, createdAt: s.createdAt };
    const fromCursor = o.cursor === undefined ? undefined : signer.verify(owned, o.cursor);
    let topics: ReadonlySet<string> = new Set();
    const start = await within(
      (async (): Promise<TopicPartitionOffset[]> => {
        const wanted = await this.#partitions(s, o.partitions);
        topics = new Set(wanted.keys());
        const out: TopicPartitionOffset[] = [];
        for (const [topic, parts] of wanted) {
          const committed = await this.#d.transport.committedOffsets(s.group, topic);
          for (const partition of parts) {
            const c = fromCursor?.find((p) => p.topic === topic && p.partition === partition)?.offset ?? committed.find((x) => x.partition === partition)?.offset ?? 0n;
            out.push({ topic, partition, offset: c });
          }
        }
        return out;
      })(),
      this.#graceMs,
      'opening the pull',
    );
    // The positions after the last answer; an answer works on a copy, adopted only when it succeeds.
    let positions = new Positions(start);
    let broken: Error | undefined;
    return {
      next: async ({ max, maxBytes, waitMs, signal }) => {
        if (broken !== undefined) throw broken;
        // The definition as it is now: a filter changed on another instance applies at the next
        // answer; a pause or delete (here, or on another instance) ends a wait in progress too.
        const check = (): void => {
          const now = this.#pullable(name, owner);
          if (now.createdAt !== owned.createdAt) throw notFound(name); // deleted and created again meanwhile
          s = now;
        };
        const stop = new AbortController(); // the deadline passed: the attempt in the background stops
        // The caller's signal may outlive this answer by far (an SSE stream's): followed only until
        // the answer is done, never with AbortSignal.any (core/abort-fanout linkedSignal).
        const until = linkedSignal([signal, stop.signal]);
        const deadlineMs = Date.now() + waitMs;
        const answer = async (): Promise<{ r: PullResult; at: Positions; read: ReadonlySet<string> }> => {
          for (;;) {
            check();
            const target = this.#target(s);
            const kinds = [...target.eventIds].sort().join(',');
            const at = new Positions(positions.all());
            // Kinds added since the last answer (PATCH `kinds`): their topics' partitions join at the
            // positions fixed for them (committed before the PATCH's 200); a kind removed stops being read.
            const read = await this.#follow(s, at, topics, o.partitions);
            // A change of kinds during this attempt: its records were judged with the old kinds, so
            // it is dropped (its copy of the positions with it) and made again with the new ones.
            const same = (): void => {
              check();
              if ([...this.#target(s).eventIds].sort().join(',') !== kinds) throw KINDS_CHANGED;
            };
            try {
              const r = await pull({ transport: this.#d.transport, codec: this.#d.codec(), log: this.#d.log, deadLettered: this.#deadLettered }, target, at, { max, maxBytes, deadlineMs, signal: until.signal, check: same });
              return { r, at, read };
            } catch (err) {
              if (err !== KINDS_CHANGED || signal.aborted || stop.signal.aborted) throw err;
            }
          }
        };
        let done: { r: PullResult; at: Positions; read: ReadonlySet<string> };
        try {
          done = await within(answer(), waitMs + this.#graceMs, 'pull');
        } catch (err) {
          stop.abort();
          const e = err instanceof Error ? err : new Error(String(err));
          // Retriable (broker or registry unavailable, the deadline passed): the positions are
          // still those after the last answer, so the session may be used again.
          if (!isGatewayError(e) || !e.retriable) broken = e;
          throw e;
        } finally {
          until.release();
        }
        const { r, at, read } = done;
        positions = at;
        topics = read;
        const c = this.#count(owned.group, owned.createdAt);
        c.delivered += r.events.length;
        if (r.events.length > 0) c.lastDeliveryMs = Date.now();
        c.skipped += r.skipped;
        c.deadLettered += r.deadLettered;
        return { events: r.events.map((e) => ({ json: e.json, text: e.text, cursor: signer.sign(owned, e.after) })), cursor: signer.sign(owned, r.positions) };
      },
    };
  }

  /**
   * Brings `at` from the topics `held` to those the subscription reads now, and returns those: a
   * topic no longer read is dropped, a new one's partitions (only `only`'s numbers, when given)
   * join at the group's committed offsets — the positions a new pull would start from; the log
   * start where none is committed. Broker calls only for a topic new to the pull.
   */
  async #follow(s: StoredSubscription, at: Positions, held: ReadonlySet<string>, only: readonly number[] | undefined): Promise<ReadonlySet<string>> {
    const topics = new Set(this.#topics(s));
    for (const t of held) if (!topics.has(t)) at.drop(t);
    for (const topic of topics) {
      if (held.has(topic)) continue;
      const n = await this.#d.transport.partitionCount(topic);
      const committed = await this.#d.transport.committedOffsets(s.group, topic);
      for (let partition = 0; partition < n; partition++) {
        if (only !== undefined && !only.includes(partition)) continue;
        at.set({ topic, partition, offset: committed.find((x) => x.partition === partition)?.offset ?? 0n });
      }
    }
    return topics;
  }

  /**
   * Commits a cursor's positions as the subscription's committed offsets (partitions it does not
   * name keep theirs). Any instance may commit any cursor of the subscription.
   * Errors: CEG_NOT_FOUND, CEG_CONFLICT (a push subscription, not active, or its group has members
   *   someone else started), CEG_INVALID_CURSOR, CEG_SECRETS_KEY_MISSING, CEG_FORBIDDEN (as
   *   `open`), CEG_BROKER_UNAVAILABLE (retriable) when the broker does not answer a topic's commit
   *   within the broker grace ({@link PullServiceDeps.brokerGraceMs}) (that commit may still land: commit again, it is
   *   idempotent), the transport's. Positions on topics of kinds its owner may no longer read are not
   *   committed (held there).
   */
  async commit(name: string, cursor: string, owner: string = DEFAULT_OWNER): Promise<void> {
    const signer = this.#signer();
    const s = this.#pullable(name, owner);
    const positions = signer.verify({ group: s.group, createdAt: s.createdAt }, cursor);
    const topics = new Set(this.#topics(s));
    const byTopic = new Map<string, { partition: number; offset: bigint }[]>();
    for (const p of positions) {
      if (!topics.has(p.topic)) continue; // a topic the subscription no longer reads (its kinds changed)
      byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), { partition: p.partition, offset: p.offset }]);
    }
    for (const [topic, offsets] of byTopic) {
      await within(this.#d.transport.commitOffsets(s.group, topic, offsets), this.#graceMs, 'committing the cursor').catch((err: unknown) => {
        // Kafka refuses member-less commits while the group has members: someone joined it (a
        // Kafka client under the subscription's group id). Not the gateway's fault: a conflict.
        if (isGatewayError(err, 'CEG_INVALID_OPTIONS') && err.retriable) {
          throw new GatewayError('CEG_CONFLICT', `the consumer group ${s.group} has active members (a client joined it directly); a pull subscription's positions can be committed only while it has none`, { retriable: false, cause: err, details: { field: 'cursor' } });
        }
        throw err;
      });
    }
    this.#count(s.group, s.createdAt).commits++;
  }

  #signer(): CursorSigner {
    if (this.#d.signer === undefined) {
      throw new GatewayError('CEG_SECRETS_KEY_MISSING', 'SUBSCRIPTION_SECRETS_KEY (or SUBSCRIPTION_SECRETS_KEY_FILE) is required: pull cursors are signed with a key derived from it', { retriable: false, details: { field: 'SUBSCRIPTION_SECRETS_KEY' } });
    }
    return this.#d.signer;
  }

  #pullable(name: string, owner: string): StoredSubscription {
    const s = this.#d.subscription(groupOf(owner, name));
    if (s === undefined) throw notFound(name);
    if (this.#d.declared?.(s.group) === true) {
      throw new GatewayError('CEG_CONFLICT', `subscription ${name.slice(0, 100)} is not run: a connector file declares a subscription of the same owner and name (consumer group ${s.group}), and the file's wins; rename one of them`, { retriable: false, details: { field: 'name' } });
    }
    const shadow = this.#d.shadowedBy?.(s.group);
    if (shadow !== undefined) {
      throw new GatewayError('CEG_CONFLICT', `subscription ${name.slice(0, 100)} is not run: ${shadow.reason}`, { retriable: false, details: { field: 'name', shadowedBy: { owner: shadow.owner, group: shadow.group } } });
    }
    if (s.delivery.mode !== 'pull') throw new GatewayError('CEG_CONFLICT', `subscription ${name} is a ${s.delivery.mode} subscription; pull needs delivery.mode pull`, { retriable: false, details: { field: 'delivery.mode' } });
    if (s.state !== 'active') throw new GatewayError('CEG_CONFLICT', `subscription ${name} is ${s.state}; set state active to pull`, { retriable: false, details: { field: 'state' } });
    if (this.#readable(s).length === 0) {
      const names = s.kinds.map((k) => kindNameOf(this.#d.catalog, k));
      throw new GatewayError('CEG_FORBIDDEN', `subscription ${name} delivers nothing: its owner may no longer read ${names.join(', ')} (subscribe permission); PATCH its kinds or delete it`, { retriable: false, details: { permission: 'subscribe', field: 'kinds', forbiddenKinds: names } });
    }
    return s;
  }

  /** The subscription's kinds its owner may read now (all of them without `mayRead`). */
  #readable(s: StoredSubscription): EventKind[] {
    return splitReadable(this.#d.catalog, s.kinds, s.owner, this.#d.mayRead).readable;
  }

  #topics(s: StoredSubscription): string[] {
    return [...new Set(this.#readable(s).map((k) => k.topic.name))];
  }

  #target(s: StoredSubscription): PullTarget {
    const eventIds = new Set(this.#readable(s).map((k) => k.eventId));
    return { group: s.group, incarnation: s.createdAt, eventIds, filters: s.filters, data: s.delivery.mode === 'pull' ? s.delivery.data : 'json' };
  }

  /** The partitions to read per topic. Errors: CEG_INVALID_PARAMETER when `partitions` names one that no topic has. */
  async #partitions(s: StoredSubscription, only: readonly number[] | undefined): Promise<Map<string, number[]>> {
    const out = new Map<string, number[]>();
    let most = 0;
    for (const topic of this.#topics(s)) {
      const n = await this.#d.transport.partitionCount(topic);
      most = Math.max(most, n);
      out.set(topic, Array.from({ length: n }, (_, p) => p).filter((p) => only === undefined || only.includes(p)));
    }
    const outside = only?.filter((p) => p >= most) ?? [];
    if (outside.length > 0) {
      throw new GatewayError('CEG_INVALID_PARAMETER', `partitions: ${outside.join(', ')} beyond the subscription's topics (partitions 0–${most - 1})`, { retriable: false, details: { field: 'partitions' } });
    }
    return out;
  }
}
