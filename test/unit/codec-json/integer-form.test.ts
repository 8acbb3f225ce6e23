/**
 * The form of attributes written as JSON numbers (CloudEvents JSON format 1.0.2 §2.2): the
 * scanner that finds their source text, and parseStructuredEvent (the Kafka structured mode and
 * connectors) refusing a fraction or exponent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { integerFormProblem, parseStructuredEvent } from '../../../src/codec/json/index.js';
import { eventNumberTexts } from '../../../src/codec/json/json-text.js';
import { GatewayError } from '../../../src/core/errors.js';

const base = '"specversion":"1.0","id":"n1","source":"urn:x","type":"t"';

describe('eventNumberTexts', () => {
  it('collects the members of the event objects only, by index, with escaped names decoded', () => {
    const text = `[{"a":1.0,"data":{"x":2.0,"a":3e1},"s":"1.0"}, {"b" : -0 ,"c":[1.5],"d\\u0065":1E2}]`;
    expect(eventNumberTexts(text, true)).toEqual(new Map([[0, new Map([['a', '1.0']])], [1, new Map([['b', '-0'], ['de', '1E2']])]]));
    expect(eventNumberTexts('{"a":{"b":1.0},"c":true,"d":null,"e":1}', false)).toEqual(new Map([[0, new Map([['e', '1']])]]));
  });
});

describe('integerFormProblem', () => {
  it('accepts exactly -?(0|[1-9][0-9]*) (RFC 8259 [ minus ] int), -0 included', () => {
    fc.assert(fc.property(fc.integer(), (n) => integerFormProblem(String(n)) === undefined));
    expect(integerFormProblem('-0')).toBeUndefined();
    for (const t of ['1.0', '1E2', '2.50e1', '-0.0', '0e0', '1e+0']) expect(integerFormProblem(t), t).toMatch(/integer part/);
  });
});

describe('parseStructuredEvent', () => {
  it('refuses an attribute written as 1.0 or 1E2 naming it (CEG_INVALID_ATTRIBUTE), accepts 1 and -0', () => {
    for (const [name, written] of [['aint', '1.0'], ['bint', '1E2'], ['schemaversion', '2.0']]) {
      let err: unknown;
      try {
        parseStructuredEvent(`{${base},"${name}":${written}}`);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).code).toBe('CEG_INVALID_ATTRIBUTE');
      expect((err as GatewayError).details.attribute).toBe(name);
    }
    expect(parseStructuredEvent(Buffer.from(`{${base},"aint":1,"cint":-0}`)).attributes).toMatchObject({ aint: 1, cint: -0 });
  });
});
