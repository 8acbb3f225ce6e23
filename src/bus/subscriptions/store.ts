/**
 * The definitions store: every subscription created over HTTP lives on one compacted Kafka topic
 * (key = the subscription's group, value = its stored JSON, a tombstone = deleted), not in one
 * process's memory. Every gateway instance reads the whole topic from the earliest offset and
 * keeps following it (a group-less read: nothing committed, no group shared between instances), so
 * each sees the same set and a change reaches all of them within about a fetch wait (1 s).
 *
 * Writes are read back: `put` and `remove` resolve once this instance's own reader has applied the
 * record, so a `GET` right after a `201` on the same instance sees it. Concurrent writers of one
 * key: the later record on the topic wins everywhere (the topic's order is the one order).
 * The in-memory transport runs the same code (the embedded default).
 * Spec: issue 8 ("definitions stored durably in a compacted Kafka topic"); Kafka log compaction
 *   (the latest record per key is kept; a null value deletes the key).
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { Logger } from '../../observability/index.js';
import type { Read, TopicSpec, Transport, TransportRecord } from '../../transport/port.js';
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

export class SubscriptionStore {
  readonly topic: string;
  readonly #transport: Transport;
  readonly #log: Logger;
  readonly #byGroup = new Map<string, StoredSubscription>();
  readonly #listeners = new Set<StoreListener>();
  /** Next offset to apply, per partition. */
  readonly #applied = new Map<number, bigint>();
  readonly #waiters = new Set<() => void>();
  #read: Read | undefined;
  #stopped = false;

  constructor(transport: Transport, topic: string, log: Logger) {
    this.topic = topic;
    this.#transport = transport;
    this.#log = log;
  }

  /**
   * Creates the topic when missing, then reads it from the earliest offset and keeps following;
   * resolves once every record written before this call is applied.
   * Errors: the transport's (CEG_BROKER_UNAVAILABLE retriable …).
   */
  async start(): Promise<void> {
    await this.#transport.ensureTopics([subscriptionsTopicSpec(this.topic)]);
    const ends = await this.#transport.endOffsets(this.topic);
    // Retried start: one read only (it keeps following once started).
    this.#read ??= await this.#transport.read({ topics: [this.topic], from: { kind: 'earliest' } }, (r) => Promise.resolve(this.#apply(r)));
    this.#read.done.catch((err: unknown) => this.#log.error({ topic: this.topic, err: errorMessage(err) }, 'reading the subscriptions topic stopped'));
    await Promise.all(ends.map((e) => this.#until(e.partition, e.offset, 60_000)));
  }

  /** Every stored subscription, by group. */
  all(): ReadonlyMap<string, StoredSubscription> {
    return this.#byGroup;
  }

  get(group: string): StoredSubscription | undefined {
    return this.#byGroup.get(group);
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
  async put(s: StoredSubscription, timeoutMs = 10_000): Promise<void> {
    await this.#write(s.group, enc.encode(JSON.stringify(s)), timeoutMs);
  }

  /** Writes the tombstone of a subscription and waits until it is read back. Errors: as {@link put}. */
  async remove(group: string, timeoutMs = 10_000): Promise<void> {
    await this.#write(group, null, timeoutMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#read?.stop();
    for (const w of this.#waiters) w();
  }

  async #write(group: string, value: Uint8Array | null, timeoutMs: number): Promise<void> {
    const [pos] = await this.#transport.produce(this.topic, [{ key: enc.encode(group), value, headers: [['content-type', enc.encode('application/json')]] }]);
    if (pos !== undefined) await this.#until(pos.partition, pos.offset + 1n, timeoutMs);
  }

  #apply(r: TransportRecord): void {
    try {
      const group = r.key === null ? undefined : dec.decode(r.key);
      if (group === undefined) {
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
      this.#applied.set(r.partition, r.offset + 1n);
      for (const w of [...this.#waiters]) w();
      for (const l of this.#listeners) {
        try {
          l(this.#byGroup);
        } catch (err) {
          this.#log.error({ err: errorMessage(err) }, 'subscriptions listener failed');
        }
      }
    }
  }

  /** Resolves once the partition's records before `offset` are applied. */
  #until(partition: number, offset: bigint, timeoutMs: number): Promise<void> {
    const reached = (): boolean => (this.#applied.get(partition) ?? 0n) >= offset;
    if (offset <= 0n || reached()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new GatewayError('CEG_BROKER_UNAVAILABLE', `the subscriptions topic was not read back within ${timeoutMs} ms`, { retriable: true, details: { topic: this.topic } }));
      }, timeoutMs);
      const check = (): void => {
        if (this.#stopped) {
          clearTimeout(timer);
          this.#waiters.delete(check);
          reject(new GatewayError('CEG_CLOSED', 'the subscriptions store stopped', { retriable: true, details: { topic: this.topic } }));
          return;
        }
        if (!reached()) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
    });
  }
}
