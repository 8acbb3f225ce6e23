/**
 * The one media-type parser (src/envelope/media-type.ts) against an independent reference: the
 * RFC 9110 ABNF written as regular expressions (§8.3.1 media-type, §5.6.2 token, §5.6.4
 * quoted-string, §5.6.3 OWS), read parameter by parameter, with RFC 6838 §4.3 (a repeat refused)
 * and a list (`,` where `;` or the end is expected) on top. Generated texts mix the grammar's
 * pieces with what it refuses: non-ASCII and obs-text inside and outside quotes, control
 * characters, NUL, CR/LF, `\` at the end, an unterminated quote, whitespace around `=` and `/`,
 * uppercase, empty type or subtype, `+json` suffixes, `*\/*`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isJsonMediaType } from '../../../src/codec/json/media-type.js';
import { readMediaType } from '../../../src/envelope/media-type.js';
import type { MediaType, MediaTypeFault } from '../../../src/envelope/media-type.js';

const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const QUOTED = '"(?:[\\t !\\x23-\\x5B\\x5D-\\x7E\\x80-\\xFF]|\\\\[\\t\\x20-\\x7E\\x80-\\xFF])*"';
const ESSENCE = new RegExp(`^(${TOKEN})/(${TOKEN})`, 'y');
/** One `OWS ";" OWS [ parameter ]` step, sticky. */
const STEP = new RegExp(`[ \\t]*;[ \\t]*(?:(${TOKEN})=(${TOKEN}|${QUOTED}))?`, 'y');
const END = /[ \t]*$/y;
const LIST = /[ \t]*(?:;[ \t]*)?,/y;

function reference(text: string): MediaType | MediaTypeFault {
  ESSENCE.lastIndex = 0;
  const e = ESSENCE.exec(text);
  if (e === null) return { fault: 'malformed' };
  const params: Record<string, string> = {};
  let i = ESSENCE.lastIndex;
  for (;;) {
    END.lastIndex = i;
    if (END.test(text)) break;
    LIST.lastIndex = i;
    if (LIST.test(text)) return { fault: 'list' };
    STEP.lastIndex = i;
    const s = STEP.exec(text);
    if (s === null || STEP.lastIndex === i) return { fault: 'malformed' };
    // An empty parameter followed by a name-less rest: only a `;`, OWS or the end may follow.
    const next = text.charAt(STEP.lastIndex);
    if (s[1] === undefined && next !== '' && next !== ';' && next !== ' ' && next !== '\t' && next !== ',') return { fault: 'malformed' };
    i = STEP.lastIndex;
    if (s[1] === undefined) continue;
    const name = s[1].toLowerCase();
    const raw = s[2]!;
    const value = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\([\s\S])/g, '$1') : raw;
    if (Object.hasOwn(params, name)) return { fault: 'repeated', name };
    params[name] = value;
  }
  const type = e[1]!.toLowerCase();
  const subtype = e[2]!.toLowerCase();
  return { type, subtype, essence: `${type}/${subtype}`, params };
}

const piece = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'B', 'json', 'x+json', '+json', 'cloudevents+json', '*', '-', '.', '9', 'charset', 'CharSet', 'utf-8') },
  { weight: 4, arbitrary: fc.constantFrom('/', ';', '=', '"', '\\', ',', ' ', '\t') },
  { weight: 2, arbitrary: fc.constantFrom('\u0000', '\r', '\n', '\r\n', '\u0001', '\u007f', '\u0080', '\u00a0', '\u00e9', '\u00ff', '\u0100', '\u20ac', '\ud83d\ude00', '\ud800', '\u000b', '\u000c') },
);
const soup = fc.array(piece, { maxLength: 16 }).map((ps) => ps.join(''));
const word = fc.constantFrom('application', 'TEXT', '*', '', 'a b', 'x\u00e9');
const sub = fc.constantFrom('json', '+json', 'x+json', 'JSON', '*', '', 'cloudevents+json', 'ld+json ', 'a\u0000');
const value = fc.oneof(fc.constantFrom('1', 'utf-8', '', '"a;b"', '"\u00e9"', '"\u20ac"', '"\\', '"unterminated', '"a\\"b"', '"\u0000"', '"\r\n"', '"\t"', '"\\\u00ff"'), soup);
const structured = fc
  .tuple(word, fc.constantFrom('/', ' /', '/ ', ''), sub, fc.array(fc.tuple(fc.constantFrom('', ' ', '\t'), fc.constantFrom(';', ',', ''), fc.constantFrom('', ' '), fc.constantFrom('charset', 'P', 'p', 'x-y', ''), fc.constantFrom('=', ' =', '= ', ''), value), { maxLength: 5 }), fc.constantFrom('', ' ', '\t', ';', '\\'))
  .map(([t, slash, s, ps, tail]) => `${t}${slash}${s}${ps.map((p) => p.join('')).join('')}${tail}`);

describe('readMediaType against the RFC 9110 ABNF as regular expressions', () => {
  it('gives the same answer on generated texts', () => {
    fc.assert(
      fc.property(fc.oneof(structured, soup, fc.string({ unit: 'binary', maxLength: 30 })), (text) => {
        expect(readMediaType(text), JSON.stringify(text)).toEqual(reference(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('takes +json only after a subtype name', () => {
    const json = (t: string): boolean => {
      const r = readMediaType(t);
      return !('fault' in r) && isJsonMediaType(r);
    };
    expect(json('application/+json')).toBe(false);
    expect(json('application/x+json')).toBe(true);
    expect(json('APPLICATION/X+JSON')).toBe(true);
    expect(json('*/*')).toBe(false);
    expect(json('text/json')).toBe(true);
  });

  it('reads 100 KB texts of each shape to an answer', () => {
    const n = 100_000;
    const cases = [
      `a/b; p="${'a'.repeat(n)}"`,
      `a/b; p="${'\\a'.repeat(n / 2)}"`,
      `a/b${'; '.repeat(n / 2)}`,
      `a/b${';a=b'.repeat(n / 4)}`,
      `a/b${Array.from({ length: n / 8 }, (_, i) => `;p${i}=1`).join('')}`,
      `a/b; p="${'a'.repeat(n)}`,
      `${'a'.repeat(n)}/${'b'.repeat(n)}`,
      `a/b${' '.repeat(n)}x`,
    ];
    for (const t of cases) expect(readMediaType(t)).toEqual(reference(t));
  });

  it('cannot be changed through an answer it cached', () => {
    const t = 'application/json; charset=utf-8';
    const first = readMediaType(t) as MediaType;
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first.params)).toBe(true);
    expect(() => {
      (first.params as Record<string, string>).charset = 'latin1';
    }).toThrow(TypeError);
    const fault = readMediaType('a/b; x=1; x=2');
    expect(Object.isFrozen(fault)).toBe(true);
    expect(readMediaType(t)).toEqual({ type: 'application', subtype: 'json', essence: 'application/json', params: { charset: 'utf-8' } });
    // Filling the cache past its bound clears it: the answers stay the same.
    for (let i = 0; i < 600; i++) readMediaType(`a/b; i=${i}`);
    expect(readMediaType(t)).toEqual(first);
  });
});
