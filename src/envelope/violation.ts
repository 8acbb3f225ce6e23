/**
 * Violations: one entry per broken rule, so a caller sees every problem of an event at once
 * (validation as a whole, never only the first error).
 */
import { GatewayError } from '../core/errors.js';
import type { ErrorCode } from '../core/errors.js';
import { MAX_POINTER_CHARS, shortenPointer } from './pointer-text.js';

/**
 * One broken rule. `attribute`: the CloudEvents attribute name; `field`: a JSON pointer
 * (RFC 6901) into the event's JSON form (e.g. `/data/volume`; `''` = the whole event) or
 * `body` for the request body as a whole;
 * `index`: position of the event in a batch.
 */
export interface Violation {
  readonly attribute?: string;
  readonly field?: string;
  readonly index?: number;
  readonly reason: string;
  /** The specific error code of this violation, where one applies (e.g. CEG_UNKNOWN_TYPE). */
  readonly code?: ErrorCode;
  /** A size bound that was exceeded: its name (`maxDataBytes`, `maxMessageBytes`) and value (bytes). */
  readonly limit?: string;
  readonly max?: number;
}

/** What kind of rule a violation breaks; decides the error code of the whole set. */
export type ViolationKind = 'missing' | 'attribute' | 'data' | 'event';

/**
 * Collects violations (with their kind) while an event or a batch is checked.
 * `index`, when set, is stamped on every violation added afterwards.
 */
export class ViolationCollector {
  readonly items: Violation[] = [];
  index: number | undefined = undefined;
  #missing = 0;
  #attribute = 0;
  #data = 0;
  #event = 0;
  readonly #details: Record<string, unknown> = {};

  get size(): number {
    return this.items.length;
  }

  /** Adds a violation naming an attribute. */
  attribute(attribute: string, reason: string, kind: 'missing' | 'attribute' = 'attribute'): void {
    if (kind === 'missing') this.#missing++;
    else this.#attribute++;
    this.items.push(this.index === undefined ? { attribute, reason } : { attribute, reason, index: this.index });
  }

  /** Adds a violation naming a field by JSON pointer (`''` = the whole body). */
  field(field: string, reason: string, kind: 'data' | 'event' = 'data'): void {
    if (kind === 'data') this.#data++;
    else this.#event++;
    this.items.push(this.index === undefined ? { field, reason } : { field, reason, index: this.index });
  }

  /**
   * Adds a violation that carries its own error code (e.g. CEG_TOO_MANY_ATTRIBUTES), naming an
   * attribute or a field. When every violation collected carries the same code, {@link code} is it.
   */
  coded(code: ErrorCode, where: { readonly attribute: string } | { readonly field: string }, reason: string, details?: Readonly<Record<string, unknown>>): void {
    this.#event++;
    if (details !== undefined) Object.assign(this.#details, details);
    const v: Violation = 'attribute' in where ? { attribute: where.attribute, reason, code } : { field: where.field, reason, code };
    this.items.push(this.index === undefined ? v : { ...v, index: this.index });
  }

  /**
   * The error code for the collected set: the code every violation carries, when they all carry
   * the same one; else CEG_MISSING_ATTRIBUTE when only required attributes
   * are missing; CEG_INVALID_EVENT when the body itself is malformed; CEG_INVALID_ATTRIBUTE when
   * any attribute is wrong; otherwise CEG_INVALID_DATA.
   */
  code(): ErrorCode {
    const first = this.items[0]?.code;
    if (first !== undefined && this.items.every((v) => v.code === first)) return first;
    if (this.#event > 0) return 'CEG_INVALID_EVENT';
    if (this.#attribute > 0) return 'CEG_INVALID_ATTRIBUTE';
    if (this.#missing > 0) return this.#data > 0 ? 'CEG_INVALID_ATTRIBUTE' : 'CEG_MISSING_ATTRIBUTE';
    return 'CEG_INVALID_DATA';
  }

  /** A GatewayError (retriable false) listing every violation; see {@link violationsError}. */
  toError(): GatewayError {
    return violationsError(this.code(), this.items, this.#details);
  }
}

/** `name: reason` or `[index] field: reason`, for messages and logs. */
export function describeViolation(v: Violation): string {
  const where = v.attribute ?? (v.field === undefined ? '' : v.field === '' ? '(event)' : v.field);
  const prefix = v.index === undefined ? '' : `[${v.index}] `;
  return `${prefix}${where}: ${v.reason}`;
}

const MESSAGE_LIMIT = 5;

/**
 * Builds the error for a non-empty violation list; a `field` longer than MAX_POINTER_CHARS is cut
 * (shortenPointer). Shape: `extra` (e.g. the limit broken),
 * `details.violations` (all of them),
 * and `details.attribute` / `details.field` / `details.index` copied from the first one so the
 * error names what is wrong even to readers that ignore the list.
 * retriable: false (the same input never becomes valid).
 */
export function violationsError(code: ErrorCode, violations: readonly Violation[], extra: Readonly<Record<string, unknown>> = {}): GatewayError {
  // Every pointer as a refusal may echo it (./pointer-text.ts): in `field`, `details` and the message.
  if (violations.some((v) => v.field !== undefined && v.field.length > MAX_POINTER_CHARS)) violations = violations.map((v) => (v.field !== undefined && v.field.length > MAX_POINTER_CHARS ? { ...v, field: shortenPointer(v.field) } : v));
  const shown = violations.slice(0, MESSAGE_LIMIT).map(describeViolation);
  if (violations.length > MESSAGE_LIMIT) shown.push(`… and ${violations.length - MESSAGE_LIMIT} more`);
  const first = violations[0];
  const details: Record<string, unknown> = { ...extra, violations: Object.freeze(violations.map((v) => Object.freeze({ ...v }))) };
  if (first?.attribute !== undefined) details.attribute = first.attribute;
  if (first?.field !== undefined) details.field = first.field;
  if (first?.index !== undefined) details.index = first.index;
  return new GatewayError(code, `invalid CloudEvent: ${shown.join('; ')}`, { retriable: false, details });
}
