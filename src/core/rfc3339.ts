/**
 * The one parser of the RFC 3339 times an operator or a client gives the gateway: a replay's `to`
 * (HTTP `{"to": "<time>"}`, `bus.replay`, CLI `replay --to-time`), a subscription's `start` (HTTP,
 * connector files), and the CLI's `--since` (tail, trace). Server and CLI read them alike here.
 * Spec: RFC 3339 §5.6 (date-time), §5.7 (restrictions), §4.3 (`-00:00`).
 *
 * Accepted: `YYYY-MM-DD(T|t)hh:mm:ss[.1*DIGIT](Z|z|±hh:mm)`, the §5.6 grammar exactly, years
 * 0000–9999, with:
 * - `T`/`t` and `Z`/`z` (§5.6 NOTE: case-insensitive);
 * - any number of fraction digits (`time-secfrac = "." 1*DIGIT`), **truncated to milliseconds**
 *   (Kafka record timestamps are ms): `…:00.1239Z` is `…:00.123Z`, never rounded up;
 * - an offset `±hh:mm` with hh 00–23 and mm 00–59 (within ±23:59); `-00:00` is UTC (§4.3).
 *
 * Refused, with the reason naming the part: a space (or anything else) between date and time — the
 * §5.6 NOTE lets *applications* choose a space "for readability", the grammar does not, and a
 * shell splits it; no offset (a local time is not an instant); a date that does not exist
 * (month 01–12, day 01–28/29/30/31 by month and leap year: `2026-02-30` is refused); hour 24,
 * minute 60; a **leap second** (`:60`, §5.7): refused rather than clamped, as JavaScript and Kafka
 * times have none — give `:59` or the next minute's `:00`.
 *
 * Different on purpose: a CloudEvent's `time` attribute (src/envelope/time.ts: a stricter profile
 * that every mainstream SDK can read back) and the Avro timestamps of event data
 * (src/codec/data/calendar.ts: nanosecond precision).
 */
import { GatewayError } from './errors.js';

/** A parsed RFC 3339 time. */
export interface Rfc3339Time {
  readonly ok: true;
  /** The instant, ms since 1970-01-01T00:00:00Z (fraction truncated to ms; negative before 1970). */
  readonly epochMs: number;
  /** The offset written, minutes east of UTC (−1439…1439; 0 for `Z` and `-00:00`). */
  readonly offsetMinutes: number;
}

/** Why a text is not an RFC 3339 time this gateway takes. */
export interface Rfc3339Problem {
  readonly ok: false;
  /** One sentence naming the part that is wrong (without the field's name). */
  readonly reason: string;
}

/** An example that every reason may quote. */
export const RFC3339_EXAMPLE = '2026-12-01T10:00:00Z';

const SHAPE = /^(\d{4})-(\d{2})-(\d{2})(.)(\d{2}):(\d{2}):(\d{2})(\.\d*)?(.*)$/s;
const OFFSET = /^[+-](\d{2}):(\d{2})$/;
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;
const MS_PER_MINUTE = 60_000;
const MS_PER_DAY = 86_400_000;

const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

/** Days since 1970-01-01 of a proleptic Gregorian date (month 1–12); H. Hinnant's days_from_civil. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

const problem = (reason: string): Rfc3339Problem => ({ ok: false, reason });

/**
 * Parses an RFC 3339 `date-time` (§5.6) as described in the module header.
 * Shape: `{ ok: true, epochMs, offsetMinutes }` or `{ ok: false, reason }`; never throws.
 * Units: `epochMs` ms since the Unix epoch, UTC; `offsetMinutes` minutes east of UTC.
 * Spec: RFC 3339 §5.6, §5.7, §4.3.
 */
export function parseRfc3339Time(text: string): Rfc3339Time | Rfc3339Problem {
  const m = SHAPE.exec(text);
  if (m === null) return problem(`not an RFC 3339 time: expected YYYY-MM-DDThh:mm:ss[.fraction] and Z or ±hh:mm, e.g. ${RFC3339_EXAMPLE}`);
  const [, ys, mos, ds, sep, hs, mis, ss, frac, zone] = m as unknown as [string, string, string, string, string, string, string, string, string | undefined, string];
  if (sep !== 'T' && sep !== 't') {
    return problem(sep === ' ' ? 'a space between date and time is not RFC 3339 (§5.6 date-time): write T, e.g. ' + RFC3339_EXAMPLE : `date and time must be separated by T (RFC 3339 §5.6), e.g. ${RFC3339_EXAMPLE}`);
  }
  if (frac === '.') return problem('the fraction of a second needs at least one digit after "." (RFC 3339 §5.6 time-secfrac)');
  let offsetMinutes = 0;
  if (zone === '') return problem('no offset: add Z (UTC) or ±hh:mm — a time without one is a local time, not an instant (RFC 3339 §4.4)');
  if (zone !== 'Z' && zone !== 'z') {
    const o = OFFSET.exec(zone);
    if (o === null) return problem(`the offset must be Z or ±hh:mm (RFC 3339 §5.6 time-offset), e.g. ${RFC3339_EXAMPLE} or 2026-12-01T11:00:00+01:00`);
    const oh = Number(o[1]);
    const om = Number(o[2]);
    if (oh > 23 || om > 59) return problem('the offset must be within ±23:59 (hours 00–23, minutes 00–59; RFC 3339 §5.6 time-numoffset)');
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  const year = Number(ys);
  const month = Number(mos);
  const day = Number(ds);
  const hour = Number(hs);
  const minute = Number(mis);
  const second = Number(ss);
  if (month < 1 || month > 12) return problem(`month ${mos} does not exist: 01–12`);
  const maxDay = month === 2 && isLeap(year) ? 29 : MONTH_DAYS[month - 1]!;
  if (day < 1 || day > maxDay) return problem(`day ${ds} does not exist in ${ys}-${mos}: 01–${maxDay}`);
  if (hour > 23) return problem(`hour ${hs} does not exist: 00–23 (midnight is 00:00:00 of the next day)`);
  if (minute > 59) return problem(`minute ${mis} does not exist: 00–59`);
  if (second === 60) return problem('a leap second (:60) is refused: Kafka and JavaScript times have none — give :59 or the next minute\'s :00');
  if (second > 59) return problem(`second ${ss} does not exist: 00–59`);
  // Truncated to ms: the first three fraction digits, padded.
  const ms = frac === undefined ? 0 : Number(frac.slice(1, 4).padEnd(3, '0'));
  const epochMs = daysFromCivil(year, month, day) * MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + ms - offsetMinutes * MS_PER_MINUTE;
  return { ok: true, epochMs, offsetMinutes: offsetMinutes === 0 ? 0 : offsetMinutes };
}

/**
 * Parses `text` as {@link parseRfc3339Time} does and returns the instant, ms since the epoch (UTC).
 * Errors: CEG_INVALID_PARAMETER (400) naming `field` — message `<field>: <reason>`, details
 *   `{ field, violations: [{ field, reason }] }` — when it is not one.
 * Spec: RFC 3339 §5.6.
 */
export function rfc3339EpochMs(text: string, field: string): number {
  const t = parseRfc3339Time(text);
  if (t.ok) return t.epochMs;
  throw new GatewayError('CEG_INVALID_PARAMETER', `${field}: ${t.reason}`, { retriable: false, details: { field, violations: [{ field, reason: t.reason }] } });
}
