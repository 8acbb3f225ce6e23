/**
 * RFC 3339 timestamps: validation (offset required), done by hand since it runs for every event.
 * Spec: RFC 3339 §5.6 (date-time), CloudEvents 1.0.2 "Type System" (Timestamp), bus spec M5.
 *
 * The profile accepted is the part of RFC 3339 that mainstream CloudEvents SDKs can read, since
 * the gateway forwards `time` verbatim and a reader that cannot parse it may be unable to get past
 * the record at all (the Java SDK's Kafka deserializer throws; DESIGN "Known traps"):
 * - year 0001–9999 (Python's and .NET's date types start at year 1), also of the instant in UTC;
 * - seconds 00–59: a leap second `:60` is refused (Java's ISO_OFFSET_DATE_TIME refuses it);
 * - at most 9 fraction digits (Java: nanoseconds);
 * - `T` and `Z` in upper case (Go's time.Parse(RFC3339) matches them exactly);
 * - an offset within ±18:00 (Java's ZoneOffset range).
 */
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;
const DIGIT_0 = 0x30;
const MAX_FRACTION_DIGITS = 9;
const MAX_OFFSET_MINUTES = 18 * 60;

function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

/** Two decimal digits at `i` as a number, or -1. */
function two(s: string, i: number): number {
  const a = s.charCodeAt(i) - DIGIT_0;
  const b = s.charCodeAt(i + 1) - DIGIT_0;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * Validates an RFC 3339 date-time with an offset and returns the offset in minutes east of UTC,
 * or undefined when the text is not one.
 */
function offsetMinutesOf(s: string): number | undefined {
  const n = s.length;
  if (n < 20) return undefined;
  const y1 = two(s, 0);
  const y2 = two(s, 2);
  const month = two(s, 5);
  const day = two(s, 8);
  const hour = two(s, 11);
  const minute = two(s, 14);
  const second = two(s, 17);
  if (y1 < 0 || y2 < 0 || (y1 === 0 && y2 === 0) || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) {
    return undefined;
  }
  if (s.charCodeAt(4) !== 0x2d || s.charCodeAt(7) !== 0x2d || s.charCodeAt(13) !== 0x3a || s.charCodeAt(16) !== 0x3a) return undefined;
  if (s.charCodeAt(10) !== 0x54) return undefined; // "T" only (RFC 3339 §5.6 NOTE allows "t"; Go does not read it)
  const maxDay = month === 2 && isLeapYear(y1 * 100 + y2) ? 29 : (DAYS_IN_MONTH[month - 1] ?? 31);
  if (day > maxDay) return undefined;
  let i = 19;
  if (s.charCodeAt(i) === 0x2e) {
    // time-secfrac = "." 1*DIGIT
    const first = ++i;
    while (i < n) {
      const d = s.charCodeAt(i) - DIGIT_0;
      if (d < 0 || d > 9) break;
      i++;
    }
    if (i === first || i - first > MAX_FRACTION_DIGITS) return undefined;
  }
  const z = s.charCodeAt(i);
  if (z === 0x5a) return i + 1 === n ? 0 : undefined; // "Z" only
  if ((z !== 0x2b && z !== 0x2d) || i + 6 !== n || s.charCodeAt(i + 3) !== 0x3a) return undefined;
  const oh = two(s, i + 1);
  const om = two(s, i + 4);
  if (oh < 0 || om < 0 || om > 59 || oh * 60 + om > MAX_OFFSET_MINUTES) return undefined;
  const offset = (oh * 60 + om) * (z === 0x2d ? -1 : 1);
  // The instant, in UTC, must be within years 0001–9999 too: .NET's DateTimeOffset refuses
  // 0001-01-01T00:00:00+01:00 (UTC year 0) and 9999-12-31T23:59:59-01:00 (UTC year 10000).
  const utcMinuteOfDay = hour * 60 + minute - offset;
  if (y1 === 0 && y2 === 1 && month === 1 && day === 1 && utcMinuteOfDay < 0) return undefined;
  if (y1 === 99 && y2 === 99 && month === 12 && day === 31 && utcMinuteOfDay >= 24 * 60) return undefined;
  return offset;
}

/**
 * True when `text` is an RFC 3339 date-time with an offset (`Z` or `±hh:mm`), a calendar date
 * that exists (leap years included) and a time up to 23:59:59, within the portable profile of the
 * module header (year ≥ 0001, ≤ 9 fraction digits, upper-case `T`/`Z`, offset within ±18:00).
 * Spec: RFC 3339 §5.6, §5.7; bus spec M5 (an instant, never a local wall-clock time).
 */
export function isRfc3339Timestamp(text: string): boolean {
  return offsetMinutesOf(text) !== undefined;
}
