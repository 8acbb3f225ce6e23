/**
 * The one RFC 3339 time parser (src/core/rfc3339.ts) and the places that take a time through it:
 * replay `to`, subscription `start`, the CLI's `--since` / `--to-time`. Property-based: generated
 * valid times (any offset within ±23:59, `T`/`t`, `Z`/`z`, any fraction digits) round-trip against
 * `Date`; generated impossible ones are refused with a reason naming the part.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRfc3339Time, rfc3339EpochMs } from '../../../src/core/rfc3339.js';
import { isGatewayError } from '../../../src/core/errors.js';
import { parseTarget, startSchema, startTarget } from '../../../src/bus/subscriptions/index.js';
import { parseSince } from '../../../src/cli/since.js';

const MIN_MS = Date.parse('0000-01-01T00:00:00.000Z');
const MAX_MS = Date.parse('9999-12-31T23:59:59.999Z');
const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** `YYYY-MM-DD`, `hh:mm:ss` and the ms of the wall clock at `offsetMinutes` east of UTC. */
function wallClock(epochMs: number, offsetMinutes: number): { date: string; time: string; ms: number } {
  const iso = new Date(epochMs + offsetMinutes * 60_000).toISOString(); // YYYY-MM-DDThh:mm:ss.sssZ (years 0000–9999)
  return { date: iso.slice(0, 10), time: iso.slice(11, 19), ms: Number(iso.slice(20, 23)) };
}

const offsetText = (minutes: number, negativeZero: boolean): string => `${minutes < 0 || (minutes === 0 && negativeZero) ? '-' : '+'}${pad(Math.floor(Math.abs(minutes) / 60))}:${pad(Math.abs(minutes) % 60)}`;

const validTime = fc
  .record({
    epochMs: fc.integer({ min: MIN_MS + 86_400_000, max: MAX_MS - 86_400_000 }),
    offsetMinutes: fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
    t: fc.constantFrom('T', 't'),
    zone: fc.constantFrom('Z', 'z', '+00:00', '-00:00', 'offset'),
    // Fraction: none, or the ms digits cut to 1–3 digits (only when what is cut is zero), or ms plus extra digits (truncated).
    fraction: fc.oneof(fc.constant('none' as const), fc.constant('short' as const), fc.string({ unit: fc.constantFrom('0', '1', '5', '9'), minLength: 0, maxLength: 15 })),
  })
  .map(({ epochMs, offsetMinutes, t, zone, fraction }) => {
    const off = zone === 'offset' ? offsetMinutes : 0;
    const { date, time, ms } = wallClock(epochMs, off);
    let frac: string;
    let wantMs: number;
    if (fraction === 'none') {
      frac = '';
      wantMs = epochMs - ms;
    } else if (fraction === 'short') {
      frac = `.${pad(ms, 3).replace(/0+$/, '') || '0'}`;
      wantMs = epochMs;
    } else {
      frac = `.${pad(ms, 3)}${fraction}`;
      wantMs = epochMs;
    }
    const z = zone === 'offset' ? offsetText(off, false) : zone;
    return { text: `${date}${t}${time}${frac}${z}`, epochMs: wantMs, offsetMinutes: off };
  });

describe('parseRfc3339Time', () => {
  it('round-trips generated RFC 3339 §5.6 times against Date (T/t, Z/z, ±hh:mm within ±23:59, any fraction digits truncated to ms)', () => {
    fc.assert(
      fc.property(validTime, ({ text, epochMs, offsetMinutes }) => {
        const r = parseRfc3339Time(text);
        expect(r, text).toEqual({ ok: true, epochMs, offsetMinutes });
        // Date agrees on the same instant written the way it reads (upper case, ms), within ±18:00 … ±23:59 too.
        expect(new Date(epochMs).toISOString()).toBe(new Date(rfc3339EpochMs(text, 'to')).toISOString());
        const canonical = text.replace(/t/, 'T').replace(/z$/, 'Z').replace(/(\.\d{3})\d+/, '$1');
        expect(Date.parse(canonical), canonical).toBe(epochMs);
      }),
      { numRuns: 2000 },
    );
  });

  it('the cases of the report: lower-case t/z and 10 fraction digits are taken, 2026-02-30 is refused', () => {
    expect(parseRfc3339Time('2026-12-06t08:59:26z')).toEqual({ ok: true, epochMs: Date.parse('2026-12-06T08:59:26Z'), offsetMinutes: 0 });
    expect(parseRfc3339Time('2026-12-06T08:59:26.1239999999Z')).toEqual({ ok: true, epochMs: Date.parse('2026-12-06T08:59:26.123Z'), offsetMinutes: 0 });
    expect(parseRfc3339Time('2026-12-06T08:59:26.9999999999-00:00')).toEqual({ ok: true, epochMs: Date.parse('2026-12-06T08:59:26.999Z'), offsetMinutes: 0 });
    expect(parseRfc3339Time('2026-12-06T08:59:26+23:59')).toEqual({ ok: true, epochMs: Date.parse('2026-12-05T09:00:26Z'), offsetMinutes: 1439 });
    expect(parseRfc3339Time('2024-02-29T00:00:00Z').ok).toBe(true);
    expect(parseRfc3339Time('2000-02-29T00:00:00Z').ok).toBe(true);
    expect(parseRfc3339Time('0000-01-01T00:00:00Z')).toEqual({ ok: true, epochMs: MIN_MS, offsetMinutes: 0 });
    for (const [bad, part] of [
      ['2026-02-30T00:00:00Z', /day 30 does not exist in 2026-02: 01–28/],
      ['2100-02-29T00:00:00Z', /day 29 does not exist in 2100-02/],
      ['2026-04-31T00:00:00Z', /day 31/],
      ['2026-13-01T00:00:00Z', /month 13/],
      ['2026-00-01T00:00:00Z', /month 00/],
      ['2026-12-00T00:00:00Z', /day 00/],
      ['2026-12-01T24:00:00Z', /hour 24/],
      ['2026-12-01T10:60:00Z', /minute 60/],
      ['2026-12-31T23:59:60Z', /leap second/],
      ['2026-12-01T10:00:61Z', /second 61/],
      ['2026-12-01T10:00:00+24:00', /±23:59/],
      ['2026-12-01T10:00:00-00:60', /±23:59/],
      ['2026-12-01 10:00:00Z', /space/],
      ['2026-12-01_10:00:00Z', /separated by T/],
      ['2026-12-01T10:00:00', /no offset/],
      ['2026-12-01T10:00:00.Z', /at least one digit/],
      ['2026-12-01T10:00:00+0100', /offset must be Z or ±hh:mm/],
      ['2026-12-01T10:00Z', /not an RFC 3339 time/],
      ['２０２６-12-01T10:00:00Z', /not an RFC 3339 time/],
      [' 2026-12-01T10:00:00Z', /not an RFC 3339 time/],
      ['2026-12-01T10:00:00Z ', /offset/],
      ['', /not an RFC 3339 time/],
    ] as const) {
      const r = parseRfc3339Time(bad);
      expect(r.ok, bad).toBe(false);
      if (!r.ok) expect(r.reason, bad).toMatch(part);
    }
  });

  it('refuses generated impossible dates, times and offsets, naming the part', () => {
    const base = { y: 2026, mo: 1, d: 1, h: 0, mi: 0, s: 0, oh: 0, om: 0 };
    const field = fc.oneof(
      fc.record({ y: fc.integer({ min: 0, max: 9999 }), mo: fc.integer({ min: 1, max: 12 }) }).chain(({ y, mo }) => {
        const max = new Date(Date.UTC(2000, mo, 0)).getUTCDate() - (mo === 2 && !((y % 4 === 0 && y % 100 !== 0) || y % 400 === 0) ? 1 : 0);
        return fc.integer({ min: max + 1, max: 99 }).map((d) => ({ change: { y, mo, d }, part: /day/ }));
      }),
      fc.oneof(fc.constant(0), fc.integer({ min: 13, max: 99 })).map((mo) => ({ change: { mo }, part: /month/ })),
      fc.integer({ min: 24, max: 99 }).map((h) => ({ change: { h }, part: /hour/ })),
      fc.integer({ min: 60, max: 99 }).map((mi) => ({ change: { mi }, part: /minute/ })),
      fc.integer({ min: 60, max: 99 }).map((s) => ({ change: { s }, part: /second/ })),
      fc.integer({ min: 24, max: 99 }).map((oh) => ({ change: { oh }, part: /offset/ })),
      fc.integer({ min: 60, max: 99 }).map((om) => ({ change: { om }, part: /offset/ })),
    );
    fc.assert(
      fc.property(field, fc.constantFrom('+', '-'), ({ change, part }, sign) => {
        const v = { ...base, ...change };
        const text = `${pad(v.y, 4)}-${pad(v.mo)}-${pad(v.d)}T${pad(v.h)}:${pad(v.mi)}:${pad(v.s)}${sign}${pad(v.oh)}:${pad(v.om)}`;
        const r = parseRfc3339Time(text);
        expect(r.ok, text).toBe(false);
        if (!r.ok) expect(r.reason, text).toMatch(part);
        // The throwing form names the field.
        let err: unknown;
        try {
          rfc3339EpochMs(text, 'since');
        } catch (e) {
          err = e;
        }
        expect(isGatewayError(err, 'CEG_INVALID_PARAMETER') && err.details.field === 'since' && err.message.startsWith('since: ')).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('every place that takes an RFC 3339 time reads it alike', () => {
  const accepted = ['2026-12-06t08:59:26z', '2026-12-06T08:59:26.1234567890Z', '2026-12-06T10:59:26.123+02:00'];
  const refused = ['2026-02-30T00:00:00Z', '2026-12-06T24:00:00Z', '2026-12-06T08:60:00Z', '2026-12-31T23:59:60Z', '2026-12-06T08:59:26+24:00', '2026-12-06 08:59:26Z'];

  it('replay `to` (HTTP, bus.replay, the CLI through the server): taken as the instant; refused naming `to` with the reason', () => {
    for (const t of accepted) expect(parseTarget(t, ['t']), t).toEqual({ kind: 'timestamp', timestampMs: rfc3339EpochMs(t, 'to') });
    expect(parseTarget('2026-12-06t08:59:26z', ['t'])).toEqual({ kind: 'timestamp', timestampMs: Date.parse('2026-12-06T08:59:26Z') });
    for (const t of refused) {
      let err: unknown;
      try {
        parseTarget(t, ['t']);
      } catch (e) {
        err = e;
      }
      expect(isGatewayError(err, 'CEG_INVALID_REPLAY') && err.details.field === 'to', t).toBe(true);
      expect((err as Error).message, t).toMatch(/^invalid replay: to: .*RFC 3339.*: /);
    }
  });

  it('subscription `start` (schema and resolution): taken alike, refused naming `start`', () => {
    for (const t of accepted) {
      expect(startSchema.safeParse(t).success, t).toBe(true);
      expect(startTarget(t), t).toEqual({ kind: 'timestamp', timestampMs: rfc3339EpochMs(t, 'start') });
    }
    for (const t of refused) {
      const r = startSchema.safeParse(t);
      expect(r.success, t).toBe(false);
      let err: unknown;
      try {
        startTarget(t);
      } catch (e) {
        err = e;
      }
      expect(isGatewayError(err, 'CEG_INVALID_OPTIONS') && err.details.field === 'start', t).toBe(true);
    }
  });

  it('the CLI (--since, --to-time) takes and refuses the same texts as the server', () => {
    for (const t of accepted) expect(parseSince(t), t).toBe(rfc3339EpochMs(t, 'since'));
    for (const t of refused) expect(() => parseSince(t), t).toThrow(/RFC 3339/);
    expect(() => parseSince('2026-02-30T00:00:00Z')).toThrow(/day 30 does not exist/);
    expect(parseSince('90s', () => 100_000)).toBe(10_000);
  });

  it('the CLI takes a time before 1970 as 0 (the earliest records), as the server takes it for start and replay `to`', () => {
    // It refused them ("reaches back before 1970"), so `replay --to-time` and HTTP `to` disagreed.
    for (const t of ['1969-12-31T23:59:59.999Z', '0000-01-01T00:00:00Z', '1900-06-01T12:00:00+01:00']) {
      expect(rfc3339EpochMs(t, 'to'), t).toBeLessThan(0);
      expect(parseSince(t), t).toBe(0);
    }
    expect(parseSince('1970-01-01T00:00:00Z')).toBe(0);
    expect(parseSince('91s', () => 90_000)).toBe(0);
    expect(parseSince('999999999d')).toBe(0);
  });
});
