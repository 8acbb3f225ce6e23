import { kafkajs } from './kafkajs.js';
import type { logLevel } from './kafkajs.js';
import type { LogEntry, logCreator } from 'kafkajs';
import type { BrokerOutage } from './outage.js';
import { isConnectionTrouble } from './outage.js';
import { LogThrottle } from '../../core/log-throttle.js';
import { tlsVerificationFailureInText } from '../../core/tls-errors.js';

/** The logger shape the transport writes to; pino's `Logger` satisfies it. */
export interface TransportLogger {
  debug(obj: Record<string, unknown>, msg: string): void;
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

/** Levels of kafkajs's own log that reach the logger; everything above the level is dropped. */
export type KafkaLogLevel = 'nothing' | 'error' | 'warn' | 'info' | 'debug';

/** A logger that drops everything (the default: no console noise from the library). */
export const silentLogger: TransportLogger = Object.freeze({
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
});

export function toKafkaLogLevel(level: KafkaLogLevel): logLevel {
  const { logLevel } = kafkajs();
  switch (level) {
    case 'nothing': return logLevel.NOTHING;
    case 'error': return logLevel.ERROR;
    case 'warn': return logLevel.WARN;
    case 'info': return logLevel.INFO;
    case 'debug': return logLevel.DEBUG;
  }
}

/**
 * kafkajs warnings about choices made on purpose, logged at debug instead: bounded producer
 * retries (a send must fail rather than hang; consumers dedup by source+id).
 */
const DEMOTED = new Set([
  'Limiting retries for the idempotent producer may invalidate EoS guarantees',
  // The answer to a request that timed out (a paused broker resuming): the request was already failed and retried.
  'Response without match',
]);

/** kafkajs's lines for a member joining its group again; it says one per attempt. */
const REBALANCING = 'The group is rebalancing, re-joining';
const NOT_A_MEMBER = 'The coordinator is not aware of this member, re-joining the group';
const REJOINING = new Set([REBALANCING, NOT_A_MEMBER]);

/** Kafka's NOT_LEADER_OR_FOLLOWER and LEADER_NOT_AVAILABLE, in kafkajs's words. */
const LEADERSHIP_MOVED = /not the leader|There is no leader|leader is not available|LEADER_NOT_AVAILABLE|NOT_LEADER/i;

/**
 * kafkajs logs every error response of the protocol at error level from its Connection layer —
 * "group coordinator not available" while the coordinator loads, a rebalance in progress — and
 * then retries; a failure that survives the retries surfaces where the call fails, with context.
 * Those per-response lines are debug; a routine rejoin is info.
 */
function demote(entry: LogEntry): logLevel {
  const { logLevel } = kafkajs();
  const message = entry.log.message;
  if (DEMOTED.has(message)) return logLevel.DEBUG;
  if (entry.namespace === 'Connection' && message.startsWith('Response ')) return logLevel.DEBUG;
  if (entry.level === logLevel.WARN && message === REBALANCING) return logLevel.INFO;
  // After an outage longer than the session timeout the member rejoins under a new id: routine.
  if (message === NOT_A_MEMBER) return logLevel.INFO;
  // A send kafkajs is about to retry because leadership moved (e.g. just after an outage): routine;
  // a send that still fails after the retries surfaces where the produce fails.
  if (typeof entry.log.retryCount === 'number' && LEADERSHIP_MOVED.test(message)) return logLevel.DEBUG;
  return entry.level;
}

/** kafkajs 2.2.4's line (consumer/consumerGroup.js recoverFromOffsetOutOfRange) just before it resets a partition whose fetch offset is out of range to its default offset. */
export const KAFKAJS_OFFSET_OUT_OF_RANGE = 'Offset out of range, resetting to default offset';

/** A partition kafkajs is about to reset after OFFSET_OUT_OF_RANGE (see {@link KafkaLogTaps}). */
export interface OutOfRangeTap {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
}

/**
 * What a consumer's log creator hands on besides the log: kafkajs says a running member's position
 * is out of range only in its log (no event, no error reaching the caller), then resets it to its
 * `fromBeginning` default — the end for a 'latest' subscription. `offsetOutOfRange` is called
 * synchronously with that line, before the reset's first request (consumption.ts #outOfRange), and
 * the line itself goes to debug (the consumption logs the reset). `level`: the configured kafkajs
 * level; entries above it are dropped here, since the Kafka client is then created at ERROR at least
 * so that the line is seen whatever the configured level.
 */
export interface KafkaLogTaps {
  offsetOutOfRange?: (tp: OutOfRangeTap) => void;
  readonly level: logLevel;
}

/** How long after a group's first rejoin line the following ones go to debug, ms (one rejoin episode). */
export const REJOIN_EPISODE_MS = 30_000;

/**
 * Rejoin lines at info once per group and episode: after an outage kafkajs tries again and again
 * within a second or two (4 lines in one CI run of broker-outage-logs), which is one event for an
 * operator (issue 15: a broker outage is a handful of lines). One LogThrottle per group; bounded:
 * at most 1,000 groups remembered.
 */
class RejoinEpisodes {
  readonly #groups = new Map<unknown, LogThrottle>();
  readonly #now: () => number;
  constructor(now: () => number) {
    this.#now = now;
  }
  /** true for a group's first rejoin line of an episode. */
  first(group: unknown): boolean {
    let t = this.#groups.get(group);
    if (t === undefined) {
      if (this.#groups.size >= 1000) this.#groups.clear();
      this.#groups.set(group, (t = new LogThrottle(REJOIN_EPISODE_MS, this.#now)));
    }
    return t.run(() => undefined);
  }
}

/**
 * Routes kafkajs's log entries to `logger`, one call per entry: `(obj, msg)` with the entry's
 * fields plus `kafkajs: <namespace>` and `base` (e.g. clientId). kafkajs filters by its own
 * `logLevel` before calling this, so entries above the configured level cost nothing.
 * With `outage`: a warn or error entry saying the broker cannot be reached starts (or continues)
 * the outage, which logs once; while it lasts every warn/error entry of kafkajs goes to debug
 * (issue 15: a broker outage is logged once when it starts and once when it ends). A group's
 * rejoin lines reach info once per {@link REJOIN_EPISODE_MS}, the rest go to debug, and all of
 * them while `outage` is {@link BrokerOutage.recovering}. `now`: the
 * clock, epoch ms (tests). `taps`: a consumer's (see {@link KafkaLogTaps}).
 */
export function kafkaLogCreator(logger: TransportLogger, base: Readonly<Record<string, unknown>>, outage?: BrokerOutage, now: () => number = Date.now, taps?: KafkaLogTaps): logCreator {
  const rejoins = new RejoinEpisodes(now);
  const { logLevel } = kafkajs();
  return () => (entry: LogEntry) => {
    let tapped = false;
    if (taps !== undefined) {
      const { groupId, topic, partition } = entry.log as { groupId?: unknown; topic?: unknown; partition?: unknown };
      if (entry.log.message === KAFKAJS_OFFSET_OUT_OF_RANGE && taps.offsetOutOfRange !== undefined && typeof groupId === 'string' && typeof topic === 'string' && typeof partition === 'number') {
        try {
          taps.offsetOutOfRange({ groupId, topic, partition });
        } catch (err) {
          // Called inside kafkajs's fetch recovery: a throw here would crash its consumer.
          logger.warn({ ...base, groupId, topic, partition, err: err instanceof Error ? err.message : String(err) }, 'offset out of range: could not hold the partition for its move to the log start');
        }
        tapped = true; // the consumption logs the reset
      }
      if (entry.level > taps.level) return;
    }
    let level = tapped ? logLevel.DEBUG : demote(entry);
    // A rejoin after an outage is its recovery (one per group: hundreds of lines with hundreds of subscriptions).
    if (level === logLevel.INFO && REJOINING.has(entry.log.message) && (outage?.recovering === true || !rejoins.first(entry.log.groupId))) level = logLevel.DEBUG;
    const { message, timestamp: _timestamp, logger: _name, ...extra } = entry.log as Record<string, unknown> & { message: string };
    if (outage !== undefined && (level === logLevel.ERROR || level === logLevel.WARN)) {
      if (isConnectionTrouble(message, extra)) {
        // kafkajs retries a connect whose TLS certificate check failed and logs only its text: an
        // untrusted certificate is not retriable (transport/access-failure), so the CLI's broker
        // deadline ends at once with the reason rather than at its end (issue 11; break report D3).
        const tls = tlsVerificationFailureInText(message);
        outage.clientFailed(tls === undefined ? { message: `kafka: ${message}`.slice(0, 300), retriable: true } : { message: `kafka: ${tls}: check KAFKA_SSL_CA_FILE and the broker address; retrying cannot help`.slice(0, 300), retriable: false });
      }
      if (outage.down) outage.suppress();
      else if (isConnectionTrouble(message, extra)) outage.failed(message);
      if (outage.down) level = logLevel.DEBUG;
    }
    const obj: Record<string, unknown> = { ...base, kafkajs: entry.namespace, ...extra };
    switch (level) {
      case logLevel.ERROR: logger.error(obj, message); return;
      case logLevel.WARN: logger.warn(obj, message); return;
      case logLevel.INFO: logger.info(obj, message); return;
      default: logger.debug(obj, message);
    }
  };
}
