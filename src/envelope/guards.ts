/**
 * Name and charset guards for outside values that become Kafka topic names or headers (HTTP or
 * Kafka). Every such value passes one of these before use.
 * Spec: Kafka topic naming (`Topic.validate`: legal chars [a-zA-Z0-9._-], max 249, not "." or
 * ".."; names starting "__" are internal topics); RFC 9110 §5.5 (field values: no CR, LF, NUL).
 */
import { GatewayError } from '../core/errors.js';

const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;
const HEADER_UNSAFE = /[\r\n\0]/;
/** Largest header value accepted, in UTF-8 bytes (8 KiB). */
export const MAX_HEADER_BYTES = 8192;
const SHOWN = 80;

function shown(s: string): string {
  return s.length > SHOWN ? `${s.slice(0, SHOWN)}…` : s;
}

/** Reason when `name` is not a legal, non-internal Kafka topic name, else undefined. */
export function topicNameProblem(name: string): string | undefined {
  if (typeof name !== 'string' || !TOPIC_NAME.test(name)) return 'topic names are 1–249 characters of [a-zA-Z0-9._-]';
  if (name === '.' || name === '..') return "topic name cannot be '.' or '..'";
  if (name.startsWith('__')) return "topic names starting with '__' are reserved for Kafka's internal topics";
  return undefined;
}

/** True when `name` is a legal, non-internal Kafka topic name. */
export function isTopicName(name: string): boolean {
  return topicNameProblem(name) === undefined;
}

/**
 * Throws unless `name` is a legal, non-internal Kafka topic name.
 * Throws: GatewayError CEG_INVALID_NAME, retriable false, details `{ name, reason }` (name cut
 * to 80 characters).
 */
export function assertTopicName(name: string): void {
  const reason = topicNameProblem(name);
  if (reason !== undefined) {
    throw new GatewayError('CEG_INVALID_NAME', `invalid topic name '${shown(String(name))}': ${reason}`, {
      retriable: false,
      details: { name: shown(String(name)), reason },
    });
  }
}

/** Reason when `value` cannot be a header value (CR, LF, NUL, or over 8 KiB of UTF-8), else undefined. */
export function headerValueProblem(value: string): string | undefined {
  if (typeof value !== 'string') return 'header values must be strings';
  if (HEADER_UNSAFE.test(value)) return 'header values cannot contain CR, LF or NUL';
  // Cheap bound first: UTF-8 takes at most 3 bytes per UTF-16 unit.
  if (value.length * 3 > MAX_HEADER_BYTES && Buffer.byteLength(value, 'utf8') > MAX_HEADER_BYTES) {
    return `header values are limited to ${MAX_HEADER_BYTES} bytes`;
  }
  return undefined;
}

/**
 * Throws unless `value` is safe as a header value: no CR, LF or NUL (header injection), at most
 * 8 KiB (8192 bytes) as UTF-8. `what` names the header or attribute in the error.
 * Throws: GatewayError CEG_INVALID_NAME, retriable false, details `{ header: what, reason }`.
 */
export function assertHeaderSafe(value: string, what = 'header'): void {
  const reason = headerValueProblem(value);
  if (reason !== undefined) {
    throw new GatewayError('CEG_INVALID_NAME', `unsafe value for ${what}: ${reason}`, {
      retriable: false,
      details: { header: what, reason },
    });
  }
}
