/**
 * Bounds on the attributes of one event, applied alike where events come in (HTTP ingress) and
 * where records are consumed (a record's headers), so that one event can never cost unbounded
 * work: a record with tens of thousands of headers froze every subscriber of its topic before
 * these bounds existed (issue 7).
 *
 * Counting rule: every attribute counts, required ones included (`specversion`, `id`, …); bytes
 * are the UTF-8 bytes of each attribute's name plus its canonical string value. On a consumed
 * record, every header counts (name bytes + value bytes), `ce_` or not.
 */
import { GatewayError } from '../core/errors.js';
import { canonicalString } from './canonical.js';
import type { AttributeValue } from './types.js';

/** The limits; units: a count, bytes. */
export interface EnvelopeLimits {
  /** Most attributes (or record headers) one event may carry. */
  readonly maxAttributes: number;
  /** Most bytes all attribute names and values (or header names and values) of one event may take together. */
  readonly maxAttributeBytes: number;
}

/**
 * Defaults: 100 attributes and 16 KiB. A gateway-written record carries about 15 headers of
 * well under 1 KiB; 16 KiB matches the HTTP ingress header limit (431 above it), so a binary-mode
 * event that passes ingress also passes the consumer side.
 */
export const DEFAULT_ENVELOPE_LIMITS: EnvelopeLimits = Object.freeze({ maxAttributes: 100, maxAttributeBytes: 16_384 });

/** Which bound an event broke, with the figures to name it in an error. */
export interface LimitBreach {
  readonly limit: 'maxAttributes' | 'maxAttributeBytes';
  readonly max: number;
  /** The count or bytes seen; for bytes, counting may stop early once over the bound (then a lower bound). */
  readonly actual: number;
}

/**
 * Checks name/value pairs against the limits in one pass, stopping as soon as a bound is broken,
 * so the cost is bounded by the limits, not by the input. Values are strings or bytes.
 * Returns undefined when within bounds.
 */
export function checkEnvelopeLimits(entries: Iterable<readonly [string, string | Uint8Array]>, limits: EnvelopeLimits = DEFAULT_ENVELOPE_LIMITS, count?: number): LimitBreach | undefined {
  if (count !== undefined && count > limits.maxAttributes) return { limit: 'maxAttributes', max: limits.maxAttributes, actual: count };
  // Fast path for the common case: a name's UTF-8 length is at most 3 × its UTF-16 length, so when
  // even that upper bound fits, no exact byte count is needed (Buffer.byteLength per name cost more
  // than the rest of the check).
  if (Array.isArray(entries) && entries.length <= limits.maxAttributes) {
    let upper = 0;
    // Indexed: an iterator and its result objects per pair were 4 % of a push subscription's allocations.
    const pairs = entries as readonly (readonly [string, string | Uint8Array])[];
    for (let i = 0; i < pairs.length; i++) {
      const pair = pairs[i]!;
      const value = pair[1];
      upper += pair[0].length * 3 + (typeof value === 'string' ? value.length * 3 : value.byteLength);
    }
    if (upper <= limits.maxAttributeBytes) return undefined;
  }
  let n = 0;
  let bytes = 0;
  for (const [name, value] of entries) {
    n += 1;
    if (n > limits.maxAttributes) return { limit: 'maxAttributes', max: limits.maxAttributes, actual: count ?? n };
    bytes += Buffer.byteLength(name, 'utf8') + (typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : value.byteLength);
    if (bytes > limits.maxAttributeBytes) return { limit: 'maxAttributeBytes', max: limits.maxAttributeBytes, actual: bytes };
  }
  return undefined;
}

/** The error code of a breach: `CEG_TOO_MANY_ATTRIBUTES` (maxAttributes) or `CEG_ATTRIBUTES_TOO_LARGE` (maxAttributeBytes). */
export function limitBreachCode(b: LimitBreach): 'CEG_TOO_MANY_ATTRIBUTES' | 'CEG_ATTRIBUTES_TOO_LARGE' {
  return b.limit === 'maxAttributes' ? 'CEG_TOO_MANY_ATTRIBUTES' : 'CEG_ATTRIBUTES_TOO_LARGE';
}

/** An attribute map as name / canonical-string pairs, the entries {@link checkEnvelopeLimits} counts (undefined values skipped). */
export function* attributeEntries(attributes: Readonly<Record<string, AttributeValue | undefined>>): Generator<readonly [string, string]> {
  for (const name in attributes) {
    const v = attributes[name];
    if (v !== undefined) yield [name, canonicalString(v)];
  }
}

/**
 * {@link checkEnvelopeLimits} of an attribute map (the same entries as {@link attributeEntries},
 * the same answer), without building a pair per attribute: the count and an upper bound of the
 * bytes (3 bytes per UTF-16 unit, 24 per non-string value) decide the common case; only an event
 * near a bound is counted exactly. Runs for every event that comes in (issue 14).
 */
export function checkAttributeLimits(attributes: Readonly<Record<string, AttributeValue | undefined>>, limits: EnvelopeLimits = DEFAULT_ENVELOPE_LIMITS): LimitBreach | undefined {
  let n = 0;
  let upper = 0;
  for (const name in attributes) {
    const v = attributes[name];
    if (v === undefined) continue;
    n += 1;
    upper += name.length * 3 + (typeof v === 'string' ? v.length * 3 : 24);
  }
  if (n <= limits.maxAttributes && upper <= limits.maxAttributeBytes) return undefined;
  return checkEnvelopeLimits(attributeEntries(attributes), limits);
}

/**
 * A GatewayError for a breach, naming the limit: code from {@link limitBreachCode}, retriable
 * false, `details.limit` (`maxAttributes` | `maxAttributeBytes`), `details.max`, `details.actual`,
 * and one violation naming `where` (default: the field `attributes`).
 */
export function limitBreachError(b: LimitBreach, where: { readonly attribute: string } | { readonly field: string } = { field: 'attributes' }): GatewayError {
  const reason = `${describeLimitBreach(b)}; attributes are Kafka record headers, each one costs every consumer`;
  return new GatewayError(limitBreachCode(b), reason, {
    retriable: false,
    details: { limit: b.limit, max: b.max, actual: b.actual, violations: [{ ...where, reason, code: limitBreachCode(b) }] },
  });
}

/** One line naming the breach, e.g. `50000 attributes, more than maxAttributes (100)`. */
export function describeLimitBreach(b: LimitBreach): string {
  return b.limit === 'maxAttributes' ? `${b.actual} attributes, more than maxAttributes (${b.max})` : `over ${b.max} bytes of attributes (maxAttributeBytes; ${b.actual}+ seen)`;
}
