/**
 * A shutdown that drains the HTTP server (issue 15 "A shutdown that drains"): once draining,
 * every answer carries `Connection: close`, the listener stops accepting connections, idle
 * keep-alive connections are closed, requests that arrive on open connections get 503
 * (`CEG_SHUTTING_DOWN`), and the requests in progress finish — or, past a grace period, are told
 * to answer at once (`signal`: `POST /events` then answers 503 listing each event as stored,
 * notStored or unconfirmed) — before the remaining connections are closed.
 * Whatever the clients do, {@link HttpDrain.drain} settles within `graceMs` + `answerMs`.
 */
import type { Server, ServerResponse } from 'node:http';

export class HttpDrain {
  #draining = false;
  #inFlight = 0;
  readonly #open = new Set<ServerResponse>();
  #idle: (() => void)[] = [];
  readonly #answerNow = new AbortController();

  /** true once {@link drain} began: readiness is false and new requests get 503. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Requests whose answer has not finished yet. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Aborted when requests in progress must answer now (the grace period passed). */
  get signal(): AbortSignal {
    return this.#answerNow.signal;
  }

  /** Counts a request in progress until its answer finished or its connection closed. */
  track(res: ServerResponse): void {
    this.#inFlight++;
    this.#open.add(res);
    let done = false;
    const end = (): void => {
      if (done) return;
      done = true;
      this.#open.delete(res);
      if (--this.#inFlight === 0) for (const w of this.#idle.splice(0)) w();
    };
    res.once('finish', end);
    res.once('close', end);
  }

  #quiet(ms: number): Promise<boolean> {
    if (this.#inFlight === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), ms);
      this.#idle.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /**
   * Drains `server`: stops accepting, closes idle connections, waits up to `graceMs` for the
   * requests in progress, then aborts {@link signal} and waits up to `answerMs` more for their
   * answers, then closes every connection left. Units: ms.
   */
  async drain(server: Server, graceMs: number, answerMs = 1000): Promise<void> {
    this.#draining = true;
    server.close(); // stops accepting; its callback (all connections gone) is not awaited
    server.closeIdleConnections();
    // Requests in progress: their answers end their connections too.
    for (const res of this.#open) {
      if (!res.headersSent) res.setHeader('connection', 'close');
      else res.once('finish', () => res.socket?.end());
    }
    if (!(await this.#quiet(Math.max(0, graceMs)))) {
      this.#answerNow.abort(new Error('shutting down'));
      await this.#quiet(answerMs);
    }
    server.closeAllConnections();
  }
}
