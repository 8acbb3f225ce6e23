/**
 * Runs a promise in the background where the caller states that it cannot reject: its body
 * catches everything (its failures are logged, counted or fed to a failure path inside it), or it
 * is a memoized promise whose rejection is handled where it is awaited too.
 *
 * It replaces `void promise`, which lint now refuses in src/ (`no-floating-promises` with
 * `ignoreVoid: false`, bus spec defect 2: every async failure is awaited, counted or logged with
 * context): a call site either handles a rejection or says here, by name, that there is none.
 *
 * Nothing is swallowed: should the statement be wrong (a bug), the rejection stays an unhandled
 * rejection, as `void` left it, so it is still seen (Node ends the process on one by default).
 *
 * @param promise - a promise that never rejects (the caller's word; see the callee's TSDoc).
 */
export function neverRejects(promise: Promise<unknown>): void {
  promise.catch(rethrow);
}

/** Passes a rejection on unchanged: the promise `.catch` returns rejects with it, unhandled. */
function rethrow(err: unknown): never {
  throw err;
}
