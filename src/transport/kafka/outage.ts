/**
 * A broker outage, logged once when it starts and once when it ends (issue 15 "Logs"), instead
 * of an error-level stack trace per client retry (kafkajs logs every failed connection attempt of
 * every client — 40 lines in 8 s in the trial).
 * - `failed(reason, startedAtMs)`: a connection-level failure (refused, reset, timed out) of a
 *   request started at `startedAtMs`. The first one of an outage writes one warn line; the rest are
 *   counted. A failure of a request started before the answer that ended the latest outage is
 *   stale (a request that hung through the outage and failed after its end) and starts nothing. While down, a probe (one cheap admin
 *   request) runs every `probeIntervalMs` so the end is noticed even when nothing else talks to
 *   the broker.
 * - `ok()`: a broker answered (a produce, an admin request, the probe): ends the outage with one
 *   info line giving its duration and the failures suppressed meanwhile.
 * - The warn line waits `logDelayMs` (default {@link OUTAGE_LOG_DELAY_MS}): an answer within it
 *   ends the "outage" without a line (debug only). A request failing on a connection an outage
 *   that just ended left stale, answered on its retry 100 ms later, wrote a second
 *   unreachable/reachable pair for a blip (seen in CI on kafkajs right after a broker's SIGCONT).
 *   `down` is true from the first failure all the same.
 * Everything the kafkajs clients log while the outage lasts goes to debug (`suppress`).
 */
import { listenerHint, tlsListenerHint } from '../../core/tls-errors.js';
import type { KafkaClientSecurity } from '../../core/tls-errors.js';
import type { TransportLogger } from './logging.js';
import { errorMessage } from '../../core/errors.js';
import { withTimeout } from '../await.js';
import { kafkaAccessFailure } from '../access-failure.js';
import type { HealthFailure } from '../port.js';
import { neverRejects } from '../../core/never-rejects.js';

/**
 * A request the broker has not answered for this long, ms, starts an outage in the log (a paused
 * or partitioned broker refuses nothing: requests just hang). Also the health check's own deadline.
 */
export const BROKER_STALL_MS = 5_000;

/** How long an outage lasts before its warn line is written, ms (see the module comment). */
export const OUTAGE_LOG_DELAY_MS = 1_000;

/**
 * How long the recovery from an outage lasts, ms from the answer that ended it: consumer groups
 * rejoin under new member ids, commits of the old generation fail and are carried by the next.
 * What the clients say about that meanwhile is part of the outage already logged (issue 15: a
 * 30 s outage is a handful of lines; a CI run wrote 3 rejoin lines and 2 commit warnings after
 * "reachable again").
 */
export const OUTAGE_RECOVERY_MS = 30_000;

export interface BrokerOutageOptions {
  /** Probe while down: resolves true when the broker answers. Never rejects. */
  readonly probe?: () => Promise<boolean>;
  /** ms between probes while down; default 2000. */
  readonly probeIntervalMs?: number;
  readonly base?: Readonly<Record<string, unknown>>;
  /** ms an outage lasts before its warn line is written; default {@link OUTAGE_LOG_DELAY_MS}; 0 writes it at once. */
  readonly logDelayMs?: number;
  /** Whether the client speaks TLS and logs in, for the warn line's hint (core/tls-errors listenerHint); without it only a TLS hello dropped is hinted at. */
  readonly security?: KafkaClientSecurity;
}

export class BrokerOutage {
  readonly #log: TransportLogger;
  readonly #opts: BrokerOutageOptions;
  #since: number | undefined;
  /** Date.now() of the answer that ended the latest outage, ms (kept off the hot path: ok() without an outage sets nothing). */
  #lastAnswerMs = 0;
  #suppressed = 0;
  #timer: NodeJS.Timeout | undefined;
  /** The pending warn line of the outage that lasts (written after logDelayMs), and whether it was written. */
  #logTimer: NodeJS.Timeout | undefined;
  #logged = false;
  #closed = false;
  /** Why the latest health check failed; undefined after one that passed. */
  #healthFailure: HealthFailure | undefined;

  constructor(log: TransportLogger, opts: BrokerOutageOptions = {}) {
    this.#log = log;
    this.#opts = opts;
  }

  /** true while an outage lasts (between a failure and the next answer). */
  get down(): boolean {
    return this.#since !== undefined;
  }

  /** true while an outage lasts or within {@link OUTAGE_RECOVERY_MS} after one ended. */
  get recovering(): boolean {
    return this.#since !== undefined || (this.#lastAnswerMs > 0 && Date.now() - this.#lastAnswerMs < OUTAGE_RECOVERY_MS);
  }

  /**
   * A connection-level failure of a request started at `startedAtMs` (Date.now() ms; undefined:
   * not known); `reason` is logged with the first one of an outage only.
   */
  failed(reason: string, startedAtMs?: number): void {
    if (this.#closed) return;
    if (this.#since !== undefined) {
      this.#suppressed++;
      return;
    }
    // The broker answered after this request began: its failure says nothing about now. A failure
    // whose request start is unknown (a client's log line) is presumed to be such a request for
    // BROKER_STALL_MS after an outage ended.
    if (startedAtMs === undefined ? Date.now() - this.#lastAnswerMs < BROKER_STALL_MS : startedAtMs < this.#lastAnswerMs) return;
    this.#since = Date.now();
    this.#suppressed = 0;
    this.#logged = false;
    const warn = (): void => {
      this.#logTimer = undefined;
      if (this.#since === undefined || this.#closed) return;
      this.#logged = true;
      const hint = this.#opts.security === undefined ? tlsListenerHint(reason) : listenerHint(reason, this.#opts.security);
      this.#log.warn({ ...this.#opts.base, reason: reason.slice(0, 300), ...(hint === undefined ? {} : { hint }) }, 'kafka: broker unreachable; clients keep retrying (logged again when it answers)');
    };
    const delay = this.#opts.logDelayMs ?? OUTAGE_LOG_DELAY_MS;
    if (delay <= 0) warn();
    else {
      this.#logTimer = setTimeout(warn, delay);
      this.#logTimer.unref();
    }
    this.#schedule();
  }

  /** A broker answered: ends the outage, if one lasts. Cheap when none does (hot path). */
  ok(): void {
    if (this.#since === undefined) return;
    this.#lastAnswerMs = Date.now();
    const downMs = this.#lastAnswerMs - this.#since;
    this.#since = undefined;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    clearTimeout(this.#logTimer);
    this.#logTimer = undefined;
    if (this.#logged) this.#log.info({ ...this.#opts.base, downMs, failuresSuppressed: this.#suppressed }, 'kafka: broker reachable again');
    else this.#log.debug({ ...this.#opts.base, downMs, failuresSuppressed: this.#suppressed }, 'kafka: a failed request was answered on its retry (no outage)');
    this.#logged = false;
  }

  /**
   * Why the latest health check ({@link checkBrokerHealth}) failed, or the latest failure a client
   * reported since (a connect the client is still retrying: its health check has not ended yet);
   * undefined when the latest health check passed, or nothing failed.
   */
  get lastHealthFailure(): HealthFailure | undefined {
    return this.#healthFailure;
  }

  /** Records the outcome of a health check: `failure`, or undefined when the broker answered. */
  healthChecked(failure: HealthFailure | undefined): void {
    this.#healthFailure = failure;
  }

  /**
   * Records a failure a client reported on its own (a failed attempt it retries, a log line), as
   * {@link lastHealthFailure} until the next health check ends. Cheap; never throws.
   */
  clientFailed(failure: HealthFailure): void {
    if (!this.#closed) this.#healthFailure = failure;
  }

  /** Counts a client log line swallowed during the outage. */
  suppress(): void {
    this.#suppressed++;
  }

  /** Stops probing (transport closed); no further lines. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    clearTimeout(this.#logTimer);
    this.#logTimer = undefined;
  }

  #schedule(): void {
    const probe = this.#opts.probe;
    if (probe === undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      // The probe never rejects (BrokerOutageOptions.probe): a failed request is `false`.
      neverRejects(probe().then((up) => {
        if (this.#since === undefined || this.#closed) return;
        if (up) this.ok();
        else this.#schedule();
      }));
    }, this.#opts.probeIntervalMs ?? 2000);
    this.#timer.unref();
  }
}

/**
 * Why a health check failed, from the client's error `err`: `describe(err)` (the adapter's own
 * wording: fromKafkaError / fromPlatformaticError with operation "health check"; default the
 * error's message), at most 300 characters; not `retriable` when the error is an access failure
 * (refused SASL login or mechanism, ACL, untrusted TLS certificate: {@link kafkaAccessFailure}).
 * Pure; never throws.
 */
export function healthFailureOf(err: unknown, describe: (err: unknown) => string = (e) => `health check: ${errorMessage(e)}`): HealthFailure {
  let message: string;
  try {
    message = describe(err);
  } catch {
    message = `health check: ${errorMessage(err)}`;
  }
  return { message: message.slice(0, 300), retriable: kafkaAccessFailure(err) === undefined };
}

/**
 * One readiness check of a Kafka adapter: `check()` (one cheap admin request) within
 * min(`requestTimeoutMs`, BROKER_STALL_MS) ms. An answer ends an outage; a failure starts one, or
 * is counted in the one that lasts (one line per outage, not one per readiness probe).
 * The outcome is kept as {@link BrokerOutage.lastHealthFailure} ({@link healthFailureOf} with `describe`).
 * Resolves false on any failure (logged at debug with `base`); never rejects.
 */
export async function checkBrokerHealth(outage: BrokerOutage, check: () => Promise<unknown>, o: { readonly requestTimeoutMs: number; readonly logger: TransportLogger; readonly base: Readonly<Record<string, unknown>>; readonly describe?: (err: unknown) => string }): Promise<boolean> {
  const startedAtMs = Date.now();
  try {
    await withTimeout(check(), Math.min(o.requestTimeoutMs, BROKER_STALL_MS));
    outage.ok();
    outage.healthChecked(undefined);
    return true;
  } catch (err) {
    if (outage.down) outage.suppress();
    else outage.failed(`health check: ${errorMessage(err)}`, startedAtMs);
    outage.healthChecked(healthFailureOf(err, o.describe));
    o.logger.debug({ ...o.base, err: errorMessage(err) }, 'kafka health check failed');
    return false;
  }
}

/** The outage's probe: true when `check()` answered within min(`requestTimeoutMs`, BROKER_STALL_MS) ms; never rejects. */
export async function brokerAnswers(check: () => Promise<unknown>, requestTimeoutMs: number): Promise<boolean> {
  try {
    await withTimeout(check(), Math.min(requestTimeoutMs, BROKER_STALL_MS));
    return true;
  } catch {
    return false;
  }
}

/** Errors and messages that mean "the broker cannot be reached", not "the broker refused this". */
// kafkajs's words, then @platformatic/kafka's ("Connection to host:port failed.", "Connection closed", "Request timed out").
const CONNECTION_TROUBLE = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EPIPE|Connection error|Connection timeout|Closed connection|Request .*timed out|timed out|Failed to connect|not connected|KafkaJSConnection|KafkaJSRequestTimeout|KafkaJSNumberOfRetriesExceeded|There is no leader|LEADER_NOT_AVAILABLE|NOT_LEADER|coordinator is not available|Broker not found|Connection to \S+ failed|Connection closed|broker unavailable|no answer within/i;

/** true when a log entry's message (or its error) says the broker is unreachable. */
export function isConnectionTrouble(message: string, extra: Readonly<Record<string, unknown>>): boolean {
  if (CONNECTION_TROUBLE.test(message)) return true;
  for (const k of ['error', 'err', 'stack', 'type']) {
    const v = extra[k];
    if (typeof v === 'string' && CONNECTION_TROUBLE.test(v)) return true;
  }
  return false;
}

/**
 * `logger` with the outage's rule for a client that logs through the transport (the
 * @platformatic/kafka adapter's consumers and producer queue; the library itself logs nothing):
 * while an outage lasts, every warn and error line goes to debug and is counted; a warn or error
 * line saying the broker cannot be reached starts the outage (its one line) and goes to debug.
 * Other lines pass unchanged. Spec: issue 15 "Logs", issue 14 (the same behaviour on both clients).
 */
export function quietDuringOutage(logger: TransportLogger, outage: BrokerOutage): TransportLogger {
  const loud = (level: 'warn' | 'error') => (obj: Record<string, unknown>, msg: string): void => {
    if (outage.down) outage.suppress();
    else if (isConnectionTrouble(msg, obj)) outage.failed(`${msg}: ${typeof obj.err === 'string' ? obj.err : ''}`);
    if (outage.down) logger.debug(obj, msg);
    else logger[level](obj, msg);
  };
  return { debug: (obj, msg) => logger.debug(obj, msg), info: (obj, msg) => logger.info(obj, msg), warn: loud('warn'), error: loud('error') };
}
