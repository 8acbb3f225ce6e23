/**
 * The request's W3C `tracestate` header travels with its `traceparent` header (W3C Trace Context
 * §3.3): an event that adopts the request's traceparent adopts the tracestate too. It was dropped
 * in binary mode (the event kept `traceparent` only). Never paired with an event's own
 * traceparent; an invalid tracestate is discarded and the event accepted. The HTTP `traceparent`
 * header is transport (an invalid one is ignored, 202), unlike a `traceparent` attribute, which is
 * the partner's event (an invalid one is 400). In-memory gateway.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Attributes } from '../../src/envelope/index.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, findEvent, post } from './helpers.js';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const OWN_TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const TRACESTATE = 'congo=t61rcWkgMzE';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

function binaryHeaders(id: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': 'urn:partner:trace', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z', ...extra };
}

/** POSTs one binary-mode event with `headers` added, expects 202, returns the stored attributes. */
async function storedBinary(headers: Record<string, string>): Promise<Attributes> {
  const id = randomUUID();
  const r = await post(gw.url, priceLoaded(), 'application/json', binaryHeaders(id, headers));
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return (await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, id))!.env.attributes;
}

describe('POST /events: the request tracestate goes with the request traceparent', () => {
  it('binary mode, the reported case: traceparent and tracestate headers, no ce-traceparent → both stored', async () => {
    const a = await storedBinary({ traceparent: TRACEPARENT, tracestate: TRACESTATE });
    expect(a.traceparent).toBe(TRACEPARENT);
    expect(a.tracestate).toBe(TRACESTATE);
  });

  it('structured and batch mode: events without a traceparent take both headers', async () => {
    const one = structuredPriceEvent();
    expect((await post(gw.url, one, undefined, { traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7, congo=t61rcWkgMzE' })).status).toBe(202);
    expect((await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, one.id as string))!.env.attributes).toMatchObject({ traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE' });

    const plain = structuredPriceEvent();
    const own = structuredPriceEvent({ traceparent: OWN_TRACEPARENT });
    expect((await post(gw.url, [plain, own], BATCH, { traceparent: TRACEPARENT, tracestate: TRACESTATE })).status).toBe(202);
    expect((await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, plain.id as string))!.env.attributes).toMatchObject({ traceparent: TRACEPARENT, tracestate: TRACESTATE });
    const kept = (await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, own.id as string))!.env.attributes;
    expect(kept.traceparent).toBe(OWN_TRACEPARENT);
    expect(kept.tracestate).toBeUndefined();
  });

  it('an event with its own ce-traceparent never takes the request tracestate', async () => {
    const a = await storedBinary({ 'ce-traceparent': OWN_TRACEPARENT, traceparent: TRACEPARENT, tracestate: TRACESTATE });
    expect(a.traceparent).toBe(OWN_TRACEPARENT);
    expect(a.tracestate).toBeUndefined();
  });

  it("an event's own ce-tracestate is kept as sent", async () => {
    const a = await storedBinary({ 'ce-tracestate': 'mine=1', traceparent: TRACEPARENT, tracestate: TRACESTATE });
    expect(a).toMatchObject({ traceparent: TRACEPARENT, tracestate: 'mine=1' });
  });

  it('an invalid tracestate is discarded, the event accepted with the traceparent', async () => {
    for (const tracestate of ['Congo=x', 'congo', 'a=1,a=2', Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',')]) {
      const a = await storedBinary({ traceparent: TRACEPARENT, tracestate });
      expect(a.traceparent, tracestate).toBe(TRACEPARENT);
      expect(a.tracestate, tracestate).toBeUndefined();
    }
  });

  it('no valid traceparent header: the tracestate header is not read, and a malformed traceparent header is ignored (202)', async () => {
    for (const traceparent of [undefined, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7', 'garbage']) {
      const a = await storedBinary({ ...(traceparent === undefined ? {} : { traceparent }), tracestate: TRACESTATE });
      expect(a.traceparent).toBeUndefined();
      expect(a.tracestate).toBeUndefined();
    }
  });

  it('a malformed traceparent attribute (the event itself) is refused with 400, in both modes', async () => {
    const bad = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7';
    const structured = await post(gw.url, structuredPriceEvent({ traceparent: bad }));
    const binary = await post(gw.url, priceLoaded(), 'application/json', binaryHeaders(randomUUID(), { 'ce-traceparent': bad }));
    for (const r of [structured, binary]) {
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('CEG_INVALID_ATTRIBUTE');
      expect(r.body.violations).toEqual([expect.objectContaining({ attribute: 'traceparent' })]);
    }
  });
});
