/**
 * An optional field (`["null", T]`) of an event's data is the plain value or null/absent, and the
 * Avro JSON wrappers are accepted alike: `{"string": "x"}` and `{"null": null}` (this one was
 * refused as "expected a string"). In-memory adapters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { findEvent, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw.close();
});

describe('optional data fields over HTTP', () => {
  it('{"null": null} is stored as null, {"string": "x"} as "x", like the bare values', async () => {
    for (const [feed, stored] of [[{ null: null }, null], [null, null], [{ string: 'refinitiv' }, 'refinitiv'], ['refinitiv', 'refinitiv']] as const) {
      const ev = structuredPriceEvent({}, { ...priceLoaded(), feed });
      const a = await post(gw.url, ev);
      expect(a.status, JSON.stringify(a.body)).toBe(202);
      const found = await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, ev.id as string);
      expect(found!.env.data).toEqual({ kind: 'json', value: { ...priceLoaded(), feed: stored } });
    }
  });

  it('{"null": <not null>} is 400 naming the field', async () => {
    const a = await post(gw.url, structuredPriceEvent({}, { ...priceLoaded(), feed: { null: 'x' } }));
    expect(a.status).toBe(400);
    expect(a.body).toMatchObject({ code: 'CEG_INVALID_DATA', violations: [{ field: '/data/feed/null' }] });
  });
});
