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
