/**
 * Charset guards for outside values that become headers (HTTP or Kafka). Every such value passes
 * one of these before use. Topic names have their one rule in `core/topic-name.ts`.
 * Spec: RFC 9110 §5.5 (field values: no CR, LF, NUL).
 */
import { GatewayError } from '../core/errors.js';

const HEADER_UNSAFE = /[\r\n\0]/;
/** Largest header value accepted, in UTF-8 bytes (8 KiB). */
export const MAX_HEADER_BYTES = 8192;

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
