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
import { retryPolicy } from '../../core/retry.js';
import { retrying } from '../../core/retrying.js';
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

/**
 * Waits between tries to read the topic again after its read ended with an error (a broker down
 * for longer than the client's own retries): 0.5 s doubling to 10 s, for as long as it takes.
 */
const RESUME_RETRY = retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 500, factor: 2, maxDelayMs: 10_000, jitter: 0.2 });

export class TopicFollower {
  readonly topic: string;
  readonly #o: TopicFollowerOptions;
  /** Next offset to apply, per partition. */
  readonly #applied = new Map<number, bigint>();
  readonly #waiters = new Set<() => void>();
  #read: Read | undefined;
  #stopped = false;
  /** Aborts a resume in progress at stop(). */
  readonly #stopping = new AbortController();
  #following = false;

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
    if (this.#read === undefined) {
      this.#read = await this.#o.transport.read({ topics: [this.topic], from: { kind: 'earliest' } }, (r) => Promise.resolve(this.#apply(r)));
      this.#watch(this.#read);
    }
    await Promise.all(ends.map((e) => this.until(e.partition, e.offset, timeoutMs)));
  }

  /**
   * Whether the topic is being read now: false before {@link start}, after {@link stop}, and while
   * a read that ended with an error is being started again (records written meanwhile are not
   * applied yet, so this instance's view may be behind the others'). Readiness uses it.
   */
  get following(): boolean {
    return this.#following && !this.#stopped;
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
    this.#stopping.abort(new GatewayError('CEG_CLOSED', `${this.#o.label}: reading stopped`, { retriable: true }));
    await this.#read?.stop();
    for (const w of [...this.#waiters]) w();
  }

  /**
   * Follows `read` to its end. A read that ends with an error (the client gave up on a broker down
   * for longer than its retries) is started again at the next offset of every partition, for as
   * long as it takes: a follower that stopped for good would keep this instance on a stale set of
   * subscriptions (a pause or a delete written by another instance never applied here) while it
   * still answered ready.
   */
  #watch(read: Read): void {
    this.#following = true;
    read.done.then(
      () => {
        // A follow never ends by itself; it ends at stop().
        if (!this.#stopped) this.#resume(new GatewayError('CEG_BROKER_UNAVAILABLE', 'the read ended', { retriable: true }));
      },
      (err: unknown) => {
        if (!this.#stopped) this.#resume(err);
      },
    );
  }

  #resume(cause: unknown): void {
    this.#following = false;
    this.#o.log.error({ topic: this.topic, err: errorMessage(cause) }, `reading ${this.#o.label} stopped; reading it again from where it was`);
    retrying(
      async () => {
        const partitions = await this.#o.transport.partitionCount(this.topic);
        const positions = Array.from({ length: partitions }, (_, partition) => ({ topic: this.topic, partition, offset: this.#applied.get(partition) ?? 0n }));
        return this.#o.transport.read({ topics: [this.topic], from: { kind: 'positions', positions } }, (r) => Promise.resolve(this.#apply(r)));
      },
      {
        policy: RESUME_RETRY,
        maxAttempts: Infinity,
        signal: this.#stopping.signal,
        // Whatever failed, trying again is the only way back to a current view.
        classify: () => true,
        onRetry: ({ attempt, error }) => this.#o.log.warn({ topic: this.topic, attempt, err: errorMessage(error) }, `reading ${this.#o.label} again failed, retrying`),
      },
    ).then(
      (read) => {
        if (this.#stopped) {
          read.stop().catch((err: unknown) => this.#o.log.warn({ topic: this.topic, err: errorMessage(err) }, `stopping a read of ${this.#o.label} failed`));
          return;
        }
        this.#read = read;
        this.#watch(read);
        this.#o.log.info({ topic: this.topic }, `reading ${this.#o.label} again`);
      },
      (err: unknown) => {
        if (!this.#stopped) this.#o.log.error({ topic: this.topic, err: errorMessage(err) }, `reading ${this.#o.label} again failed for good`);
      },
    );
  }

  #apply(r: TransportRecord): void {
    // Applied already (a client that hands a record on again after a reconnect): applying it again
    // would set this instance's view back to an older state until the read caught up again.
    if (r.offset < (this.#applied.get(r.partition) ?? 0n)) return;
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
