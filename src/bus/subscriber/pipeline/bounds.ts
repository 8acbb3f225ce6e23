/**
 * Stage 1: bounded work per record. A record whose headers break the envelope limits (count or
 * bytes, src/envelope/limits.ts) is poison: it is dead-lettered with that reason before anything
 * else reads its headers, in time bounded by the limits (the check stops at the first breach).
 * Spec: issue 7 ("bounded work per record").
 */
import { checkEnvelopeLimits, describeLimitBreach } from '../../../envelope/index.js';
import type { EnvelopeLimits } from '../../../envelope/index.js';
import type { TransportRecord } from '../../../transport/port.js';

/** The reason to dead-letter the record, or undefined when its headers are within bounds. */
export function headerBoundsProblem(record: TransportRecord, limits: EnvelopeLimits): string | undefined {
  const breach = checkEnvelopeLimits(record.headers, limits, record.headers.length);
  return breach === undefined ? undefined : `poison: record headers: ${describeLimitBreach(breach)}`;
}
