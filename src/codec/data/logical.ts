/**
 * Natural-JSON forms of Avro logical types, bytes and longs.
 * Spec: Avro 1.11 §"Logical Types" (decimal = two's-complement big-endian unscaled integer; date,
 * time-millis/-micros, timestamp-millis/-micros, uuid); RFC 3339 §5.6; RFC 4648 §4 (base64).
 * Each `parse*` returns the Avro-ready value or a {@link Reason}; each `format*` returns text or undefined.
 */
import { formatClock, formatDate, formatDateTime, parseDate, parseDateTime, parseTime, utcYearProblem } from './calendar.js';
import { base64PaddingProblem } from '../../envelope/values.js';
import { normalizeLong } from './avro-types.js';
import type { LongValue } from './avro-types.js';

/** Why a value was refused. */
export class Reason {
  constructor(readonly text: string) {}
}

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
const DECIMAL = /^(-)?([0-9]+)(?:\.([0-9]+))?$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const MIN_LONG = -(2n ** 63n);
const MAX_LONG = 2n ** 63n - 1n;
const MIN_INT = -2147483648;
const MAX_INT = 2147483647;

/** What a number that is not an integer is, for a message: NaN and ±Infinity are not fractions (they come from JavaScript callers; JSON has neither). */
function notInteger(v: number): string {
  return Number.isNaN(v) ? 'NaN' : Number.isFinite(v) ? 'a fraction' : `${v > 0 ? '' : '-'}Infinity`;
}

export function parseInt32(v: unknown): number | Reason {
  if (typeof v !== 'number') return new Reason('expected an integer (int)');
  if (!Number.isInteger(v)) return new Reason(`expected an integer (int), got ${notInteger(v)}`);
  if (v < MIN_INT || v > MAX_INT) return new Reason('integer out of the 32-bit int range');
  return v;
}

/** long: a safe-integer JSON number, or a decimal string (required beyond ±(2^53 − 1)). */
export function parseLong(v: unknown): LongValue | Reason {
  if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) return v;
    if (Number.isInteger(v)) return new Reason('integer beyond ±(2^53 − 1) must be given as a decimal string to stay exact');
    return new Reason(`expected an integer (long), got ${notInteger(v)}`);
  }
  if (typeof v === 'string') {
    if (!INTEGER.test(v)) return new Reason('expected an integer (long) as a JSON number or a decimal string');
    const n = BigInt(v);
    if (n < MIN_LONG || n > MAX_LONG) return new Reason('integer out of the 64-bit long range');
    return normalizeLong(n);
  }
  return new Reason('expected an integer (long)');
}

/** long out: number when safe, decimal string otherwise. */
export function formatLong(v: LongValue): number | string {
  return typeof v === 'number' ? v : v.toString();
}

const SPECIAL: Readonly<Record<string, number>> = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };

/**
 * float/double: any JSON number, integral or not, however large (`1e16`, `1e300`: a double holds
 * them as JSON parsers do; the safe-integer rule is for int/long only), or "NaN" / "Infinity" /
 * "-Infinity" (JSON has no such numbers). A float is written as the nearest 32-bit float (Avro
 * §"Primitive Types": IEEE 754 single precision, as `Math.fround` rounds); a number that rounds to
 * infinity there (|x| ≥ 2^128 − 2^103, just above the largest float 3.4028234663852886e38) is refused rather than
 * silently becoming "Infinity". Java's `Float.MAX_VALUE` printed as `3.4028235E38` rounds to the
 * largest float and is accepted.
 */
export function parseFloating(v: unknown, isFloat: boolean): number | Reason {
  if (typeof v === 'number') {
    if (isFloat && !Number.isFinite(Math.fround(v)) && Number.isFinite(v)) return new Reason('number out of the 32-bit float range (it would become infinity)');
    return v;
  }
  if (typeof v === 'string' && v in SPECIAL) return SPECIAL[v] as number;
  return new Reason(isFloat ? 'expected a number (float)' : 'expected a number (double)');
}

export function formatFloating(v: number): number | string {
  return Number.isFinite(v) ? v : String(v);
}

/**
 * bytes / fixed: canonical base64 with padding; non-zero pad bits (`…AQF=` for `…AQE=`) are
 * refused. Spec: RFC 4648 §4 (alphabet, padding), §3.5 (canonical encoding).
 */
export function parseBase64(v: unknown, size?: number): Buffer | Reason {
  if (typeof v !== 'string' || !BASE64.test(v)) return new Reason('expected base64 text (RFC 4648 §4, padded)');
  const padding = base64PaddingProblem(v);
  if (padding !== undefined) return new Reason(`expected canonical base64 text (RFC 4648 §4, padded): it ${padding}`);
  const buf = Buffer.from(v, 'base64');
  if (size !== undefined && buf.length !== size) return new Reason(`expected exactly ${size} bytes, got ${buf.length}`);
  return buf;
}

/** `String.prototype.isWellFormed` (ES2024, Node ≥ 20); this project's `lib` is ES2023. */
interface WellFormedCheck {
  isWellFormed(): boolean;
}

/**
 * Why `text` cannot be an Avro string, or undefined: Avro strings are UTF-8 (Avro 1.11
 * §"Primitive Types"), and UTF-8 has no encoding for a lone surrogate (RFC 3629 §3), which a JSON
 * `\ud800` escape can produce (RFC 8259 §8.2 lets parsers accept it). Written anyway, it becomes
 * CESU-8 bytes (ED A0 80) that strict readers refuse and lenient ones turn into U+FFFD.
 * Cost: one V8 builtin call per string (constant time for one-byte strings); the position is
 * looked for only when the string is ill-formed.
 */
export function wellFormedProblem(text: string): string | undefined {
  if ((text as unknown as WellFormedCheck).isWellFormed()) return undefined;
  let at = 0;
  for (; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(at + 1);
      if (next >= 0xdc00 && next <= 0xdfff) at++;
      else break;
    } else if (c >= 0xdc00 && c <= 0xdfff) break;
  }
  const unit = text.charCodeAt(at).toString(16).toUpperCase();
  return `string is not well-formed Unicode: lone surrogate U+${unit} at index ${at} (Avro strings are UTF-8, which cannot encode it)`;
}

/** string: any well-formed JSON string (see {@link wellFormedProblem}). */
export function parseString(v: unknown): string | Reason {
  if (typeof v !== 'string') return new Reason('expected a string');
  const problem = wellFormedProblem(v);
  return problem === undefined ? v : new Reason(problem);
}

export function parseUuid(v: unknown): string | Reason {
  if (typeof v !== 'string' || !UUID.test(v)) return new Reason('expected a UUID (8-4-4-4-12 hex digits)');
  return v;
}

/**
 * timestamp-millis / -micros: RFC 3339 with an offset → epoch ms / µs. Precision beyond the unit
 * is refused, never rounded; so is an instant whose date in UTC is outside years 0000–9999
 * (`9999-12-31T23:59:59-12:00`): {@link formatTimestamp} could not write it back, and every
 * subscriber would dead-letter the event (calendar `utcYearProblem`, the one rule of both sides).
 */
export function parseTimestamp(v: unknown, micros: boolean): LongValue | Reason {
  if (typeof v !== 'string') return new Reason('expected an RFC 3339 date-time string with an offset');
  const t = parseDateTime(v);
  if (typeof t === 'string') return new Reason(t);
  const outside = utcYearProblem(t.seconds);
  if (outside !== undefined) return new Reason(outside);
  const unitNanos = micros ? 1000 : 1_000_000;
  if (t.nanos % unitNanos !== 0) return new Reason(`precision finer than ${micros ? 'microseconds' : 'milliseconds'} would be lost`);
  const frac = t.nanos / unitNanos;
  const perSecond = micros ? 1_000_000 : 1000;
  if (Math.abs(t.seconds) < 9e9) return t.seconds * perSecond + frac;
  return normalizeLong(BigInt(t.seconds) * BigInt(perSecond) + BigInt(frac));
}

/** epoch ms / µs → RFC 3339 UTC (`Z`), 3 or 6 fraction digits; undefined outside years 0000–9999. */
export function formatTimestamp(v: LongValue, micros: boolean): string | undefined {
  const perSecond = micros ? 1_000_000 : 1000;
  let seconds: number;
  let frac: number;
  if (typeof v === 'number') {
    seconds = Math.floor(v / perSecond);
    frac = v - seconds * perSecond;
  } else {
    const p = BigInt(perSecond);
    let s = v / p;
    if (v % p !== 0n && v < 0n) s -= 1n;
    seconds = Number(s);
    frac = Number(v - s * p);
  }
  return formatDateTime(seconds, frac, micros ? 6 : 3);
}

export function parseDateDays(v: unknown): number | Reason {
  if (typeof v !== 'string') return new Reason('expected a date string YYYY-MM-DD');
  const d = parseDate(v);
  return typeof d === 'string' ? new Reason(d) : d;
}

export function formatDateDays(v: number): string | undefined {
  return formatDate(v);
}

/** time-millis (int ms of day) / time-micros (long µs of day) ↔ `HH:MM:SS.fff[fff]`. */
export function parseTimeOfDay(v: unknown, micros: boolean): number | Reason {
  if (typeof v !== 'string') return new Reason('expected a time string HH:MM:SS[.fraction]');
  const ns = parseTime(v);
  if (typeof ns === 'string') return new Reason(ns);
  const unit = micros ? 1000 : 1_000_000;
  if (ns % unit !== 0) return new Reason(`precision finer than ${micros ? 'microseconds' : 'milliseconds'} would be lost`);
  return ns / unit;
}

export function formatTimeOfDay(v: LongValue, micros: boolean): string | undefined {
  const n = Number(v);
  const perSecond = micros ? 1_000_000 : 1000;
  if (!Number.isInteger(n) || n < 0 || n >= 86400 * perSecond) return undefined;
  const s = Math.floor(n / perSecond);
  return `${formatClock(s)}.${String(n - s * perSecond).padStart(micros ? 6 : 3, '0')}`;
}

function twosComplement(n: bigint): Buffer {
  let hex: string;
  if (n >= 0n) {
    hex = n.toString(16);
    if (hex.length % 2 === 1) hex = `0${hex}`;
    if (parseInt(hex.charAt(0), 16) >= 8) hex = `00${hex}`;
  } else {
    let len = 1;
    while (n < -(1n << BigInt(8 * len - 1))) len++;
    hex = ((1n << BigInt(8 * len)) + n).toString(16).padStart(2 * len, '0');
  }
  return Buffer.from(hex, 'hex');
}

function fromTwosComplement(buf: Uint8Array): bigint {
  if (buf.length === 0) return 0n;
  const n = BigInt(`0x${Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('hex')}`);
  return (buf[0] as number) >= 0x80 ? n - (1n << BigInt(8 * buf.length)) : n;
}

/** Decimal attributes: precision (total digits), scale (fraction digits), optional fixed size (bytes). */
export interface DecimalSpec {
  readonly precision: number;
  readonly scale: number;
  readonly fixedSize?: number;
}

/** decimal: a string like "1.2345" → unscaled two's-complement bytes. More fraction digits than the scale, or more digits than the precision, are refused. */
export function parseDecimal(v: unknown, spec: DecimalSpec): Buffer | Reason {
  if (typeof v !== 'string') return new Reason(`expected a decimal string (precision ${spec.precision}, scale ${spec.scale}), e.g. "1.23450"`);
  const m = DECIMAL.exec(v);
  if (m === null) return new Reason('expected a decimal string of digits with an optional "-" and "." fraction');
  const frac = m[3] ?? '';
  if (frac.length > spec.scale) return new Reason(`more than ${spec.scale} fraction digits (scale ${spec.scale})`);
  const digits = `${m[2] as string}${frac.padEnd(spec.scale, '0')}`.replace(/^0+/, '');
  if (digits.length > spec.precision) return new Reason(`more than ${spec.precision} digits (precision ${spec.precision})`);
  const unscaled = digits === '' ? 0n : BigInt(m[1] === '-' ? `-${digits}` : digits);
  const bytes = twosComplement(unscaled);
  if (spec.fixedSize === undefined) return bytes;
  if (bytes.length > spec.fixedSize) return new Reason(`does not fit in ${spec.fixedSize} bytes`);
  const out = Buffer.alloc(spec.fixedSize, unscaled < 0n ? 0xff : 0);
  bytes.copy(out, spec.fixedSize - bytes.length);
  return out;
}

/** decimal bytes → string with exactly `scale` fraction digits, e.g. "1.23450". */
export function formatDecimal(buf: Uint8Array, scale: number): string {
  const n = fromTwosComplement(buf);
  const neg = n < 0n;
  const digits = (neg ? -n : n).toString().padStart(scale + 1, '0');
  const body = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return neg ? `-${body}` : body;
}
