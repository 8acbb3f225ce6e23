/**
 * Canonical string encoding of attribute values and its inverse (used by header-based bindings:
 * HTTP binary mode, Kafka headers).
 * Spec: CloudEvents 1.0.2 "Type System" (canonical string encoding of each type).
 */
import { GatewayError } from '../core/errors.js';
import type { AttributeValue } from './types.js';
import { attributeTypeOf } from './attribute-types.js';
import { parseIntegerText } from './values.js';

/**
 * The canonical string of a value: Boolean → `true` / `false`, Integer → decimal, String-like
 * types (String, URI, URI-reference, Timestamp, Binary as base64) → unchanged.
 */
export function canonicalString(value: AttributeValue): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return String(value);
}

/** Result of {@link tryParseAttribute}: the typed value, or the reason the text is not one. */
export type ParsedAttribute = { readonly ok: true; readonly value: AttributeValue } | { readonly ok: false; readonly reason: string };

/**
 * Like {@link parseAttribute} without throwing. Known Integer attributes (`schemaversion`) become
 * numbers, known Boolean ones booleans; everything else, including unknown extensions, stays a
 * String (their type is not knowable from a header).
 */
export function tryParseAttribute(name: string, text: string): ParsedAttribute {
  const type = attributeTypeOf(name);
  if (type === 'Integer') {
    const n = parseIntegerText(text);
    return n === undefined
      ? { ok: false, reason: 'must be a CloudEvents Integer: decimal digits with an optional minus sign, signed 32-bit' }
      : { ok: true, value: n };
  }
  if (type === 'Boolean') {
    if (text === 'true') return { ok: true, value: true };
    if (text === 'false') return { ok: true, value: false };
    return { ok: false, reason: "must be a CloudEvents Boolean: 'true' or 'false'" };
  }
  return { ok: true, value: text };
}

/**
 * Inverse of {@link canonicalString} for attribute `name`, using its known type.
 * Throws: GatewayError CEG_INVALID_ATTRIBUTE (retriable false, details.attribute) when the text
 * is not the canonical form of the attribute's type (e.g. `schemaversion: "3.0"`).
 * Spec: CloudEvents 1.0.2 "Type System".
 */
export function parseAttribute(name: string, text: string): AttributeValue {
  const r = tryParseAttribute(name, text);
  if (r.ok) return r.value;
  throw new GatewayError('CEG_INVALID_ATTRIBUTE', `${name}: ${r.reason}`, {
    retriable: false,
    details: { attribute: name, violations: [{ attribute: name, reason: r.reason }] },
  });
}
