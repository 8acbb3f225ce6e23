/**
 * Calendar arithmetic for the Avro logical types (proleptic Gregorian, UTC), without `Date` so
 * that years 0000–9999 and micro-second values are exact.
 * Spec: RFC 3339 §5.6 (date-time, full-date, partial-time); Avro 1.11 §"Logical Types"
 * (date = days since 1970-01-01; timestamp-millis/-micros = since the epoch, UTC).
 */

/** Days since 1970-01-01 of a civil date (month 1–12). H. Hinnant's days_from_civil. */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Civil date [year, month 1–12, day] of a day count since 1970-01-01. */
export function civilFromDays(days: number): [number, number, number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp + (mp < 10 ? 3 : -9);
  return [yoe + era * 400 + (month <= 2 ? 1 : 0), month, day];
}

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Why year/month/day is not a real date, or undefined. */
export function dateProblem(year: number, month: number, day: number): string | undefined {
  if (month < 1 || month > 12) return 'month must be 01–12';
  const max = month === 2 && isLeap(year) ? 29 : (MONTH_DAYS[month - 1] as number);
  if (day < 1 || day > max) return `day must be 01–${max} in that month`;
  return undefined;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/;

/** A parsed instant: whole seconds since the epoch plus a 9-digit nanosecond fraction. */
export interface Instant {
  readonly seconds: number;
  /** nanoseconds, 0–999 999 999 */
  readonly nanos: number;
}

function timeProblem(h: number, mi: number, s: number): string | undefined {
  if (h > 23) return 'hour must be 00–23';
  if (mi > 59) return 'minute must be 00–59';
  if (s === 60) return 'leap second 60 cannot be represented';
  if (s > 59) return 'second must be 00–59';
  return undefined;
}

function nanosOf(frac: string | undefined): number {
  return frac === undefined ? 0 : Number(frac.padEnd(9, '0'));
}

const DIGIT_0 = 0x30;
const DATE_TIME_FORMAT = 'expected an RFC 3339 date-time with an offset, e.g. 2026-08-01T10:00:00Z';
/** 10^(9 − digits): a fraction of `digits` digits → nanoseconds. */
const NANOS_SCALE = [1e9, 1e8, 1e7, 1e6, 1e5, 1e4, 1e3, 100, 10, 1];

/** `count` ASCII decimal digits at `at` as a number, or -1. */
function digitsAt(text: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - DIGIT_0;
    if (!(d >= 0 && d <= 9)) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * Parses an RFC 3339 date-time that carries an offset (`Z` or ±hh:mm). Returns a reason string when invalid.
 * Accepts exactly what the pattern `YYYY-MM-DD[Tt]hh:mm:ss[.1–9 digits]([Zz]|±hh:mm)` matches (the
 * grammar of RFC 3339 §5.6 with `T`/`Z` in either case), then checks the calendar and the clock.
 * By hand, not with a regular expression: it runs for every timestamp in every event's data, and a
 * match array of 12 strings per value was a measurable part of ingress (issue 14; the property test
 * in test/unit/codec-data/calendar.test.ts holds it to the pattern).
 */
export function parseDateTime(text: string): Instant | string {
  const len = text.length;
  if (len < 20) return DATE_TIME_FORMAT;
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const h = digitsAt(text, 11, 2);
  const mi = digitsAt(text, 14, 2);
  const s = digitsAt(text, 17, 2);
  const t = text.charCodeAt(10);
  if (year < 0 || month < 0 || day < 0 || h < 0 || mi < 0 || s < 0 || (t !== 0x54 && t !== 0x74)) return DATE_TIME_FORMAT;
  if (text.charCodeAt(4) !== 0x2d || text.charCodeAt(7) !== 0x2d || text.charCodeAt(13) !== 0x3a || text.charCodeAt(16) !== 0x3a) return DATE_TIME_FORMAT;
  let i = 19;
  let nanos = 0;
  if (text.charCodeAt(i) === 0x2e) {
    const first = ++i;
    let frac = 0;
    for (; i < len; i++) {
      const d = text.charCodeAt(i) - DIGIT_0;
      if (!(d >= 0 && d <= 9)) break;
      frac = frac * 10 + d;
    }
    const count = i - first;
    if (count === 0 || count > 9) return DATE_TIME_FORMAT;
    nanos = frac * NANOS_SCALE[count]!;
  }
  const z = text.charCodeAt(i);
  let oh = 0;
  let om = 0;
  let sign = 0;
  if (z === 0x5a || z === 0x7a) {
    if (i + 1 !== len) return DATE_TIME_FORMAT;
  } else {
    if ((z !== 0x2b && z !== 0x2d) || i + 6 !== len || text.charCodeAt(i + 3) !== 0x3a) return DATE_TIME_FORMAT;
    oh = digitsAt(text, i + 1, 2);
    om = digitsAt(text, i + 4, 2);
    if (oh < 0 || om < 0) return DATE_TIME_FORMAT;
    sign = z === 0x2d ? -1 : 1;
  }
  const problem = dateProblem(year, month, day) ?? timeProblem(h, mi, s);
  if (problem !== undefined) return problem;
  if (sign !== 0 && (oh > 23 || om > 59)) return 'offset must be within ±23:59';
  return { seconds: daysFromCivil(year, month, day) * 86400 + h * 3600 + mi * 60 + s - sign * (oh * 3600 + om * 60), nanos };
}

/** Parses `YYYY-MM-DD` to days since the epoch; a reason string when invalid. */
export function parseDate(text: string): number | string {
  const m = DATE.exec(text);
  if (m === null) return 'expected a date YYYY-MM-DD';
  const year = Number(m[1]), month = Number(m[2]), day = Number(m[3]);
  return dateProblem(year, month, day) ?? daysFromCivil(year, month, day);
}

/** Parses `HH:MM:SS[.fraction]` to nanoseconds of the day; a reason string when invalid. */
export function parseTime(text: string): number | string {
  const m = TIME.exec(text);
  if (m === null) return 'expected a time HH:MM:SS[.fraction]';
  const h = Number(m[1]), mi = Number(m[2]), s = Number(m[3]);
  const problem = timeProblem(h, mi, s);
  if (problem !== undefined) return problem;
  return (h * 3600 + mi * 60 + s) * 1e9 + nanosOf(m[4]);
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/**
 * Digit groups made once: every decoded timestamp of an event's data is formatted (issue 8 push
 * profile: `padStart` and its strings were 3 % of a push subscription's allocations).
 */
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => pad(i, 2));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => pad(i, 3));

/** The last day formatted: the events of a stream mostly carry times of one day. */
let lastDays = Number.NaN;
let lastDate: string | undefined;

/** Years an RFC 3339 date can spell (four digits): what the data readers can write. */
export const MIN_YEAR = 0;
export const MAX_YEAR = 9999;
/** Seconds since the epoch of 0000-01-01T00:00:00Z and of 10000-01-01T00:00:00Z. */
const FIRST_SECOND = daysFromCivil(MIN_YEAR, 1, 1) * 86400;
const END_SECOND = daysFromCivil(MAX_YEAR + 1, 1, 1) * 86400;

/**
 * Why an instant cannot be written back, or undefined: its date in UTC must be within years
 * 0000–9999 ({@link MIN_YEAR}–{@link MAX_YEAR}), since the readers write UTC (`Z`) and RFC 3339
 * has four year digits. The one rule for both sides: ingress refuses what {@link formatDateTime}
 * and {@link formatDate} could not write (`9999-12-31T23:59:59-12:00` is year 10000 in UTC,
 * `0000-01-01T00:30:00+01:00` year −1). `seconds` since 1970-01-01T00:00:00Z.
 * Spec: RFC 3339 §5.6 (date-fullyear = 4DIGIT); the envelope's `time` applies the same "also of
 * the instant in UTC" rule (src/envelope/time.ts, with years from 0001).
 */
export function utcYearProblem(seconds: number): string | undefined {
  if (seconds >= FIRST_SECOND && seconds < END_SECOND) return undefined;
  const [year] = civilFromDays(Math.floor(seconds / 86400));
  return `the instant in UTC falls in year ${year}, outside ${pad(MIN_YEAR, 4)}–${MAX_YEAR}: readers write timestamps in UTC and could not write it`;
}

/** `YYYY-MM-DD` of a day count; undefined outside years 0000–9999 ({@link utcYearProblem}). */
export function formatDate(days: number): string | undefined {
  if (days === lastDays) return lastDate;
  const [y, m, d] = civilFromDays(days);
  const date = utcYearProblem(days * 86400) !== undefined ? undefined : `${pad(y, 4)}-${TWO_DIGITS[m]!}-${TWO_DIGITS[d]!}`;
  lastDays = days;
  lastDate = date;
  return date;
}

/** `HH:MM:SS` of seconds within a day (0–86399). */
export function formatClock(secondsOfDay: number): string {
  const h = Math.floor(secondsOfDay / 3600);
  const mi = Math.floor((secondsOfDay % 3600) / 60);
  return `${TWO_DIGITS[h]!}:${TWO_DIGITS[mi]!}:${TWO_DIGITS[secondsOfDay % 60]!}`;
}

/** `fraction` with `digits` digits, zero-padded on the left. */
function fractionDigitsOf(fraction: number, digits: number): string {
  if ((fraction | 0) !== fraction) return pad(fraction, digits);
  if (digits === 3 && fraction >= 0 && fraction < 1000) return THREE_DIGITS[fraction]!;
  if (digits === 6 && fraction >= 0 && fraction < 1_000_000) {
    const high = Math.floor(fraction / 1000);
    return THREE_DIGITS[high]! + THREE_DIGITS[fraction - high * 1000]!;
  }
  return pad(fraction, digits);
}

/**
 * RFC 3339 UTC text (`Z`) of `seconds` since the epoch plus a fraction of `fractionDigits` digits
 * (3 for millis, 6 for micros); undefined outside years 0000–9999.
 */
export function formatDateTime(seconds: number, fraction: number, fractionDigits: number): string | undefined {
  const days = Math.floor(seconds / 86400);
  const date = formatDate(days);
  if (date === undefined) return undefined;
  return `${date}T${formatClock(seconds - days * 86400)}.${fractionDigitsOf(fraction, fractionDigits)}Z`;
}
