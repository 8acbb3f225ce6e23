/**
 * What both Kafka adapters (kafkajs, @platformatic/kafka) do around one handler call: the abort
 * signal a stopping member raises, the stop deadline after which a record in hand is abandoned
 * (left uncommitted, it comes again), and the timers that resume a partition paused for a
 * `redeliver` decision. Adapter-neutral: it sees records and decisions, never a client.
 * Spec: issue 7 ("unsubscribe and SIGTERM finish within a deadline whatever record is in hand";
 * "a record waiting for its next attempt never holds up a fetch or another partition").
 */
import { setMaxListeners } from 'node:events';
import { GatewayError, errorMessage } from '../core/errors.js';
import type { RecordContext, RecordDecision, RecordHandler, TransportRecord } from './port.js';
import { MAX_REDELIVER_MS, RECORD_DONE } from './port.js';
import type { TransportLogger } from './kafka/logging.js';

/** What running one record came to: the handler's decision, 'failed' (it rejected: the consumption stops) or 'abandoned' (the member stops without it). */
export type RunOutcome = RecordDecision | 'failed' | 'abandoned';

const DEADLINE = Symbol('stop deadline');
/** Settles one record in hand: with its outcome, or {@link DEADLINE}. */
type InHand = (d: RunOutcome | typeof DEADLINE) => void;

export class RecordRunner {
  readonly #handler: RecordHandler;
  readonly #stopTimeoutMs: number;
  readonly #log: TransportLogger;
  readonly #group: string;
  readonly #onFailure: (err: unknown) => void;
  readonly #abort = new AbortController();
  readonly #resumeTimers = new Set<NodeJS.Timeout>();
  /** The records in hand: the stop deadline settles them as abandoned. */
  readonly #inHand = new Set<InHand>();
  #deadlinePassed = false;
  #stopping = false;

  /**
   * @param stopTimeoutMs how long stop waits for records in hand, ms.
   * @param onFailure called when a handler rejects while the member is not stopping (the adapter stops the consumption).
   */
  constructor(o: { handler: RecordHandler; stopTimeoutMs: number; log: TransportLogger; group: string; onFailure: (err: unknown) => void }) {
    this.#handler = o.handler;
    this.#stopTimeoutMs = o.stopTimeoutMs;
    this.#log = o.log;
    this.#group = o.group;
    this.#onFailure = o.onFailure;
    // Every record in hand may listen to this signal (a window of 64 deliveries is normal): no leak warning.
    setMaxListeners(0, this.#abort.signal);
  }

  /** Aborted once the member begins to stop. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  /**
   * Runs the handler; gives up on it at the stop deadline. Never rejects.
   * For a caller that awaits one record at a time; {@link runThen} is the same without a promise.
   */
  run(record: TransportRecord, ctx: RecordContext): Promise<RunOutcome> {
    return new Promise((resolve) => this.runThen(record, ctx, resolve, undefined));
  }

  /**
   * Runs the handler and calls `then(outcome, record, tag)` once, on a later turn (never within
   * this call): with the handler's decision, 'failed' (it rejected or threw while the member was not
   * stopping) or 'abandoned' (the stop deadline passed first, or it failed while stopping).
   * `tag` is handed back as it is, so a caller with several records in hand needs no closure per record.
   * Runs once per record on a laned consumer: one promise (the handler's `then`) and one entry in
   * the set the stop deadline settles, nothing else per record.
   */
  runThen<T>(record: TransportRecord, ctx: RecordContext, then: (outcome: RunOutcome, record: TransportRecord, tag: T) => void, tag: T): void {
    let handled: Promise<RecordDecision | void>;
    try {
      handled = this.#handler(record, ctx);
    } catch (err) {
      const outcome = this.#rejected(record, err);
      queueMicrotask(() => then(outcome, record, tag));
      return;
    }
    // Only the first settling counts: the one that takes it out of the set.
    const settle: InHand = (d) => {
      if (this.#inHand.delete(settle)) then(d === DEADLINE ? this.#decided(record) : d, record, tag);
    };
    this.#inHand.add(settle);
    handled.then(
      (d) => settle(d ?? RECORD_DONE),
      (err: unknown) => settle(this.#rejected(record, err)),
    );
    // Started after the deadline (a member stopping): nothing waits for it any more.
    if (this.#deadlinePassed) queueMicrotask(() => settle(DEADLINE));
  }

  /** A record still in hand at the stop deadline. */
  #decided(record: TransportRecord): 'abandoned' {
    this.#log.warn({ group: this.#group, topic: record.topic, partition: record.partition, offset: record.offset.toString(), stopTimeoutMs: this.#stopTimeoutMs }, 'record still in hand at the stop deadline; leaving it uncommitted');
    return 'abandoned';
  }

  /** The handler rejected (or threw): a stopping member abandons the record, else the consumption stops. */
  #rejected(record: TransportRecord, err: unknown): 'failed' | 'abandoned' {
    if (this.#stopping) return 'abandoned';
    this.#log.warn({ group: this.#group, topic: record.topic, partition: record.partition, offset: record.offset.toString(), err: errorMessage(err) }, 'handler rejected; stopping the consumption');
    this.#onFailure(err instanceof Error ? err : new Error(errorMessage(err)));
    return 'failed';
  }

  /** Calls `resume` after `afterMs` (cut to a timer's range), unless the member stops first. */
  resumeLater(afterMs: number, resume: () => void, where: { readonly topic: string; readonly partition: number }): void {
    const timer = setTimeout(() => {
      this.#resumeTimers.delete(timer);
      if (!this.#stopping) resume();
    }, Math.min(MAX_REDELIVER_MS, afterMs));
    this.#resumeTimers.add(timer);
    this.#log.debug({ group: this.#group, ...where, afterMs }, 'partition paused until its record is due again');
  }

  /**
   * Begins stopping: aborts the signal, drops pending resumes and starts the stop deadline.
   * Returns a function that cancels the deadline timer (call it once the records in hand are done).
   */
  beginStop(): () => void {
    this.#stopping = true;
    this.#abort.abort(new GatewayError('CEG_CLOSED', 'consumer stopping', { retriable: true }));
    for (const t of this.#resumeTimers) clearTimeout(t);
    this.#resumeTimers.clear();
    const deadline = setTimeout(() => {
      this.#deadlinePassed = true;
      for (const settle of [...this.#inHand]) settle(DEADLINE);
    }, this.#stopTimeoutMs);
    return () => clearTimeout(deadline);
  }
}
