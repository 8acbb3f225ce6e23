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

export class RecordRunner {
  readonly #handler: RecordHandler;
  readonly #stopTimeoutMs: number;
  readonly #log: TransportLogger;
  readonly #group: string;
  readonly #onFailure: (err: unknown) => void;
  readonly #abort = new AbortController();
  readonly #resumeTimers = new Set<NodeJS.Timeout>();
  /** Resolvers of the records in hand: the stop deadline settles them with 'deadline'. */
  readonly #inHand = new Set<(v: 'deadline') => void>();
  #deadlineReached: (() => void) | undefined;
  readonly #deadline = new Promise<'deadline'>((resolve) => (this.#deadlineReached = () => resolve('deadline')));
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
   * Runs once per record, so it is written with one promise per call (no async function, no second
   * promise to watch the first): the record's resolver is in #inHand while it runs, for the stop deadline.
   */
  run(record: TransportRecord, ctx: RecordContext): Promise<RecordDecision | 'failed' | 'abandoned'> {
    let handled: Promise<RecordDecision | void>;
    try {
      handled = this.#handler(record, ctx);
    } catch (err) {
      return Promise.resolve(this.#rejected(record, err));
    }
    // The race with the stop deadline costs allocations per record; only a stopping member needs
    // it, so a record in hand when stop() begins is raced from then on (#inHand).
    if (this.#stopping) {
      return Promise.race([handled, this.#deadline]).then(
        (d) => this.#decided(record, d),
        (err: unknown) => this.#rejected(record, err),
      );
    }
    return new Promise((resolve) => {
      const give = (d: 'deadline'): void => resolve(this.#decided(record, d));
      this.#inHand.add(give);
      handled.then(
        (d) => {
          this.#inHand.delete(give);
          resolve(d ?? RECORD_DONE);
        },
        (err: unknown) => {
          this.#inHand.delete(give);
          resolve(this.#rejected(record, err));
        },
      );
    });
  }

  #decided(record: TransportRecord, d: RecordDecision | void | 'deadline'): RecordDecision | 'abandoned' {
    if (d !== 'deadline') return d ?? RECORD_DONE;
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
      this.#deadlineReached?.();
      for (const give of this.#inHand) give('deadline');
    }, this.#stopTimeoutMs);
    return () => clearTimeout(deadline);
  }
}
