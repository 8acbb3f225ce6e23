import type { RecordHandler } from '../port.js';
import type { PartitionLog } from './log.js';

/**
 * Delivers one partition to one group member: records in offset order, one at a time; after the
 * handler resolves, reports the next offset to commit. Stops after the record in flight.
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

  constructor(
    topic: string,
    partition: number,
    log: PartitionLog,
    from: bigint,
    handler: RecordHandler,
    onHandled: (nextOffset: bigint) => void,
    onFailed: (err: unknown) => void,
  ) {
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
    this.#stopped = true;
    this.#wake?.();
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
      try {
        await this.#handler(record);
      } catch (err) {
        this.#onFailed(err);
        return;
      }
      position = record.offset + 1n;
      this.#onHandled(position);
    }
  }
}
