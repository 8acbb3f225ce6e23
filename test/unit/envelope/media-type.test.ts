/**
 * The one media-type parser (src/envelope/media-type.ts): RFC 9110 §8.3.1 grammar, tokens per
 * §5.6.2, quoted-strings per §5.6.4, empty parameters allowed, a repeat (RFC 6838 §4.3) or a list
 * refused. Break report 2026-12-06.
 */
import { describe, expect, it } from 'vitest';
import { ViolationCollector, checkAttribute } from '../../../src/envelope/index.js';
import { readMediaType } from '../../../src/envelope/media-type.js';

describe('readMediaType', () => {
  it('reads quoted values whole and unquoted, names lowercased', () => {
    expect(readMediaType('Application/JSON; Charset="UTF-8"; p="a;b,c\\"d\\\\"')).toEqual({ type: 'application', subtype: 'json', essence: 'application/json', params: { charset: 'UTF-8', p: 'a;b,c"d\\' } });
  });

  it('allows empty parameters and trailing OWS alike', () => {
    for (const t of ['application/json;', 'application/json;;charset=utf-8', 'application/json ; ; charset=utf-8 ;  ']) expect(readMediaType(t), t).toMatchObject({ essence: 'application/json' });
  });

  it('refuses a repeated parameter, a list, and what is not the grammar', () => {
    expect(readMediaType('application/json; charset=a; CHARSET="a"')).toEqual({ fault: 'repeated', name: 'charset' });
    expect(readMediaType('application/cloudevents+json; q=1, text/plain')).toEqual({ fault: 'list' });
    expect(readMediaType('application/json, text/plain')).toEqual({ fault: 'list' });
    for (const t of ['', 'application', '/json', 'application/', ' application/json', 'application/json; charset', 'application/json; charset =utf-8', 'application/json; charset="utf-8', 'a/b; x=a b', 'a/b; x="\u0001"', 'a/b; x="\\']) expect(readMediaType(t), t).toEqual({ fault: 'malformed' });
  });

  it('is the datacontenttype rule', () => {
    const count = (v: string): number => {
      const out = new ViolationCollector();
      checkAttribute('datacontenttype', v, out);
      return out.size;
    };
    expect(count('application/json; p="a;b"')).toBe(0);
    expect(count('application/json;;charset=utf-8')).toBe(0);
    expect(count('application/json; q=1, text/plain')).toBe(1);
  });
});
