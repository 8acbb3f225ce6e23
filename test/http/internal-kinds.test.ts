/**
 * Internal kinds (catalog `internal: true`) over `POST /events`: to a partner that neither is an
 * admin nor names the kind in its grants, the answer is the one for a `type` the catalog does not
 * have — never a 403 or an unknown-type message that would confirm the kind exists (issue 11;
 * docs/security.md "Permissions").
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { INTERNAL_KIND, partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';
import { STRUCTURED } from './helpers.js';

describe('internal kinds on POST /events', () => {
  let setup: PartnersSetup;
  let gw: Gateway;
  let url: string;

  beforeAll(async () => {
    setup = partnersSetup(`intk${Date.now().toString(36)}`);
    process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...setup.env });
    gw = createGateway(config, createLogger({ level: 'silent', destination: new PassThrough() }));
    const addr = await gw.listen();
    await gw.ready;
    url = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(async () => {
    await gw?.close();
    setup?.cleanup();
  });

  async function publish(key: string, type: string): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
    const res = await fetch(`${url}/events`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': STRUCTURED }, body: JSON.stringify(structuredPriceEvent({ source: 'urn:partner:acme', type })) });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as Record<string, unknown> };
  }

  it('a partner that does not know it gets, by eventId and by business name, the answer of a type the catalog lacks; no answer lists it', async () => {
    const missing = '00000000-0000-4000-8000-00000000dead';
    const internalName = gw.catalog.byEventId(INTERNAL_KIND)!.name;
    const answer = async (type: string): Promise<string> => {
      const r = await publish(setup.keys.acme, type);
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe('CEG_UNKNOWN_TYPE');
      if (type !== INTERNAL_KIND) expect(r.text).not.toContain(INTERNAL_KIND);
      return r.text.split(type).join('<type>');
    };
    const unknown = await answer(missing);
    expect(unknown).not.toContain(internalName);
    expect(await answer(INTERNAL_KIND)).toBe(unknown);
    expect(await answer(internalName)).toBe(unknown);
  });

  it('/metrics never names an internal kind posted by its eventId or name: those refusals count as kind "unknown"', async () => {
    const internalName = gw.catalog.byEventId(INTERNAL_KIND)!.name;
    expect((await publish(setup.keys.acme, INTERNAL_KIND)).status).toBe(400);
    expect((await publish(setup.keys.ops, INTERNAL_KIND)).status).toBe(403);
    const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${setup.keys.ops}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    const refused = text.split('\n').filter((l) => l.startsWith('ce_gateway_ingress_events_total{') && l.includes('outcome="refused"'));
    expect(refused.some((l) => l.includes('kind="unknown"'))).toBe(true);
    expect(text).not.toContain(internalName);
  });

  it('an admin still gets 403 naming permission internal', async () => {
    const r = await publish(setup.keys.ops, INTERNAL_KIND);
    expect(r.status, r.text).toBe(403);
    expect(r.body.permission).toBe('internal');
  });
});
