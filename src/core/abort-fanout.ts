/**
 * Waiting on a signal that many callers share (a server's shutdown signal, a member's stop
 * signal) with one 'abort' listener per signal, however many wait: a listener per waiter made
 * Node print `MaxListenersExceededWarning: 11 abort listeners added to [AbortSignal]` as soon as
 * eleven ingress requests waited at once (push-latency bench, issue 8), and every add/remove walks
 * the signal's listener list.
 */

const waiters = new WeakMap<AbortSignal, Set<(reason: unknown) => void>>();

/**
 * Calls `fn(signal.reason)` once when `signal` aborts (at once, synchronously, when it has
 * aborted already). Returns the function that withdraws `fn` (call it when the wait is over;
 * calling it twice is harmless). Errors: none; an exception thrown by `fn` propagates to the
 * abort() caller, as a listener's would.
 */
export function onAbort(signal: AbortSignal, fn: (reason: unknown) => void): () => void {
  if (signal.aborted) {
    fn(signal.reason);
    return () => undefined;
  }
  let set = waiters.get(signal);
  if (set === undefined) {
    const s = new Set<(reason: unknown) => void>();
    waiters.set(signal, s);
    signal.addEventListener(
      'abort',
      () => {
        const all = [...s];
        s.clear();
        for (const f of all) f(signal.reason);
      },
      { once: true },
    );
    set = s;
  }
  const own = set;
  own.add(fn);
  return () => void own.delete(fn);
}

/** A signal that follows others until released: see {@link linkedSignal}. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Stops following the sources (idempotent); call it once the signal is no longer waited on. */
  release(): void;
}

/**
 * A signal that aborts, with the source's reason, as soon as any of `sources` does (at once when
 * one has already), and that lets go of them on `release()`. Use it instead of
 * `AbortSignal.any()` whenever a source outlives the combined signal (a server's shutdown signal,
 * an SSE stream's): on Node 20 `AbortSignal.any` leaves a WeakRef to its result in a set on every
 * source (nested ones flattened to theirs) until that source aborts, so combining each request's
 * signal with a long-lived one grew the long-lived one's set by one entry per request, for the
 * life of the process. Here each source holds one shared listener ({@link onAbort}) and an entry
 * per link only until `release()`.
 * Errors: none.
 */
export function linkedSignal(sources: readonly AbortSignal[]): LinkedSignal {
  const ac = new AbortController();
  const withdraw: (() => void)[] = [];
  const release = (): void => {
    for (const w of withdraw.splice(0)) w();
  };
  for (const s of sources) {
    if (ac.signal.aborted) break;
    withdraw.push(
      onAbort(s, (reason) => {
        release();
        ac.abort(reason);
      }),
    );
  }
  if (ac.signal.aborted) release();
  return { signal: ac.signal, release };
}
