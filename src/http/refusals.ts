/**
 * Refused and aborted requests, logged in aggregate: one info line per interval with the count per
 * status and code, and per partner (the client's address: the gateway has no partner credentials
 * yet), instead of a line (or an error-level stack trace) per request. A partner that sends
 * garbage, or a client that hangs up, is not an incident of the gateway; a flood of them must not
 * flood the log either. Each refusal is also counted in `ce_gateway_ingress_refusals_total{code}`
 * (issue 15 "Logs").
 */
import type { Logger } from '../observability/index.js';
import type { GatewayMetrics } from '../observability/metrics.js';

/** How often the counts are written at most, ms. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;

/** Partners named in one line at most; the others are summed under `other` (bounded memory and line). */
export const MAX_PARTNERS_PER_LINE = 100;

export class RefusalLog {
  readonly #log: Logger;
  readonly #intervalMs: number;
  readonly #instruments: Pick<GatewayMetrics, 'refusal'> | undefined;
  #counts = new Map<string, number>();
  #partners = new Map<string, Map<string, number>>();
  #timer: NodeJS.Timeout | undefined;

  constructor(log: Logger, intervalMs: number = REFUSAL_LOG_INTERVAL_MS, instruments?: Pick<GatewayMetrics, 'refusal'>) {
    this.#log = log;
    this.#intervalMs = intervalMs;
    this.#instruments = instruments;
  }

  /**
   * Counts one refusal (`status` and `code`, e.g. `400 CEG_INVALID_DATA`) or abort (`aborted`),
   * from `partner` (the client's address; undefined when unknown).
   */
  count(what: string, partner?: string): void {
    this.#counts.set(what, (this.#counts.get(what) ?? 0) + 1);
    const sp = what.indexOf(' ');
    this.#instruments?.refusal(sp === -1 ? what : what.slice(sp + 1));
    const who = partner === undefined ? 'unknown' : this.#partners.has(partner) || this.#partners.size < MAX_PARTNERS_PER_LINE ? partner : 'other';
    let m = this.#partners.get(who);
    if (m === undefined) this.#partners.set(who, (m = new Map<string, number>()));
    m.set(what, (m.get(what) ?? 0) + 1);
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.flush(), this.#intervalMs);
      this.#timer.unref();
    }
  }

  /** Writes the counts so far (one info line: `refused` per status and code, `partners` per partner and code, `total`) and starts over. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#counts.size === 0) return;
    const refused = Object.fromEntries(this.#counts);
    const partners = Object.fromEntries([...this.#partners].map(([p, m]) => [p, Object.fromEntries(m)]));
    let total = 0;
    for (const n of this.#counts.values()) total += n;
    this.#counts = new Map();
    this.#partners = new Map();
    this.#log.info({ refused, partners, total }, 'http: requests refused or aborted since the last report');
  }
}
