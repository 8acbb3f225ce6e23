/**
 * Refused and aborted requests, logged in aggregate: one info line per interval with the count per
 * status and code, instead of a line (or an error-level stack trace) per request. A partner that
 * sends garbage, or a client that hangs up, is not an incident of the gateway; a flood of them must
 * not flood the log either.
 */
import type { Logger } from '../observability/index.js';

/** How often the counts are written at most, ms. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;

export class RefusalLog {
  readonly #log: Logger;
  readonly #intervalMs: number;
  #counts = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;

  constructor(log: Logger, intervalMs: number = REFUSAL_LOG_INTERVAL_MS) {
    this.#log = log;
    this.#intervalMs = intervalMs;
  }

  /** Counts one refusal (`status` and `code`, e.g. `400 CEG_INVALID_DATA`) or abort (`aborted`). */
  count(what: string): void {
    this.#counts.set(what, (this.#counts.get(what) ?? 0) + 1);
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.flush(), this.#intervalMs);
      this.#timer.unref();
    }
  }

  /** Writes the counts so far (one info line) and starts over. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#counts.size === 0) return;
    const refused = Object.fromEntries(this.#counts);
    let total = 0;
    for (const n of this.#counts.values()) total += n;
    this.#counts = new Map();
    this.#log.info({ refused, total }, 'http: requests refused or aborted since the last report');
  }
}
