/**
 * Publishes encoded records through a bounded outbound queue: callers never block and never lose
 * a failure silently (bus spec P2, defect 2). A single drain loop sends what is queued in
 * batches, one produce per topic at a time, so records keep their queue order per partition
 * (events of one key keep their order, DESIGN "Kafka mapping"). Retriable broker failures are
 * retried with the central backoff policy; every outcome is counted.
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { RetryPolicy } from '../../core/retry.js';
import { retrying } from '../../core/retrying.js';
import type { Logger } from '../../observability/index.js';
import type { OutboundRecord, Position, Transport } from '../../transport/port.js';
import { OutboundQueue } from './outbound-queue.js';

export interface RecordPublisherOptions {
  /** Records the queue holds at most; more are refused with CEG_QUEUE_FULL. */
  readonly queueCapacity: number;
  /** Records per produce call at most. */
  readonly maxBatch: number;
  readonly retry: RetryPolicy;
}

/** Counters of every outcome; exposed as metrics. */
export interface PublisherStats {
  readonly enqueued: number;
  readonly published: number;
  readonly failed: number;
  readonly rejected: number;
  readonly retried: number;
  readonly queued: number;
}

interface Pending {
  readonly topic: string;
  readonly record: OutboundRecord;
  readonly resolve: (p: Position) => void;
  readonly reject: (e: GatewayError) => void;
}

export class RecordPublisher {
  readonly #transport: Transport;
  readonly #opts: RecordPublisherOptions;
  readonly #log: Logger;
  readonly #queue: OutboundQueue<Pending>;
  readonly #closing = new AbortController();
  #drain: Promise<void> | undefined;
  #stats = { enqueued: 0, published: 0, failed: 0, rejected: 0, retried: 0 };

  /** Errors: CEG_INVALID_OPTIONS (retriable: false) when queueCapacity or maxBatch is not an integer ≥ 1. */
  constructor(transport: Transport, opts: RecordPublisherOptions, log: Logger) {
    const problems = [
      !(Number.isInteger(opts.queueCapacity) && opts.queueCapacity >= 1) && 'queueCapacity: integer ≥ 1',
      // maxBatch 0 would make the drain loop spin forever on an empty batch.
      !(Number.isInteger(opts.maxBatch) && opts.maxBatch >= 1) && 'maxBatch: integer ≥ 1',
    ].filter((p): p is string => typeof p === 'string');
    if (problems.length > 0) throw new GatewayError('CEG_INVALID_OPTIONS', problems.join('; '), { retriable: false });
    this.#transport = transport;
    this.#opts = opts;
    this.#log = log;
    this.#queue = new OutboundQueue(opts.queueCapacity);
  }

  stats(): PublisherStats {
    return { ...this.#stats, queued: this.#queue.size };
  }

  /**
   * Queues records (all or none) and returns one promise per record, settled when the broker
   * acknowledged it (acks=all) or when the retry budget ran out.
   * Errors: thrown synchronously — CEG_QUEUE_FULL (retriable: true) when the queue lacks room for
   *   all of them, CEG_CLOSED after close(). Per record: the transport's GatewayError.
   */
  send(items: readonly { topic: string; record: OutboundRecord }[]): Promise<Position>[] {
    if (this.#closing.signal.aborted) throw new GatewayError('CEG_CLOSED', 'publisher is closed', { retriable: false });
    if (!this.#queue.hasRoomFor(items.length)) {
      this.#stats.rejected += items.length;
      throw new GatewayError('CEG_QUEUE_FULL', `outbound queue full (${this.#queue.capacity} records)`, { retriable: true, details: { capacity: this.#queue.capacity } });
    }
    const promises = items.map(
      ({ topic, record }) =>
        new Promise<Position>((resolve, reject) => {
          this.#queue.offer({ topic, record, resolve, reject });
        }),
    );
    this.#stats.enqueued += items.length;
    this.#kick();
    return promises;
  }

  #kick(): void {
    if (this.#drain !== undefined) return;
    this.#drain = this.#drainLoop()
      .catch((err: unknown) => this.#log.error({ err }, 'publisher drain loop failed'))
      .finally(() => {
        this.#drain = undefined;
        if (this.#queue.size > 0 && !this.#closing.signal.aborted) this.#kick();
      });
  }

  async #drainLoop(): Promise<void> {
    // After close() only the batch already taken finishes; close() fails what is still queued.
    while (this.#queue.size > 0 && !this.#closing.signal.aborted) {
      const batch = this.#queue.takeUpTo(this.#opts.maxBatch);
      const byTopic = new Map<string, Pending[]>();
      for (const p of batch) {
        const list = byTopic.get(p.topic);
        if (list) list.push(p);
        else byTopic.set(p.topic, [p]);
      }
      await Promise.all([...byTopic].map(([topic, group]) => this.#produceWithRetry(topic, group)));
    }
  }

  async #produceWithRetry(topic: string, group: readonly Pending[]): Promise<void> {
    let positions: readonly Position[];
    let lastError: GatewayError | undefined;
    try {
      positions = await retrying(
        async () => {
          try {
            return await this.#transport.produce(topic, group.map((p) => p.record));
          } catch (err) {
            throw asGatewayError(err, topic);
          }
        },
        {
          policy: this.#opts.retry,
          signal: this.#closing.signal,
          onRetry: ({ attempt, error }) => {
            lastError = error as GatewayError;
            this.#stats.retried += group.length;
            this.#log.warn({ topic, records: group.length, attempt, code: lastError.code, err: lastError.message }, 'publish failed, retrying');
          },
        },
      );
    } catch (err) {
      // Closing cut a backoff short (the records fail with the broker error that put them there)
      // or came before the first attempt (as for records still queued at close).
      const ge = err !== this.#closing.signal.reason ? asGatewayError(err, topic) : (lastError ?? notSent());
      if (!ge.retriable && group.length > 1) {
        // The broker refused the batch for good: one record may be the cause (too large, say).
        // Send them one by one, in order, so only the records the broker refuses fail and
        // other partners' events in the same batch are not refused with them.
        this.#log.warn({ topic, records: group.length, code: ge.code, err: ge.message }, 'batch refused; sending its records one by one');
        for (const p of group) await this.#produceWithRetry(topic, [p]);
        return;
      }
      this.#log.warn({ topic, records: group.length, code: ge.code, err: ge.message }, 'publish failed');
      this.#stats.failed += group.length;
      for (const p of group) p.reject(ge);
      return;
    }
    group.forEach((p, i) => p.resolve(positions[i]!));
    this.#stats.published += group.length;
  }

  /** Stops taking records, lets the record batch in flight finish, fails what is still queued (CEG_CLOSED). */
  async close(): Promise<void> {
    this.#closing.abort(new GatewayError('CEG_CLOSED', 'publisher closed', { retriable: false }));
    await this.#drain;
    const left = this.#queue.takeUpTo(this.#queue.size);
    for (const p of left) p.reject(notSent());
    this.#stats.failed += left.length;
  }
}

function notSent(): GatewayError {
  return new GatewayError('CEG_CLOSED', 'publisher closed before the record was sent', { retriable: true });
}

function asGatewayError(err: unknown, topic: string): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('CEG_BROKER_UNAVAILABLE', errorMessage(err), { retriable: true, cause: err, details: { topic } });
}
