import { GatewayError } from '../../core/errors.js';
import type { RecordContext, RecordHandler } from '../port.js';
import { MAX_REDELIVER_MS } from '../port.js';
import type { PartitionLog } from './log.js';
import { neverRejects } from '../../core/never-rejects.js';

/**
 * Delivers one partition to one group member: records in offset order, one at a time; after the
 * handler resolves `done`, reports the next offset to commit (the memory transport commits at
 * once: nothing is lost between handling and committing in one process). A `redeliver` decision
 * waits on this partition only, then hands the same record again. stop() aborts the record in
 * hand and gives up waiting for it after `stopTimeoutMs` (the record stays uncommitted).
 */
export class PartitionWorker {
  readonly topic: string;
  readonly partition: number;
  /** Settles when the loop has ended (after the record in flight, if any). Never rejects. */
  readonly finished: Promise<void>;
  readonly #log: PartitionLog;
  readonly #handler: RecordHandler;
  readonly #onHandled: (nextOffset: bigint) => void;
  readonly #onFailed: (err: unknown) => void;
  #stopped = false;
  #wake: (() => void) | undefined;
  readonly #abort = new AbortController();
  readonly #stopTimeoutMs: number;
  #deadlineReached: (() => void) | undefined;
  readonly #deadline = new Promise<'deadline'>((resolve) => (this.#deadlineReached = () => resolve('deadline')));

  constructor(
    topic: string,
    partition: number,
    log: PartitionLog,
    from: bigint,
    handler: RecordHandler,
    onHandled: (nextOffset: bigint) => void,
    onFailed: (err: unknown) => void,
    stopTimeoutMs = 5000,
  ) {
    this.#stopTimeoutMs = stopTimeoutMs;
    this.topic = topic;
    this.partition = partition;
    this.#log = log;
    this.#handler = handler;
    this.#onHandled = onHandled;
    this.#onFailed = onFailed;
    this.finished = this.#run(from);
  }

  /** Ends the loop after the record in flight; resolves when it has ended. Idempotent. */
  stop(): Promise<void> {
    if (!this.#stopped) {
      this.#stopped = true;
      this.#abort.abort(new GatewayError('CEG_CLOSED', 'consumer stopping', { retriable: true }));
      this.#wake?.();
      const timer = setTimeout(() => this.#deadlineReached?.(), this.#stopTimeoutMs);
      // The loop catches its handler (a failure goes to onFailed): `finished` never rejects.
      neverRejects(this.finished.then(() => clearTimeout(timer)));
    }
    return this.finished;
  }

  async #run(from: bigint): Promise<void> {
    let position = from;
    // Never run the handler in the caller's stack (consume, produce or a rebalance).
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (!this.#stopped) {
      const record = this.#log.at(position);
      if (record === undefined) {
        await new Promise<void>((resolve) => {
          const cancel = this.#log.onAppend(resolve);
          this.#wake = () => {
            cancel();
            resolve();
          };
        });
        this.#wake = undefined;
        continue;
      }
      const ctx: RecordContext = { signal: this.#abort.signal, heartbeat: () => Promise.resolve() };
      const handled = this.#handler(record, ctx).then(
        (d) => d ?? { kind: 'done' as const },
        (err: unknown) => ({ kind: 'failed' as const, err }),
      );
      const result = await Promise.race([handled, this.#deadline]);
      if (result === 'deadline') return; // abandoned at the stop deadline: uncommitted, it comes again
      if (result.kind === 'failed') {
        if (!this.#stopped) this.#onFailed(result.err);
        return;
      }
      if (result.kind === 'redeliver') {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(MAX_REDELIVER_MS, result.afterMs));
          this.#wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.#wake = undefined;
        continue; // same position: the record comes again (or the loop ends when stopped)
      }
      position = record.offset + 1n;
      this.#onHandled(position);
    }
  }
}
