/**
 * `work`, or a rejection `Error("no answer within <ms> ms")` after `ms` (ms), whichever comes
 * first; the timer is cleared either way. The work itself is not cancelled.
 */
export function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** A function, so the compiler does not assume the flag cannot change between two awaits. */
export function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
