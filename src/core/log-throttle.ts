/**
 * A log line that may repeat in bursts (a failure per request during a broker outage), written at
 * most once per interval: the first occurrence at once, later ones counted and reported with the
 * next line written (`repeated`: occurrences not written since the last line). Issue 15: an
 * outage must not flood the log; the metrics count every occurrence.
 */
export class LogThrottle {
  readonly #intervalMs: number;
  readonly #now: () => number;
  #lastMs = -Infinity;
  #held = 0;

  /**
   * @param intervalMs ms between two lines at most.
   * @param now the clock, ms (default performance.now; tests pass their own).
   */
  constructor(intervalMs = 10_000, now: () => number = () => performance.now()) {
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /**
   * Calls `write(repeated)` when a line is due (`repeated` = occurrences held back since the last
   * line), else counts this occurrence. Returns whether it wrote.
   */
  run(write: (repeated: number) => void): boolean {
    const now = this.#now();
    if (now - this.#lastMs < this.#intervalMs) {
      this.#held++;
      return false;
    }
    this.#lastMs = now;
    const repeated = this.#held;
    this.#held = 0;
    write(repeated);
    return true;
  }
}
