/**
 * Why a KAFKA_SESSION_TIMEOUT_MS cannot work with the brokers' bounds, in words for the start-up
 * error (the gateway's `checkSessionTimeout`). Spec: Kafka broker configs
 * `group.min.session.timeout.ms` / `group.max.session.timeout.ms`; a JoinGroup outside them is
 * refused with INVALID_SESSION_TIMEOUT.
 */
import type { SessionBounds } from '../transport/session-bounds.js';

/**
 * The refusal of `sessionTimeoutMs` (ms) against `bounds` (the tightest over every broker, ms), or
 * undefined when the value lies within them. Bounds whose minimum is above their maximum come from
 * brokers whose ranges do not overlap: no value suits every broker, and the text says so rather
 * than printing a range like "45000–30000". Pure.
 */
export function sessionTimeoutRefusal(sessionTimeoutMs: number, bounds: SessionBounds): string | undefined {
  if (sessionTimeoutMs >= bounds.minMs && sessionTimeoutMs <= bounds.maxMs) return undefined;
  if (bounds.minMs > bounds.maxMs) {
    return `KAFKA_SESSION_TIMEOUT_MS=${sessionTimeoutMs} cannot suit every broker: their group.min.session.timeout.ms–group.max.session.timeout.ms ranges do not overlap (the highest minimum, ${bounds.minMs} ms, is above the lowest maximum, ${bounds.maxMs} ms), so one of them would refuse a consumer group member's join (INVALID_SESSION_TIMEOUT); align the brokers' settings`;
  }
  return `KAFKA_SESSION_TIMEOUT_MS=${sessionTimeoutMs} is outside what the broker accepts (group.min.session.timeout.ms–group.max.session.timeout.ms: ${bounds.minMs}–${bounds.maxMs} ms): it would refuse every consumer group member's join (INVALID_SESSION_TIMEOUT); retrying cannot help`;
}
