/**
 * Follows a small state topic from its earliest offset (a group-less read: nothing committed, no
 * group shared between instances) and lets callers wait until this instance has applied it up to
 * an offset — the read-your-write a state store built on a topic needs: write a record, then wait
 * until the own reader has applied it, so a read on the same instance right after sees it.
 * Used by the subscription definitions store and the replay audit log.
 * Spec: issue 8 ("definitions stored durably in a compacted Kafka topic … every instance sees the
 *   same set"); issue 9 (replay audit log).
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { Logger } from '../../observability/index.js';
import type { OutboundRecord, Read, Position, TopicSpec, Transport, TransportRecord } from '../../transport/port.js';

export interface TopicFollowerOptions {
  readonly transport: Transport;
  /** The topic, created with this spec when missing. */
  readonly spec: TopicSpec;
  /** Applies one record; runs in the topic's order, before waiters up to its offset are released. Must not throw. */
  readonly apply: (r: TransportRecord) => void;
  readonly log: Logger;
  /** How errors and logs name the topic, e.g. "the subscriptions topic". */
  readonly label: string;
}

export class TopicFollower {
  readonly topic: string;
  readonly #o: TopicFollowerOptions;
  /** Next offset to apply, per partition. */
  readonly #applied = new Map<number, bigint>();
  readonly #waiters = new Set<() => void>();
  #read: Read | undefined;
  #stopped = false;

  constructor(o: TopicFollowerOptions) {
    this.topic = o.spec.name;
    this.#o = o;
  }

  /**
   * Creates the topic when missing, reads it from the earliest offset and keeps following;
   * resolves once every record written before this call is applied. A retried start reads once.
   * Errors: the transport's (CEG_BROKER_UNAVAILABLE retriable …); CEG_BROKER_UNAVAILABLE when not
   * caught up within `timeoutMs`.
   */
  async start(timeoutMs = 60_000): Promise<void> {
    await this.#o.transport.ensureTopics([this.#o.spec]);
    const ends = await this.#o.transport.endOffsets(this.topic);
    this.#read ??= await this.#o.transport.read({ topics: [this.topic], from: { kind: 'earliest' } }, (r) => Promise.resolve(this.#apply(r)));
    this.#read.done.catch((err: unknown) => this.#o.log.error({ topic: this.topic, err: errorMessage(err) }, `reading ${this.#o.label} stopped`));
    await Promise.all(ends.map((e) => this.until(e.partition, e.offset, timeoutMs)));
  }

  /** Resolves once every record written before this call is applied. Errors: as {@link start}. */
  async catchUp(timeoutMs: number): Promise<void> {
    const ends = await this.#o.transport.endOffsets(this.topic);
    await Promise.all(ends.map((e) => this.until(e.partition, e.offset, timeoutMs)));
  }

  /**
   * Produces `records` (one produce call: they land in this order) and waits until this instance
   * has applied them. Errors: the transport's; CEG_BROKER_UNAVAILABLE (retriable) when not read
   * back within `timeoutMs`; CEG_CLOSED once stopped.
   */
  async write(records: readonly OutboundRecord[], timeoutMs: number): Promise<readonly Position[]> {
    const positions = await this.#o.transport.produce(this.topic, records);
    const last = new Map<number, bigint>();
    for (const p of positions) if ((last.get(p.partition) ?? -1n) < p.offset) last.set(p.partition, p.offset);
    await Promise.all([...last].map(([partition, offset]) => this.until(partition, offset + 1n, timeoutMs)));
    return positions;
  }

  /** Resolves once the partition's records before `offset` are applied. Errors: as {@link write}. */
  until(partition: number, offset: bigint, timeoutMs: number): Promise<void> {
    const reached = (): boolean => (this.#applied.get(partition) ?? 0n) >= offset;
    if (offset <= 0n || reached()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new GatewayError('CEG_BROKER_UNAVAILABLE', `${this.#o.label} was not read back within ${timeoutMs} ms`, { retriable: true, details: { topic: this.topic } }));
      }, timeoutMs);
      const check = (): void => {
        if (this.#stopped) {
          clearTimeout(timer);
          this.#waiters.delete(check);
          reject(new GatewayError('CEG_CLOSED', `${this.#o.label}: reading stopped`, { retriable: true, details: { topic: this.topic } }));
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

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#read?.stop();
    for (const w of [...this.#waiters]) w();
  }

  #apply(r: TransportRecord): void {
    try {
      this.#o.apply(r);
    } catch (err) {
      this.#o.log.error({ topic: this.topic, offset: r.offset.toString(), err: errorMessage(err) }, `${this.#o.label}: applying a record failed`);
    } finally {
      this.#applied.set(r.partition, r.offset + 1n);
      for (const w of [...this.#waiters]) w();
    }
  }
}
