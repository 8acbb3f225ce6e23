/**
 * Refused and aborted requests, logged in aggregate: one info line per interval with the count per
 * status and code, per client address and per partner, instead of a line (or an error-level stack
 * trace) per request. A partner that sends garbage, or a client that hangs up, is not an incident
 * of the gateway; a flood of them must not flood the log either. Each refusal is also counted in
 * `ce_gateway_ingress_refusals_total{code}` (issue 15 "Logs").
 *
 * The line's fields: `refused` (per status and code), `clients` (per client address: the address
 * failed authentications are limited by — behind `TRUSTED_PROXIES` the forwarded client, not the
 * proxy; see auth/client-address.ts), `partners` (per partner id, for refusals of requests that
 * were authenticated; a refusal before or of authentication has no partner), `total`.
 */
import type { Logger } from '../observability/index.js';
import type { GatewayMetrics } from '../observability/metrics.js';

/** How often the counts are written at most, ms. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;

/** Client addresses (and, apart, partners) named in one line at most; the others are summed under `other` (bounded memory and line). */
export const MAX_PARTNERS_PER_LINE = 100;

/** Who a refusal came from: the client address and, once authenticated, the partner's id. */
export interface RefusedBy {
  readonly client?: string;
  readonly partner?: string;
}

/** Adds one `what` under `who` (or `other` once the map is full). */
function tally(counts: Map<string, Map<string, number>>, who: string, what: string): void {
  const key = counts.has(who) || counts.size < MAX_PARTNERS_PER_LINE ? who : 'other';
  let m = counts.get(key);
  if (m === undefined) counts.set(key, (m = new Map<string, number>()));
  m.set(what, (m.get(what) ?? 0) + 1);
}

const asObject = (counts: Map<string, Map<string, number>>): Record<string, Record<string, number>> => Object.fromEntries([...counts].map(([p, m]) => [p, Object.fromEntries(m)]));

export class RefusalLog {
  readonly #log: Logger;
  readonly #intervalMs: number;
  readonly #instruments: Pick<GatewayMetrics, 'refusal'> | undefined;
  #counts = new Map<string, number>();
  #clients = new Map<string, Map<string, number>>();
  #partners = new Map<string, Map<string, number>>();
  #timer: NodeJS.Timeout | undefined;

  constructor(log: Logger, intervalMs: number = REFUSAL_LOG_INTERVAL_MS, instruments?: Pick<GatewayMetrics, 'refusal'>) {
    this.#log = log;
    this.#intervalMs = intervalMs;
    this.#instruments = instruments;
  }

  /**
   * Counts one refusal (`status` and `code`, e.g. `400 CEG_INVALID_DATA`) or abort (`aborted`),
   * from `by.client` (the client address; `unknown` when undefined) and `by.partner` (counted under
   * `partners` only when given).
   */
  count(what: string, by: RefusedBy = {}): void {
    this.#counts.set(what, (this.#counts.get(what) ?? 0) + 1);
    const sp = what.indexOf(' ');
    this.#instruments?.refusal(sp === -1 ? what : what.slice(sp + 1));
    tally(this.#clients, by.client ?? 'unknown', what);
    if (by.partner !== undefined) tally(this.#partners, by.partner, what);
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.flush(), this.#intervalMs);
      this.#timer.unref();
    }
  }

  /** Writes the counts so far (one info line: `refused`, `clients`, `partners`, `total`; see the module's comment) and starts over. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#counts.size === 0) return;
    const refused = Object.fromEntries(this.#counts);
    let total = 0;
    for (const n of this.#counts.values()) total += n;
    const line = { refused, clients: asObject(this.#clients), partners: asObject(this.#partners), total };
    this.#counts = new Map();
    this.#clients = new Map();
    this.#partners = new Map();
    this.#log.info(line, 'http: requests refused or aborted since the last report');
  }
}
