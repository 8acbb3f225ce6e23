/**
 * The definitions store: every subscription created over HTTP lives on one compacted Kafka topic
 * (key = the subscription's group, value = its stored JSON, a tombstone = deleted), not in one
 * process's memory. Every gateway instance reads the whole topic from the earliest offset and
 * keeps following it (a group-less read: nothing committed, no group shared between instances), so
 * each sees the same set and a change reaches all of them within about a fetch wait (1 s).
 *
 * Writes are read back: `put` and `remove` resolve once this instance's own reader has applied the
 * record, so a `GET` right after a `201` on the same instance sees it. Creating is a
 * check-and-set over all instances (`claim`, then `put`): of two creates of one name exactly one
 * wins, and an owner's quota (`maxSubscriptions`, issue 11) is decided at the same record, so
 * simultaneous creates on several instances never pass it together. Concurrent updates of one key: the later record on the topic wins everywhere (the topic's
 * order is the one order).
 * The in-memory transport runs the same code (the embedded default).
 * Spec: issue 8 ("definitions stored durably in a compacted Kafka topic"); Kafka log compaction
 *   (the latest record per key is kept; a null value deletes the key).
 */
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../observability/index.js';
import { randomUUID } from 'node:crypto';
import type { OutboundRecord, TopicSpec, Transport, TransportRecord } from '../../transport/port.js';
import { TopicFollower } from '../follow/topic-follower.js';
import { parseStored } from './stored.js';
import type { StoredSubscription } from './stored.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Default name of the definitions topic. */
export const DEFAULT_SUBSCRIPTIONS_TOPIC = 'ce-gateway.subscriptions';

/** The definitions topic: one partition (one order of changes), compacted, kept forever. */
export function subscriptionsTopicSpec(name: string): TopicSpec {
  return { name, partitions: 1, retentionMs: -1, cleanupPolicy: 'compact' };
}

export type StoreListener = (all: ReadonlyMap<string, StoredSubscription>) => void;

/**
 * How long a claim on a name holds without its definition, ms: a later claim of the same group
 * more than this after it (by record timestamps) is not held up by it (its writer died). The
 * creator gives up before (see {@link CLAIM_WRITE_MS}).
 */
export const CLAIM_TTL_MS = 60_000;
/** A creator writes its definition no later than this after its claim, ms, else it gives up (503, retriable). */
export const CLAIM_WRITE_MS = 45_000;

const CLAIM_MARK = '\u0000claim\u0000';
const claimKey = (group: string, nonce: string): string => `${group}${CLAIM_MARK}${nonce}`;

/**
 * The owner's quota a claim is decided against (issue 11 `maxSubscriptions`): carried in the claim
 * record, so every instance decides with the same bound whatever its own partners file says.
 */
export interface ClaimQuota {
  readonly owner: string;
  /** Most subscriptions (stored definitions) `owner` may have; an integer ≥ 0. */
  readonly max: number;
}

/** Why a claim lost: the name is held (or being created), or the owner's quota is full. */
export type ClaimRefusal = 'name' | 'quota';

/** The quota in a claim record's JSON value, when it names one (`{ claim, group, owner, max }`). */
function claimQuota(value: Uint8Array | null): ClaimQuota | undefined {
  if (value === null) return undefined;
  try {
    const v = JSON.parse(dec.decode(value)) as { owner?: unknown; max?: unknown };
    return typeof v.owner === 'string' && typeof v.max === 'number' && Number.isInteger(v.max) && v.max >= 0 ? { owner: v.owner, max: v.max } : undefined;
  } catch {
    return undefined;
  }
}

/** A claim this instance made, once its record was read back. */
export interface Claim {
  readonly group: string;
  readonly nonce: string;
  /** The claim's record timestamp (the writer's clock, epoch ms). */
  readonly atMs: number;
  /**
   * First of the pending claims on a name nobody holds, and (with a quota) the owner had fewer
   * than `max` subscriptions and winning claims pending: the creator may write the definition.
   */
  readonly won: boolean;
  /** Set when `won` is false. */
  readonly refusal?: ClaimRefusal;
}

interface PendingClaim {
  readonly nonce: string;
  readonly atMs: number;
  /** The owner named in the claim record (claims written before quotas name none). */
  readonly owner?: string;
  /** Whether it won when it was applied: a pending winner will become a definition. */
  readonly won: boolean;
}

export class SubscriptionStore {
  readonly topic: string;
  readonly #transport: Transport;
  readonly #log: Logger;
  readonly #follower: TopicFollower;
  readonly #byGroup = new Map<string, StoredSubscription>();
  readonly #listeners = new Set<StoreListener>();
  /** Claims read from the topic and not released yet, per group, in topic order. */
  readonly #claims = new Map<string, PendingClaim[]>();
  /** Decisions on the claims this instance wrote, by nonce (taken by {@link claim}); undefined = not applied yet. */
  readonly #decided = new Map<string, { readonly won: boolean; readonly refusal?: ClaimRefusal } | undefined>();

  constructor(transport: Transport, topic: string, log: Logger) {
    this.topic = topic;
    this.#transport = transport;
    this.#log = log;
    this.#follower = new TopicFollower({ transport, spec: subscriptionsTopicSpec(topic), apply: (r) => this.#apply(r), log, label: 'the subscriptions topic' });
  }

  /**
   * Creates the topic when missing, then reads it from the earliest offset and keeps following;
   * resolves once every record written before this call is applied.
   * Errors: the transport's (CEG_BROKER_UNAVAILABLE retriable …).
   */
  async start(): Promise<void> {
    await this.#follower.start(60_000);
  }

  /**
   * Whether the definitions topic is being read now (false while a read that ended with an error,
   * e.g. after a broker outage, is started again: changes made on other instances meanwhile are
   * not applied here yet). Readiness uses it.
   */
  get following(): boolean {
    return this.#follower.following;
  }

  /** Every stored subscription, by group. */
  all(): ReadonlyMap<string, StoredSubscription> {
    return this.#byGroup;
  }

  get(group: string): StoredSubscription | undefined {
    return this.#byGroup.get(group);
  }

  /**
   * Resolves once every record written to the topic before this call is applied here: what a
   * read-modify-write re-reads first (a change another instance stored a moment ago is in it).
   * Errors: the transport's; CEG_BROKER_UNAVAILABLE (retriable) when not caught up within `timeoutMs`.
   */
  async catchUp(timeoutMs = 10_000): Promise<void> {
    await this.#follower.catchUp(timeoutMs);
  }

  /** Calls `listener` with the whole set after every applied change; returns its remover. */
  onChange(listener: StoreListener): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /**
   * Writes a subscription and waits until this instance has read it back.
   * Errors: the transport's; CEG_BROKER_UNAVAILABLE (retriable) when it is not read back within `timeoutMs`.
   */
  async put(s: StoredSubscription, timeoutMs = 10_000, releases?: Claim): Promise<void> {
    const extra: OutboundRecord[] = [];
    if (releases !== undefined) {
      // The claim, and claims on the name whose writers gave up without a word (expired), go with the definition.
      const stale = (this.#claims.get(s.group) ?? []).filter((c) => c.nonce === releases.nonce || releases.atMs - c.atMs > CLAIM_TTL_MS);
      if (!stale.some((c) => c.nonce === releases.nonce)) stale.push({ nonce: releases.nonce, atMs: releases.atMs, won: releases.won });
      for (const c of stale) extra.push({ key: enc.encode(claimKey(s.group, c.nonce)), value: null, headers: [] });
    }
    await this.#write(s.group, enc.encode(JSON.stringify(s)), timeoutMs, extra);
  }

  /** Writes the tombstone of a subscription and waits until it is read back. Errors: as {@link put}. */
  async remove(group: string, timeoutMs = 10_000): Promise<void> {
    await this.#write(group, null, timeoutMs);
  }

  /**
   * Claims the name `group` on the topic before creating it (check-and-set over every instance):
   * writes a claim record with a key of its own and reads the topic back to it. Every instance
   * applies the same rule at that record, in the topic's one order: the claim wins when no
   * subscription holds the group and no earlier claim on it is pending (released by a definition or
   * a give-up, or older than {@link CLAIM_TTL_MS}). So of two creates of one name, on any instances
   * at any moment, exactly one wins. The winner writes the definition with {@link put}
   * (`releases` the claim), the loser calls {@link release}.
   * With a `quota`, the claim also loses (refusal `quota`) unless, at its record, the owner's
   * stored subscriptions plus its other winning claims still pending (not older than
   * {@link CLAIM_TTL_MS}) are fewer than `quota.max`: of N+1 simultaneous creates of an owner
   * with room for N, on any instances, exactly N win.
   * Claims have keys of their own (`<group>\0claim\0<nonce>`), so compaction never puts a
   * loser's record in the place of a winner's definition.
   * Errors: the transport's; CEG_BROKER_UNAVAILABLE (retriable) when not read back within `timeoutMs`.
   * Spec: issue 8 follow-up ("two POST /subscriptions of the same name at the same time on two
   *   gateways must not both succeed").
   */
  async claim(group: string, timeoutMs = 10_000, quota?: ClaimQuota): Promise<Claim> {
    const nonce = randomUUID();
    const atMs = Date.now();
    this.#decided.set(nonce, undefined);
    try {
      const value = { claim: nonce, group, ...(quota === undefined ? {} : { owner: quota.owner, max: quota.max }) };
      await this.#follower.write([{ key: enc.encode(claimKey(group, nonce)), value: enc.encode(JSON.stringify(value)), headers: [['content-type', enc.encode('application/json')]], timestampMs: atMs }], timeoutMs);
      const decided = this.#decided.get(nonce) ?? { won: false, refusal: 'name' };
      return { group, nonce, atMs, ...decided };
    } finally {
      this.#decided.delete(nonce);
    }
  }

  /** Gives a claim up (a tombstone of its record). Errors: the transport's. */
  async release(c: Claim): Promise<void> {
    await this.#transport.produce(this.topic, [{ key: enc.encode(claimKey(c.group, c.nonce)), value: null, headers: [] }]);
  }

  async stop(): Promise<void> {
    await this.#follower.stop();
  }

  async #write(group: string, value: Uint8Array | null, timeoutMs: number, after: readonly OutboundRecord[] = []): Promise<void> {
    // One produce call, one partition: the definition and the claim tombstones land in this order.
    await this.#follower.write([{ key: enc.encode(group), value, headers: [['content-type', enc.encode('application/json')]] }, ...after], timeoutMs);
  }

  /** A claim record (or its tombstone): decides it, the same way on every instance (see {@link claim}). */
  #applyClaim(key: string, r: TransportRecord): void {
    const at = key.indexOf(CLAIM_MARK);
    const group = key.slice(0, at);
    const nonce = key.slice(at + CLAIM_MARK.length);
    const pending = this.#claims.get(group) ?? [];
    const others = pending.filter((c) => c.nonce !== nonce);
    if (r.value === null) {
      if (others.length === 0) this.#claims.delete(group);
      else this.#claims.set(group, others);
      return;
    }
    const blocking = others.some((c) => r.timestampMs - c.atMs <= CLAIM_TTL_MS);
    const quota = claimQuota(r.value);
    const nameFree = !this.#byGroup.has(group) && !blocking;
    const room = quota === undefined || this.#held(quota.owner, r.timestampMs) < quota.max;
    const won = nameFree && room;
    this.#claims.set(group, [...others, { nonce, atMs: r.timestampMs, won, ...(quota === undefined ? {} : { owner: quota.owner }) }]);
    if (this.#decided.has(nonce)) this.#decided.set(nonce, won ? { won } : { won, refusal: nameFree ? 'quota' : 'name' });
  }

  /**
   * What `owner` holds at a claim record stamped `atMs`: its stored subscriptions plus its winning
   * claims still pending and not expired (each becomes a definition unless its creator gives up).
   * A winner's definition and its claim's tombstone are written in one produce call, so they are
   * consecutive records and nothing is counted twice at another claim.
   */
  #held(owner: string, atMs: number): number {
    let n = 0;
    for (const s of this.#byGroup.values()) if (s.owner === owner) n++;
    for (const pending of this.#claims.values()) for (const c of pending) if (c.won && c.owner === owner && atMs - c.atMs <= CLAIM_TTL_MS) n++;
    return n;
  }

  #apply(r: TransportRecord): void {
    let changed = true;
    try {
      const group = r.key === null ? undefined : dec.decode(r.key);
      if (group !== undefined && group.includes(CLAIM_MARK)) {
        changed = false; // a claim changes no definition: listeners are not called
        this.#applyClaim(group, r);
      } else if (group === undefined) {
        this.#log.warn({ topic: this.topic, offset: r.offset.toString() }, 'subscriptions topic: record without a key ignored');
      } else if (r.value === null) {
        this.#byGroup.delete(group);
      } else {
        let json: unknown;
        try {
          json = JSON.parse(dec.decode(r.value));
        } catch {
          json = undefined;
        }
        const parsed = parseStored(json);
        if (!parsed.ok) this.#log.warn({ topic: this.topic, offset: r.offset.toString(), group: group.slice(0, 250), reason: parsed.reason }, 'subscriptions topic: record ignored (not a stored subscription)');
        else if (parsed.value.group !== group) this.#log.warn({ topic: this.topic, offset: r.offset.toString() }, 'subscriptions topic: record ignored (key and group differ)');
        else this.#byGroup.set(group, parsed.value);
      }
    } finally {
      for (const l of changed ? this.#listeners : []) {
        try {
          l(this.#byGroup);
        } catch (err) {
          this.#log.error({ err: errorMessage(err) }, 'subscriptions listener failed');
        }
      }
    }
  }
}
