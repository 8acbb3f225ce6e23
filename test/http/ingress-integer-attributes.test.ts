/**
 * An attribute written as a JSON number is an Integer, written with only an integer part and an
 * optional minus sign (CloudEvents JSON format 1.0.2 §2.2): `1.0`, `1E2`, `2.50e1`, `-0.0` are
 * refused naming the attribute (400 CEG_INVALID_ATTRIBUTE), in structured and batch mode, for
 * extensions and `schemaversion` alike. JSON.parse reads them as 1, 100, 25, 0, so before they
 * were accepted and delivered as "1", "100", "25", "0". `-0` is the Integer 0 written as the
 * format allows (the integer part `0` with a minus sign): accepted, delivered "0". Nothing refused
 * is stored. In-memory gateway.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_TOPIC, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, STRUCTURED, findEvent, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

/** `n` (an integer) written with a fraction or an exponent: JSON.parse gives back `n` exactly. */
function nonIntegerForms(n: number): string[] {
  const s = String(Math.abs(n));
  const sign = n < 0 ? '-' : '';
  const forms = [`${n}.0`, `${n}.000`, `${n}e0`, `${n}E+0`, `${n}e-0`, `${n}.0E0`];
  if (n !== 0) forms.push(`${sign}${s}0e-1`);
  if (s.length > 1) forms.push(`${sign}${s[0]}.${s.slice(1)}e${s.length - 1}`, `${sign}${s[0]}.${s.slice(1)}0E+${s.length - 1}`);
  if (n === 0) forms.push('-0.0', '-0e0', '0E5');
  return forms;
}

/** `event` as JSON text with `name` set to the number text `written` (JSON.stringify cannot write `1.0`). */
function withNumber(event: Record<string, unknown>, name: string, written: string): string {
  return JSON.stringify({ ...event, [name]: '@@n@@' }).replace('"@@n@@"', written);
}

const extensionName = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/).filter((s) => !['data', 'id', 'type', 'source', 'specversion', 'time', 'subject', 'dataschema', 'datacontenttype', 'partitionkey', 'traceparent', 'tracestate', 'eventclass', 'eventname', 'runid', 'correlationid', 'causationid', 'dataref'].includes(s));
const attrAndForm = fc.oneof(
  fc.record({ name: extensionName, n: fc.integer({ min: -2147483648, max: 2147483647 }) }),
  fc.record({ name: fc.constant('schemaversion'), n: fc.integer({ min: 1, max: 1000 }) }),
).chain(({ name, n }) => fc.record({ name: fc.constant(name), written: fc.constantFrom(...nonIntegerForms(n)) }));

describe('an attribute written as a JSON number with a fraction or exponent (JSON format 1.0.2 §2.2)', () => {
  it('is refused naming it, in structured mode and at any index of a batch; nothing stored', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    await fc.assert(
      fc.asyncProperty(attrAndForm, fc.nat({ max: 2 }), async ({ name, written }, at) => {
        const bad = withNumber(structuredPriceEvent(), name, written);
        const structured = await post(gw.url, bad, STRUCTURED);
        const items = [JSON.stringify(structuredPriceEvent()), JSON.stringify(structuredPriceEvent())];
        items.splice(at, 0, bad);
        const batch = await post(gw.url, `[${items.join(',')}]`, BATCH);
        for (const [r, index] of [[structured, undefined], [batch, at]] as const) {
          expect(r.status, JSON.stringify(r.body)).toBe(400);
          expect(r.body.code).toBe('CEG_INVALID_ATTRIBUTE');
          const v = r.body.violations as { attribute?: string; index?: number; reason: string }[];
          expect(v).toHaveLength(1);
          expect(v[0]).toMatchObject({ attribute: name, reason: expect.stringContaining('integer part') as string, ...(index === undefined ? {} : { index }) });
        }
      }),
      { numRuns: 60 },
    );
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('the reported examples: aint 1.0, bint 1E2, dint 2.50e1, an escaped name; a number inside data is not an attribute', async () => {
    for (const [name, written] of [['aint', '1.0'], ['bint', '1E2'], ['dint', '2.50e1'], ['eint', '-0.0']] as const) {
      const r = await post(gw.url, withNumber(structuredPriceEvent(), name, written), STRUCTURED);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.violations).toEqual([expect.objectContaining({ attribute: name })]);
    }
    const escaped = await post(gw.url, withNumber(structuredPriceEvent(), 'fint', '1.0').replace('"fint"', '"f\\u0069nt"'), STRUCTURED);
    expect(escaped.body.violations).toEqual([expect.objectContaining({ attribute: 'fint' })]);
    // barsLoaded 120.0 in data is data (the schema's business), not an attribute written as a number.
    const inData = await post(gw.url, JSON.stringify(structuredPriceEvent()).replace('"barsLoaded":120', '"barsLoaded":120.0'), STRUCTURED);
    expect(inData.status, JSON.stringify(inData.body)).toBe(202);
  });

  it('integers written as integers are accepted and delivered in canonical form; -0 is the Integer 0', async () => {
    for (const [written, delivered] of [['0', '0'], ['-0', '0'], ['7', '7'], ['-2147483648', '-2147483648'], ['2147483647', '2147483647']] as const) {
      const ev = structuredPriceEvent();
      const r = await post(gw.url, withNumber(ev, 'cint', written), STRUCTURED);
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      const found = await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, ev.id as string);
      expect(found, written).toBeDefined();
      expect(String(found?.env.attributes.cint), written).toBe(delivered);
    }
  });
});
