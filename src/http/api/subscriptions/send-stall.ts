/**
 * A bound on how long a pull answer may sit unsent: a client that stops reading without closing
 * its connection (a hung process keeps its TCP connection alive with a zero window, so no error
 * ever comes) otherwise held an SSE stream — or a long-poll whose answer did not fit the socket
 * buffers — for ever, with its partner's `PULL_MAX_CONCURRENT_PER_PARTNER` slot and one of the
 * instance's HTTP connections, and a pause or delete of the subscription did not end it (the
 * stream waited in its write). Like nginx's `send_timeout` ("if the client does not receive
 * anything within this time, the connection is closed"), an answer whose bytes still to send have
 * not gone down for the bound is cut: its connection is destroyed.
 * Cost: one timer per answer being sent (a stream: for its life), ticking a quarter of the bound
 * (at most once a second), reading one number.
 * Spec: docs/subscriptions.md "Pull delivery" ("How many at once").
 */
import type { ServerResponse } from 'node:http';

/** Default send-stall bound, ms: nginx's `send_timeout` default. */
export const STREAM_SEND_STALL_MS = 60_000;

/**
 * Watches `res` until it closes: when bytes wait to be sent (`res.writableLength` > 0: the
 * response's own buffer and its socket's) and the operating system has taken none of the
 * connection's bytes for `stallMs` milliseconds, calls `onCut(waitingBytes)` and destroys the
 * response (its 'close' follows, which gives back what was held until then). Progress is counted
 * in whole writes (a write counts once the kernel took all of it; a pull writes one event, at most
 * ~540 KB, at a time), so a client reading slower than one event per `stallMs` is cut too —
 * indistinguishable from one that reads nothing. One that reads nothing is cut within `stallMs`
 * plus one tick (a quarter of it, at most 1 s).
 * Errors: RangeError when `stallMs` is not a whole number ≥ 1 (a wiring mistake).
 */
export function cutWhenStalled(res: ServerResponse, stallMs: number, onCut?: (waitingBytes: number) => void): void {
  if (!Number.isInteger(stallMs) || stallMs < 1) throw new RangeError(`stallMs: a whole number ≥ 1, not ${String(stallMs)}`);
  if (res.destroyed || res.writableFinished) return;
  let sent = sentBytes(res);
  let since = performance.now();
  const timer = setInterval(() => {
    if (res.destroyed || res.writableFinished) {
      clearInterval(timer);
      return;
    }
    const now = performance.now();
    const nowSent = sentBytes(res);
    const waiting = res.writableLength;
    if (waiting === 0 || nowSent > sent) {
      sent = nowSent;
      since = now;
      return;
    }
    if (now - since < stallMs) return;
    clearInterval(timer);
    onCut?.(waiting);
    res.destroy();
  }, Math.max(10, Math.min(1_000, Math.floor(stallMs / 4))));
  timer.unref();
  res.once('close', () => clearInterval(timer));
}

/**
 * Writes `text` to a streamed answer with backpressure: returns at once when the socket took it
 * (or the response is gone: nothing is written then), else a promise that resolves on 'drain' or
 * 'close'. A response destroyed before or by this write resolves at once: its 'close' has passed
 * (or is about to) and never comes again, so waiting for it held the handler — its timers, response
 * and session — for the life of the process (a client that hung up mid-answer). Pair it with
 * {@link cutWhenStalled}, which ends a wait on a client that stopped reading.
 * Errors: none.
 */
export function writeWithBackpressure(res: ServerResponse, text: string): void | Promise<void> {
  if (res.destroyed || res.write(text)) return;
  return new Promise<void>((ok) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      ok();
    };
    res.on('drain', done);
    res.on('close', done);
    if (res.destroyed) done();
  });
}

/**
 * Bytes of `res`'s connection the operating system has taken so far: handed to the socket minus
 * still waiting in it. Grows with every write the kernel completes (a write counts once whole), so
 * it tells progress apart from a buffer that emptied and filled again between two looks.
 */
function sentBytes(res: ServerResponse): number {
  const socket = res.socket;
  if (socket === null) return 0;
  return (socket.bytesWritten ?? 0) - socket.writableLength;
}
