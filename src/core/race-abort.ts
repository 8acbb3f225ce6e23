/**
 * Waiting for work that cannot itself be cancelled (a produce request already sent, a connection
 * being checked out of a pool), but that a caller may stop waiting for.
 */

/**
 * `work`'s outcome, or a rejection with `onAbort()` as soon as `signal` aborts (at once when it
 * already has). The work goes on: when it settles after the abort, a value is handed to
 * `onLateValue` (e.g. to release a pooled connection nobody will use) and an error is dropped.
 * Errors: `onAbort()`; `work`'s own rejection (a non-Error wrapped in an Error).
 */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal | undefined, onAbort: () => Error, onLateValue?: (value: T) => void): Promise<T> {
  if (signal === undefined) return work;
  const late = (): void => {
    work.then((v) => onLateValue?.(v), () => undefined);
  };
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => {
      late();
      reject(onAbort());
    };
    if (signal.aborted) {
      abort();
      return;
    }
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
