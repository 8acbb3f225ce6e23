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
import { publisherChannel } from '../../core/stage-channels.js';
import type { PublisherStages } from '../../core/stage-channels.js';
import type { Logger } from '../../observability/index.js';
import { LogThrottle } from '../../observability/index.js';
import type { GatewayMetrics } from '../../observability/metrics.js';
import type { OutboundRecord, Position, Transport } from '../../transport/port.js';
import { OutboundQueue } from './outbound-queue.js';
import { BATCH_HEADER_BYTES, recordBatchBytes } from './record-size.js';

export interface RecordPublisherOptions {
  /** Records the queue holds at most; more are refused with CEG_QUEUE_FULL. */
  readonly queueCapacity: number;
  /** Records per produce call at most. */
  readonly maxBatch: number;
  readonly retry: RetryPolicy;
  /**
   * The largest record batch a topic takes, bytes (Kafka `max.message.bytes`, read at start-up);
   * produce calls are cut so that none exceeds it. undefined = not known (no cut by bytes).
   */
  readonly maxMessageBytes?: (topic: string) => number | undefined;
  /** Where each produce request's duration and error code are recorded (issue 15); none = not recorded. */
  readonly instruments?: Pick<GatewayMetrics, 'produce'>;
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

/**
 * What is known of a record that was not confirmed: `notStored` — provably not written (never
 * handed to the broker, withdrawn from the queue, or refused by the broker in a way that appends
 * nothing); `unconfirmed` — it may be on the topic (an attempt timed out or failed mid-flight:
 * DESIGN "Known traps"); retry it with the same id, consumers drop duplicates by source+id.
 */
export type DeliveryFate = 'notStored' | 'unconfirmed';

/** The fate a rejection of {@link RecordPublisher.send} carries (`details.fate`); unknown = unconfirmed. */
export function deliveryFate(err: unknown): DeliveryFate {
  return err instanceof GatewayError && err.details.fate === 'notStored' ? 'notStored' : 'unconfirmed';
}

/** A record's outcome: its position, or the error it failed with (`details.fate`: {@link deliveryFate}). */
export type Settled = { readonly ok: true; readonly position: Position } | { readonly ok: false; readonly error: GatewayError };

/**
 * What {@link RecordPublisher.sendAll} returns: `results[i]` is filled in when record i settles
 * (undefined until then), and `done` resolves once every record has settled, with that same array.
 */
export interface SentBatch {
  readonly results: readonly (Settled | undefined)[];
  readonly done: Promise<readonly Settled[]>;
  /**
   * The caller's deadline passed: withdraws this call's records still queued or waiting between
   * attempts, as an aborted `signal` of {@link RecordPublisher.send} does (synchronously; a
   * produce in flight is not interrupted). Idempotent. A method, not a signal: an AbortController
   * and its listener per request cost more than the rest of the bookkeeping (issue 14).
   */
  readonly withdraw: (reason: unknown) => void;
}

/** The records of one send()/sendAll() call: one callback when the last of them settles (issue 14: one promise per request, not per record). */
interface Request {
  readonly results: (Settled | undefined)[];
  left: number;
  readonly finish: (results: readonly Settled[]) => void;
}

interface Pending {
  readonly topic: string;
  readonly record: OutboundRecord;
  readonly bytes: number;
  readonly request: Request;
  /** Its place in `request.results`. */
  readonly index: number;
  /** An attempt that included it ended without a definite answer: it may be stored. */
  maybeWritten: boolean;
  /** Settled, or withdrawn by its caller (still in the queue, skipped when taken). */
  done: boolean;
  /** Part of a produce call now: cannot be withdrawn. */
  inFlight: boolean;
  /** performance.now() when queued, only while a stage probe listens (src/core/stage-channels.ts); else 0. */
  readonly queuedAt: number;
}

function settlePromise(s: Settled, resolve: (p: Position) => void, reject: (e: GatewayError) => void): void {
  if (s.ok) resolve(s.position);
  else reject(s.error);
}

/** Settles one record of its request (at most once). */
function settle(p: Pending, outcome: Settled): void {
  p.done = true;
  const r = p.request;
  r.results[p.index] = outcome;
  if (--r.left === 0) r.finish(r.results as Settled[]);
}

/** Broker answers after which nothing of the request was appended (the topic is unknown, the batch too large). */
function appendedNothing(err: GatewayError): boolean {
  return err.code === 'CEG_PAYLOAD_TOO_LARGE' || err.code === 'CEG_INVALID_NAME' || err.details.indeterminate === false;
}

/** Publishes one produce attempt's stages when the bench's stage probe listens (issue 14). */
function probeStages(group: readonly Pending[], calledAt: number, ok: boolean): void {
  if (!publisherChannel.hasSubscribers) return;
  let oldest = calledAt;
  for (const p of group) if (p.queuedAt > 0 && p.queuedAt < oldest) oldest = p.queuedAt;
  publisherChannel.publish({ records: group.length, oldestQueuedAt: oldest, calledAt, answeredAt: performance.now(), ok } satisfies PublisherStages);
}

function withFate(err: GatewayError, fate: DeliveryFate): GatewayError {
  return new GatewayError(err.code, err.message, { retriable: err.retriable, cause: err, details: { ...err.details, fate } });
}

export class RecordPublisher {
  readonly #transport: Transport;
  readonly #opts: RecordPublisherOptions;
  readonly #log: Logger;
  readonly #queue: OutboundQueue<Pending>;
  readonly #closing = new AbortController();
  #drain: Promise<void> | undefined;
  #accepting = true;
  /** Failures come in bursts while the broker is away: one line per 30 s (the metrics count each). */
  readonly #failureLines = new LogThrottle(30_000);
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
   * `signal`: the caller's deadline. Once aborted, records still queued or waiting between
   *   attempts are withdrawn and rejected with `details.fate` `notStored` (or `unconfirmed` when
   *   an earlier attempt may have written them); a produce in flight is not interrupted.
   * Errors: thrown synchronously — CEG_QUEUE_FULL (retriable: true) when the queue lacks room for
   *   all of them, CEG_CLOSED after close(). Per record: the transport's GatewayError with
   *   `details.fate` ({@link deliveryFate}).
   */
  send(items: readonly { topic: string; record: OutboundRecord }[], signal?: AbortSignal): Promise<Position>[] {
    this.#admit(items.length);
    const promises: Promise<Position>[] = [];
    const pendings = items.map(({ topic, record }) => {
      let request!: Request;
      promises.push(new Promise<Position>((resolve, reject) => (request = { results: [undefined], left: 1, finish: (rs) => settlePromise(rs[0]!, resolve, reject) })));
      return this.#pending(topic, record, request, 0);
    });
    const withdraw = this.#enqueue(pendings);
    if (signal !== undefined) {
      if (signal.aborted) withdraw(signal.reason);
      else signal.addEventListener('abort', () => withdraw(signal.reason), { once: true });
    }
    this.#kick();
    return promises;
  }

  /**
   * As {@link send}, with ONE promise for all the records (issue 14: a batch of 100 used to cost
   * 200+ promises): `done` resolves — never rejects — when every record has settled, each with its
   * position or its error. `bytes`: the record's `recordBatchBytes` when the caller has it already.
   * The caller's deadline is {@link SentBatch.withdraw}.
   * Errors: thrown synchronously as by {@link send}.
   */
  sendAll(items: readonly { topic: string; record: OutboundRecord; bytes?: number }[]): SentBatch {
    this.#admit(items.length);
    const results = new Array<Settled | undefined>(items.length).fill(undefined);
    let request!: Request;
    const done = new Promise<readonly Settled[]>((resolve) => (request = { results, left: items.length, finish: resolve }));
    if (items.length === 0) request.finish([]);
    const pendings = items.map(({ topic, record, bytes }, i) => this.#pending(topic, record, request, i, bytes));
    const withdraw = this.#enqueue(pendings);
    this.#kick();
    return { results, done, withdraw };
  }

  /** Errors: CEG_CLOSED after close(); CEG_QUEUE_FULL when `n` records do not fit. */
  #admit(n: number): void {
    if (!this.#accepting) throw new GatewayError('CEG_CLOSED', 'publisher is closed', { retriable: false });
    if (!this.#queue.hasRoomFor(n)) {
      this.#stats.rejected += n;
      throw new GatewayError('CEG_QUEUE_FULL', `outbound queue full (${this.#queue.capacity} records)`, { retriable: true, details: { capacity: this.#queue.capacity, fate: 'notStored' } });
    }
  }

  #pending(topic: string, record: OutboundRecord, request: Request, index: number, bytes = recordBatchBytes(record)): Pending {
    return { topic, record, bytes, request, index, maybeWritten: false, done: false, inFlight: false, queuedAt: publisherChannel.hasSubscribers ? performance.now() : 0 };
  }

  /**
   * Queues `pendings` and returns their withdrawal (the caller's deadline, for both send paths).
   * Does not start the drain loop: the caller kicks it once a deadline already passed has withdrawn them.
   */
  #enqueue(pendings: readonly Pending[]): (reason: unknown) => void {
    for (const p of pendings) this.#queue.offer(p);
    this.#stats.enqueued += pendings.length;
    return (reason) => {
      for (const p of pendings) this.#withdraw(p, reason);
    };
  }

  /** Withdraws a record not in flight: rejected now, skipped when the drain loop reaches it. */
  #withdraw(p: Pending, reason: unknown): void {
    if (p.done || p.inFlight === true) return;
    this.#stats.failed++;
    const fate: DeliveryFate = p.maybeWritten ? 'unconfirmed' : 'notStored';
    settle(p, { ok: false, error: new GatewayError('CEG_DELIVERY_TIMEOUT', `not sent: the caller's deadline passed while the record waited${p.maybeWritten ? ' (an earlier attempt may have written it)' : ''}`, { retriable: true, cause: reason, details: { topic: p.topic, fate } }) });
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
      const batch = this.#queue.takeUpTo(this.#opts.maxBatch).filter((p) => !p.done);
      const byTopic = new Map<string, Pending[]>();
      for (const p of batch) {
        const list = byTopic.get(p.topic);
        if (list) list.push(p);
        else byTopic.set(p.topic, [p]);
      }
      await Promise.all([...byTopic].map(([topic, group]) => this.#produceTopic(topic, group)));
    }
  }

  /** One topic's records in produce calls cut by bytes (each within the topic's max.message.bytes), in order. */
  async #produceTopic(topic: string, group: readonly Pending[]): Promise<void> {
    const max = this.#opts.maxMessageBytes?.(topic);
    if (max === undefined) return this.#produceWithRetry(topic, group);
    let chunk: Pending[] = [];
    let bytes = BATCH_HEADER_BYTES;
    for (const p of group) {
      if (chunk.length > 0 && bytes + p.bytes > max) {
        await this.#produceWithRetry(topic, chunk);
        chunk = [];
        bytes = BATCH_HEADER_BYTES;
      }
      chunk.push(p);
      bytes += p.bytes;
    }
    if (chunk.length > 0) await this.#produceWithRetry(topic, chunk);
  }

  async #produceWithRetry(topic: string, records: readonly Pending[]): Promise<void> {
    let group = records;
    let lastError: GatewayError | undefined;
    let positions: readonly Position[];
    try {
      positions = await retrying(
        async () => {
          // Records their callers withdrew while this group waited between attempts are left out.
          group = group.filter((p) => !p.done);
          if (group.length === 0) return [];
          for (const p of group) p.inFlight = true;
          const t0 = performance.now();
          try {
            const positions = await this.#transport.produce(topic, group.map((p) => p.record));
            this.#opts.instruments?.produce((performance.now() - t0) / 1000);
            probeStages(group, t0, true);
            return positions;
          } catch (err) {
            const ge = asGatewayError(err, topic);
            this.#opts.instruments?.produce((performance.now() - t0) / 1000, ge.code);
            probeStages(group, t0, false);
            if (!appendedNothing(ge)) for (const p of group) p.maybeWritten = true;
            for (const p of group) p.inFlight = false;
            throw ge;
          }
        },
        {
          policy: this.#opts.retry,
          signal: this.#closing.signal,
          onRetry: ({ attempt, error }) => {
            lastError = error as GatewayError;
            this.#stats.retried += group.length;
            // debug: the transport logs a broker outage once; every retry is counted (ce_gateway_publish_retried_total).
            this.#log.debug({ topic, records: group.length, attempt, code: lastError.code, err: lastError.message }, 'publish failed, retrying');
          },
        },
      );
    } catch (err) {
      // Closing cut a backoff short (the records fail with the broker error that put them there)
      // or came before the first attempt (as for records still queued at close).
      const ge = err !== this.#closing.signal.reason ? asGatewayError(err, topic) : (lastError ?? new GatewayError('CEG_CLOSED', 'publisher closed before the record was sent', { retriable: true }));
      group = group.filter((p) => !p.done);
      if (!ge.retriable && group.length > 1) {
        // The broker refused the request for good: one record may be the cause (too large, say).
        // Halve it and send each half in order: a bad record costs log2(n) extra requests, not
        // one request per record, so the other partners' records queued behind wait little.
        this.#log.warn({ topic, records: group.length, code: ge.code, err: ge.message }, 'batch refused; sending it in halves to isolate the refused records');
        const half = Math.ceil(group.length / 2);
        await this.#produceWithRetry(topic, group.slice(0, half));
        await this.#produceWithRetry(topic, group.slice(half));
        return;
      }
      this.#failureLines.run((repeated) => this.#log.warn({ topic, records: group.length, code: ge.code, err: ge.message, repeated }, 'publish failed (later failures within 30 s are counted in `repeated` of the next line)'));
      this.#stats.failed += group.length;
      const named = this.#namedLimit(ge, topic, group);
      for (const p of group) settle(p, { ok: false, error: withFate(named, p.maybeWritten ? 'unconfirmed' : 'notStored') });
      return;
    }
    group.forEach((p, i) => settle(p, { ok: true, position: positions[i]! }));
    this.#stats.published += group.length;
  }

  /** A broker's "too large" names the topic's limit when it is known (issue 12: every refusal names its cause). */
  #namedLimit(ge: GatewayError, topic: string, group: readonly Pending[]): GatewayError {
    const max = this.#opts.maxMessageBytes?.(topic);
    if (ge.code !== 'CEG_PAYLOAD_TOO_LARGE' || max === undefined) return ge;
    const bytes = BATCH_HEADER_BYTES + group.reduce((n, p) => n + p.bytes, 0);
    return new GatewayError('CEG_PAYLOAD_TOO_LARGE', `the broker refused the record as too large: about ${bytes} bytes; topic ${topic} takes at most ${max} (max.message.bytes)`, {
      retriable: false,
      cause: ge,
      details: { ...ge.details, topic, maxMessageBytes: max, bytes },
    });
  }

  /**
   * Stops taking records (send() throws CEG_CLOSED), sends what is queued for up to `drainMs`
   * (default 0: only the record batch in flight finishes), then fails what is still queued
   * (CEG_CLOSED, with its fate). Issue 15: a draining shutdown lets queued produces finish.
   */
  async close(drainMs = 0): Promise<void> {
    this.#accepting = false;
    const until = performance.now() + drainMs;
    while ((this.#queue.size > 0 || this.#drain !== undefined) && performance.now() < until) {
      const left = until - performance.now();
      let t: NodeJS.Timeout | undefined;
      await Promise.race([...(this.#drain === undefined ? [] : [this.#drain]), new Promise<void>((r) => (t = setTimeout(r, Math.max(1, Math.min(left, 50)))))]);
      clearTimeout(t);
    }
    this.#closing.abort(new GatewayError('CEG_CLOSED', 'publisher closed', { retriable: false }));
    await this.#drain;
    const left = this.#queue.takeUpTo(this.#queue.size).filter((p) => !p.done);
    for (const p of left) settle(p, { ok: false, error: new GatewayError('CEG_CLOSED', 'publisher closed before the record was sent', { retriable: true, details: { fate: p.maybeWritten ? 'unconfirmed' : 'notStored' } }) });
    this.#stats.failed += left.length;
  }
}

function asGatewayError(err: unknown, topic: string): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('CEG_BROKER_UNAVAILABLE', errorMessage(err), { retriable: true, cause: err, details: { topic } });
}
