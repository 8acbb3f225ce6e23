/**
 * Reading a broker's bounds of a consumer group session timeout from its configuration (both Kafka
 * adapters' `groupSessionTimeoutBounds`). The group coordinator refuses a JoinGroup whose session
 * timeout lies outside them (INVALID_SESSION_TIMEOUT, code 26).
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
