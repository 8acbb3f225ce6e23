/**
 * Reading the brokers' bounds of a consumer group session timeout from their configuration (both
 * Kafka adapters' `groupSessionTimeoutBounds`). The group coordinator refuses a JoinGroup whose
 * session timeout lies outside them (INVALID_SESSION_TIMEOUT, code 26). The coordinator of a group
 * can be any broker (the leader of the group's __consumer_offsets partition, which moves), and the
 * settings are per broker (a rolling change leaves them apart for a while): so every broker is
 * asked, in one DescribeConfigs (each client sends a broker's resource to that broker), and the
 * tightest bounds are taken — a value within them is accepted whichever broker coordinates.
 * Spec: Kafka broker configs `group.min.session.timeout.ms` (default 6000) and
 *   `group.max.session.timeout.ms` (default 1800000).
 */

/** The broker settings asked for, in DescribeConfigs. */
export const SESSION_BOUND_NAMES = ['group.min.session.timeout.ms', 'group.max.session.timeout.ms'] as const;

/**
 * The bounds in ms from a lookup of the broker's values by name (text, as DescribeConfigs gives
 * them); undefined when either is missing or not a whole number ≥ 0. Pure.
 */
export function sessionBounds(valueOf: (name: (typeof SESSION_BOUND_NAMES)[number]) => string | null | undefined): { readonly minMs: number; readonly maxMs: number } | undefined {
  const [minMs, maxMs] = SESSION_BOUND_NAMES.map((n) => {
    const v = valueOf(n);
    return v === null || v === undefined || v.trim() === '' ? Number.NaN : Number(v);
  });
  if (!Number.isInteger(minMs) || !Number.isInteger(maxMs) || minMs! < 0 || maxMs! < 0) return undefined;
  return { minMs: minMs!, maxMs: maxMs! };
}

/** Bounds of a session timeout, ms. */
export interface SessionBounds {
  readonly minMs: number;
  readonly maxMs: number;
}

/**
 * The bounds every broker of `each` accepts: the highest minimum and the lowest maximum. Brokers
 * that do not say (undefined) are passed over; undefined when none says. When the brokers' ranges
 * do not overlap, `minMs` > `maxMs`: no value fits, and the start-up check refuses any. Pure.
 */
export function tightestBounds(each: readonly (SessionBounds | undefined)[]): SessionBounds | undefined {
  const known = each.filter((b): b is SessionBounds => b !== undefined);
  if (known.length === 0) return undefined;
  return { minMs: Math.max(...known.map((b) => b.minMs)), maxMs: Math.min(...known.map((b) => b.maxMs)) };
}
