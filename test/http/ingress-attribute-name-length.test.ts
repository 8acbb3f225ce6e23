/**
 * Extension attribute names longer than 20 characters are accepted at ingress and kept as sent
 * (README "HTTP API", "Attribute names"). CloudEvents 1.0.2 §"Attribute Naming Convention": names
 * MUST be lowercase a–z and 0–9, and SHOULD NOT exceed 20 characters — a SHOULD, and the CloudEvents
 * JS SDK (node_modules/cloudevents) reads such names even in strict mode, so refusing them would
 * refuse events mainstream SDKs produce and read. The MUST still holds at any length. In-memory gateway.
 */
import { CloudEvent } from 'cloudevents';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownAttributes } from '../../src/envelope/index.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { STRUCTURED, post, readTopic } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

/** A legal extension name (lowercase a–z, 0–9) longer than the SHOULD's 20 characters. */
const longName = fc.stringMatching(/^[a-z][a-z0-9]{20,80}$/).filter((n) => !knownAttributes.has(n));
/** A value: printable ASCII, no leading/trailing space (a header value's whitespace is not part of it). */
const value = fc.stringMatching(/^[A-Za-z0-9._:/-]{1,40}$/);

describe('extension attribute names longer than 20 characters (CloudEvents 1.0.2 SHOULD NOT)', () => {
  it('are accepted in structured and binary mode, and stored as sent', async () => {
    const sent = new Map<string, { readonly name: string; readonly value: string }>();
    await fc.assert(
      fc.asyncProperty(longName, value, async (name, v) => {
        const structured = structuredPriceEvent({ [name]: v });
        const s = await post(gw.url, structured, STRUCTURED);
        expect(s.status, JSON.stringify(s.body)).toBe(202);
        sent.set(structured.id as string, { name, value: v });
        const id = `long-name-${sent.size}-${name.length}`;
        const b = await post(gw.url, JSON.stringify(priceLoaded()), 'application/json', { 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': 'urn:partner:test', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z', [`ce-${name}`]: v });
        expect(b.status, JSON.stringify(b.body)).toBe(202);
        sent.set(id, { name, value: v });
      }),
      { numRuns: 40 },
    );
    const codec = gw.gateway.codec();
    const stored = new Map<string, Record<string, unknown>>();
    for (const record of await readTopic(gw.gateway.transport, PRICE_TOPIC)) {
      const env = await codec.fromRecord(record);
      stored.set(env.attributes.id, env.attributes);
    }
    for (const [id, { name, value: v }] of sent) expect(stored.get(id)?.[name], `${id} ${name}`).toBe(v);
  });

  it('still must be lowercase a–z and 0–9 at any length: another name is refused naming it, nothing stored', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const badName = fc.tuple(fc.stringMatching(/^[a-z0-9]{10,40}$/), fc.constantFrom('A', '-', '_', '.', 'É'), fc.stringMatching(/^[a-z0-9]{10,40}$/)).map(([a, c, z]) => `${a}${c}${z}`);
    await fc.assert(
      fc.asyncProperty(badName, async (name) => {
        const r = await post(gw.url, structuredPriceEvent({ [name]: 'x' }), STRUCTURED);
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(r.body.code).toBe('CEG_INVALID_ATTRIBUTE');
        expect(r.body.violations).toEqual([expect.objectContaining({ attribute: name })]);
      }),
      { numRuns: 30 },
    );
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('the CloudEvents JS SDK reads such a name in strict mode, and refuses an uppercase one (why the gateway agrees)', () => {
    fc.assert(
      fc.property(longName, (name) => {
        const ev = new CloudEvent({ specversion: '1.0', id: 'x', source: 'urn:x', type: 't', [name]: 'v' }, true);
        expect((ev as unknown as Record<string, unknown>)[name]).toBe('v');
      }),
      { numRuns: 30 },
    );
    expect(() => new CloudEvent({ specversion: '1.0', id: 'x', source: 'urn:x', type: 't', ['abcdefghijklmnopqrstuVwxyz']: 'v' }, true)).toThrow(/invalid extension name/);
  });
});
