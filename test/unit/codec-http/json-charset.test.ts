/**
 * JSON is read as UTF-8 in every content mode, so a JSON media type declaring another charset is
 * refused rather than misread: binary mode read `application/json; charset=iso-8859-1` with bytes
 * C3 A9 as "é" (the sender meant "Ã©") and accepted it, while structured and batch mode answered
 * 415. A charset that is a superset of US-ASCII is read when the body is all ASCII (it reads the
 * same). Generated: JSON media types (any type, `json` or `+json` subtype), charset names in any
 * case, quoted or not, with spaces around the parameter.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHttpRequest } from '../../../src/codec/http/index.js';
import { caught, ceHeaders } from './helpers.js';

const jsonType = fc.oneof(
  fc.constantFrom('application/json', 'text/json', 'application/cloudevents+json', 'application/vnd.caishen.bar+json', 'Application/JSON', 'TEXT/JSON'),
  fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.stringMatching(/^[a-z0-9.-]{0,8}$/)).map(([t, s]) => `${t}/${s === '' ? 'json' : `${s}+json`}`),
);
/** Charsets other than UTF-8, as partners write them. */
const foreign = fc.oneof(
  fc.constantFrom('iso-8859-1', 'ISO-8859-1', 'latin1', 'windows-1252', 'utf-16', 'UTF-16LE', 'utf-7', 'utf-8 ', 'utf_8', 'x'),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/).filter((c) => !['utf-8', 'utf8', 'us-ascii', 'ascii'].includes(c.toLowerCase())),
);
const utf8 = fc.constantFrom('utf-8', 'UTF-8', 'Utf-8', 'utf8', 'UTF8');
const spelled = (charset: string, quoted: boolean, spaces: boolean): string => `${spaces ? ' ; ' : ';'}charset=${quoted ? `"${charset.replaceAll('"', '\\"')}"` : charset}`;

/** Bytes C3 A9: "é" in UTF-8, "Ã©" in ISO-8859-1. */
const E_ACUTE_UTF8 = Buffer.from([0x22, 0xc3, 0xa9, 0x22]);

describe('binary mode: the charset of a JSON Content-Type', () => {
  it('refuses any charset other than UTF-8 with 415, as structured and batch mode do (generated)', () => {
    fc.assert(
      fc.property(jsonType, foreign, fc.boolean(), fc.boolean(), (type, charset, quoted, spaces) => {
        fc.pre(!(quoted === false && /\s/.test(charset)));
        const contentType = `${type}${spelled(charset, quoted, spaces)}`;
        const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': contentType }, E_ACUTE_UTF8));
        expect(err.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
        expect(err.message).toContain('is UTF-8');
        expect(err.details).toMatchObject({ header: 'content-type' });
      }),
      { numRuns: 500 },
    );
  });

  it('reads UTF-8 in any spelling, quoted or not, and no charset at all, as UTF-8 (generated)', () => {
    fc.assert(
      fc.property(jsonType.filter((t) => !t.toLowerCase().startsWith('application/cloudevents')), fc.option(utf8, { nil: undefined }), fc.boolean(), fc.boolean(), (type, charset, quoted, spaces) => {
        const contentType = charset === undefined ? type : `${type}${spelled(charset, quoted, spaces)}`;
        const r = parseHttpRequest({ ...ceHeaders, 'content-type': contentType }, E_ACUTE_UTF8);
        expect(r.events[0]!.data).toEqual({ kind: 'json', value: 'é' });
      }),
      { numRuns: 300 },
    );
  });

  it('reads us-ascii (a subset of UTF-8, some client libraries\' default) as it is', () => {
    for (const charset of ['us-ascii', 'US-ASCII', 'ascii']) {
      const r = parseHttpRequest({ ...ceHeaders, 'content-type': `application/json; charset=${charset}` }, Buffer.from('"plain"'));
      expect(r.events[0]!.data, charset).toEqual({ kind: 'json', value: 'plain' });
    }
  });

  it('reads a charset that is a superset of US-ASCII (ISO-8859-x, windows-125x, latin1) when the body is all ASCII; refuses it for any other byte, and refuses other charsets whatever the body (generated)', () => {
    const superset = fc.oneof(
      fc.integer({ min: 1, max: 16 }).map((n) => `iso-8859-${n}`),
      fc.integer({ min: 0, max: 8 }).map((n) => `windows-125${n}`),
      fc.constantFrom('latin1', 'ISO-8859-1', 'ISO_8859-15', 'Latin-2', 'cp1252', 'CP819'),
    );
    const asciiText = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });
    fc.assert(
      fc.property(jsonType.filter((t) => !t.toLowerCase().startsWith('application/cloudevents')), superset, asciiText, fc.integer({ min: 0x80, max: 0xff }), (type, charset, text, high) => {
        const body = Buffer.from(JSON.stringify(text));
        const read = parseHttpRequest({ ...ceHeaders, 'content-type': `${type}; charset=${charset}` }, body);
        expect(read.events[0]!.data).toEqual({ kind: 'json', value: text });
        const withHigh = Buffer.concat([body.subarray(0, 1), Buffer.from([high]), body.subarray(1)]);
        const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': `${type}; charset=${charset}` }, withHigh));
        expect(err.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
        expect(err.message).toContain('non-ASCII');
      }),
      { numRuns: 300 },
    );
    for (const charset of ['utf-16', 'UTF-16LE', 'shift_jis', 'utf-7', 'ebcdic-cp-us']) {
      const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': `application/json; charset=${charset}` }, Buffer.from('"plain"')));
      expect(err.code, charset).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    }
  });

  it('the reported case: iso-8859-1 with C3 A9 is 415, not "é"', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json; charset=iso-8859-1' }, E_ACUTE_UTF8));
    expect(err.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    expect(err.message).toBe('charset iso-8859-1 is not supported for content with non-ASCII bytes: JSON data is UTF-8 (RFC 8259 §8.1); send it as UTF-8 with charset=utf-8 or no charset');
  });

  it('keeps non-JSON data (text/* too) as bytes whatever its charset: the ingress refuses non-JSON data anyway', () => {
    for (const ct of ['text/plain; charset=iso-8859-1', 'text/csv; charset=utf-16', 'application/octet-stream']) {
      const r = parseHttpRequest({ ...ceHeaders, 'content-type': ct }, E_ACUTE_UTF8);
      expect(r.events[0]!.data, ct).toMatchObject({ kind: 'binary' });
    }
  });
});
