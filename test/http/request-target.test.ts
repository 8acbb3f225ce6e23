/**
 * A request-target never carries a fragment (RFC 9112 §3.2: origin-form is absolute-path
 * ["?" query], absolute-form an absolute-URI, which has none; RFC 9110 §7.1: a client strips it):
 * `POST /events#x` is 400 CEG_MALFORMED_REQUEST naming target, not a 404 for a route it is not.
 * In-memory adapters, raw requests on loopback.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/raw-http.js';
import { PRICE_TOPIC, structuredPriceEvent } from '../fixtures/events.js';
import { STRUCTURED } from './helpers.js';

let gw: TestGateway;
let port: number;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
  port = Number(new URL(gw.url).port);
});
afterAll(async () => {
  await gw.close();
});

async function postTo(target: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = JSON.stringify(structuredPriceEvent());
  const [r] = await rawRequest(gw.url, `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${STRUCTURED}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  return { status: r!.status, body: JSON.parse(r!.body) as Record<string, unknown> };
}

describe('a fragment in the request target', () => {
  it('is 400 CEG_MALFORMED_REQUEST naming target, in origin-form and absolute-form, and nothing is written', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    for (const target of ['/events#x', '/events#', '/events?a=1#x', `http://127.0.0.1:${port}/events#x`, '/healthz#top']) {
      const r = await postTo(target);
      expect(r.status, target).toBe(400);
      expect(r.body, target).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', violations: [{ field: 'target' }] });
    }
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('property: any fragment after /events is refused the same way', async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[A-Za-z0-9\-._~!$&'()*+,;=:@/?]{0,40}$/), async (fragment) => {
        const r = await postTo(`/events#${fragment}`);
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', violations: [{ field: 'target' }] });
      }),
      { numRuns: 30 },
    );
  });

  it('the same target without the fragment is served', async () => {
    expect((await postTo('/events')).status).toBe(202);
    expect((await postTo('/events?a=1')).status).toBe(202);
  });
});
