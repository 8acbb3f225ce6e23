/**
 * validTracestate: the W3C Trace Context rules for a request's `tracestate` header (§3.3.1): list
 * of at most 32 `key=value` members, keys and values of the spec's grammar, one entry per key,
 * optional whitespace and empty members ignored, more than 512 characters cut by whole members.
 * Generated: lists from the grammar (with whitespace and empty members thrown in), and each with
 * one member broken.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_TRACESTATE_CHARS, MAX_TRACESTATE_MEMBERS, validTracestate } from '../../../src/http/ingress/tracestate.js';

const key = fc.stringMatching(/^[a-z0-9][a-z0-9_\-*/@]{0,40}$/);
const value = fc.stringMatching(/^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,40}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/);
const members = fc.uniqueArray(fc.record({ key, value }), { selector: (m) => m.key, minLength: 1, maxLength: MAX_TRACESTATE_MEMBERS });
const ows = fc.constantFrom('', ' ', '\t', '  ', ' \t ');

/** The members written as a header: optional whitespace around each, empty members between some. */
function header(list: readonly { key: string; value: string }[], pads: readonly string[], empties: readonly boolean[]): string {
  return list.map((m, i) => `${pads[i % pads.length] ?? ''}${m.key}=${m.value}${pads[(i + 1) % pads.length] ?? ''}${empties[i % empties.length] === true ? ', ,' : ''}`).join(',');
}

describe('validTracestate', () => {
  it('the reported value and the spec examples are kept', () => {
    expect(validTracestate('congo=t61rcWkgMzE')).toBe('congo=t61rcWkgMzE');
    expect(validTracestate('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')).toBe('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
    expect(validTracestate('tenant@vendor=x, 1a*/_-=y')).toBe('tenant@vendor=x,1a*/_-=y');
    // Leading spaces of a value are the value's; trailing ones are optional whitespace (§3.3.1.3.2).
    expect(validTracestate('k=  v  ')).toBe('k=  v');
  });

  it('several headers arrive joined with ", " and are one list (§3.3.1.1)', () => {
    expect(validTracestate('a=1, b=2')).toBe('a=1,b=2');
  });

  it('absent, empty and whitespace-only headers give nothing', () => {
    for (const v of [undefined, '', ' ', ',', ' , \t,', ['a=1']]) expect(validTracestate(v)).toBeUndefined();
  });

  it('refuses what the grammar refuses, the whole header', () => {
    const refused = [
      'a', 'a=', '=v', 'A=v', '_a=v', 'a b=v', 'a =v', 'k=v=w', 'k=v,w', 'k=a\tb', 'k=é', 'k=\u0001',
      `${'k'.repeat(257)}=v`, `k=${'v'.repeat(257)}`, 'a=1,a=2', 'a=1,bad,b=2',
      Array.from({ length: MAX_TRACESTATE_MEMBERS + 1 }, (_, i) => `k${i}=v`).join(','),
    ];
    for (const v of refused) expect(validTracestate(v), v).toBeUndefined();
    // The bounds themselves hold.
    expect(validTracestate(`${'k'.repeat(256)}=v`)).toBe(`${'k'.repeat(256)}=v`);
    expect(validTracestate(`k=${'v'.repeat(256)}`)).toBe(`k=${'v'.repeat(256)}`);
    expect(validTracestate(Array.from({ length: MAX_TRACESTATE_MEMBERS }, (_, i) => `k${i}=v`).join(','))).toBeDefined();
  });

  it('generated lists are kept, members in order, without whitespace and empty members', () => {
    fc.assert(
      fc.property(members, fc.array(ows, { minLength: 1 }), fc.array(fc.boolean(), { minLength: 1 }), (list, pads, empties) => {
        const expected = list.map((m) => `${m.key}=${m.value.replace(/ +$/, '')}`).join(',');
        const got = validTracestate(header(list, pads, empties));
        if (expected.length <= MAX_TRACESTATE_CHARS) expect(got).toBe(expected);
        else {
          // Cut by whole members, order kept: every member kept is one of the list's, in its place.
          expect(got!.length).toBeLessThanOrEqual(MAX_TRACESTATE_CHARS);
          const all = expected.split(',');
          let at = 0;
          for (const m of got!.split(',')) {
            at = all.indexOf(m, at);
            expect(at).toBeGreaterThanOrEqual(0);
            at++;
          }
        }
      }),
    );
  });

  it('one broken member discards the whole header', () => {
    const broken = fc.constantFrom('novalue', 'K=v', '-k=v', 'k=', 'k=a=b', 'k=a\tb', 'k=\u007f', 'k:v');
    fc.assert(
      fc.property(members, broken, fc.nat(), (list, bad, at) => {
        const parts = list.map((m) => `${m.key}=${m.value}`);
        parts.splice(at % (parts.length + 1), 0, bad);
        expect(validTracestate(parts.join(',')), parts.join(',')).toBeUndefined();
      }),
    );
  });

  it('a key given twice discards the whole header (§3.3.1.4)', () => {
    fc.assert(
      fc.property(members, fc.nat(), fc.nat(), value, (list, i, j, other) => {
        const parts = list.map((m) => `${m.key}=${m.value}`);
        parts.splice(j % (parts.length + 1), 0, `${list[i % list.length]!.key}=${other}`);
        return parts.length > MAX_TRACESTATE_MEMBERS || validTracestate(parts.join(',')) === undefined;
      }),
    );
  });

  it('over 512 characters: members over 128 characters go first, then members from the end (§3.3.1.5)', () => {
    const long = `big=${'x'.repeat(200)}`;
    const small = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, '0')}=${'v'.repeat(16)}`); // 20 × 20 characters
    expect(validTracestate([small[0], long, ...small.slice(1)].join(','))).toBe(small.join(','));
    const many = Array.from({ length: 30 }, (_, i) => `k${String(i).padStart(2, '0')}=${'v'.repeat(16)}`); // 30 × 21 - 1 = 629
    expect(validTracestate(many.join(','))).toBe(many.slice(0, 24).join(',')); // 24 × 21 - 1 = 503
  });
});
