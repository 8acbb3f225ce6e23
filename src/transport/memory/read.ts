import type { Read, ReadSpec, TransportRecord } from '../port.js';
import type { PartitionLog } from './log.js';
import { PartitionWorker } from './worker.js';
import { neverRejects } from '../../core/never-rejects.js';

/**
 * A group-less read of the memory transport: one worker per partition from the start position,
 * nothing committed. A bounded read (`untilEnd`) ends each partition at its end offset as of now.
 */
export function startMemoryRead(topics: readonly { readonly topic: string; readonly logs: readonly PartitionLog[] }[], spec: ReadSpec, handler: (record: TransportRecord) => Promise<void>): Read {
  const workers: PartitionWorker[] = [];
  let failure: { readonly err: unknown } | undefined;
  let stopAll: () => Promise<void> = () => Promise.resolve();
  const ends: Promise<void>[] = [];
  for (const { topic, logs } of topics) {
    logs.forEach((log, partition) => {
      const at = spec.from;
      let from: bigint;
      if (at.kind === 'positions') {
        const wanted = at.positions.find((p) => p.topic === topic && p.partition === partition);
        if (wanted === undefined) return; // a partition the read does not cover
        from = wanted.offset;
      } else {
        from = at.kind === 'earliest' ? 0n : at.kind === 'latest' ? log.end : log.offsetForTime(at.timestampMs);
      }
      const end = log.end;
      if (spec.untilEnd === true && from >= end) return;
      let reachedEnd: () => void = () => {};
      ends.push(new Promise<void>((r) => (reachedEnd = r)));
      const worker: PartitionWorker = new PartitionWorker(
        topic,
        partition,
        log,
        from,
        async (r) => {
          await handler(r);
          if (spec.untilEnd === true && r.offset + 1n >= end) {
            reachedEnd();
            neverRejects(worker.stop()); // a worker's loop catches its handler
          }
        },
        () => undefined,
        (err) => {
          failure ??= { err };
          neverRejects(stopAll());
        },
      );
      neverRejects(worker.finished.then(reachedEnd));
      workers.push(worker);
    });
  }
  stopAll = async () => {
    await Promise.all(workers.map((w) => w.stop()));
  };
  const done = Promise.all(ends).then(async () => {
    await stopAll();
    if (failure !== undefined) throw failure.err instanceof Error ? failure.err : new Error(String(failure.err));
  });
  done.catch(() => undefined);
  return { done, stop: stopAll };
}
