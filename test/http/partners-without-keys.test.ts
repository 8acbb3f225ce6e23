/**
 * A partner whose keys were emptied in PARTNERS_FILE (a revocation): the gateway starts, logs one
 * warning naming the partner and its `partners[i].keys` at load, and answers the partner's former
 * key 401 problem+json while the other partners work. docs/security.md "The partners file".
 * In-memory gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPartnersGateway } from './partners-gateway.js';
import type { PartnersGateway } from './partners-gateway.js';

let g: PartnersGateway;
beforeAll(async () => {
  // globex (partners[1]) revoked: its keys emptied, the rest of its entry kept.
  g = await startPartnersGateway(`pfnokeys-${Date.now()}`, 'info', (text) => {
    const edited = text.replace('keys: [{ sha256Env: TEST_GLOBEX_KEY_SHA256 }]', 'keys: []');
    if (edited === text) throw new Error('globex\'s keys line not found in the partners file');
    return edited;
  });
});
afterAll(async () => {
  await g?.close();
});

const lines = (): Record<string, unknown>[] => g.logs.join('').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('a partner without keys in PARTNERS_FILE', () => {
  it('is loaded; one warning at start-up names it and partners[1].keys', () => {
    const warned = lines().filter((l) => l.partner === 'globex' && l.field === 'partners[1].keys');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, file: g.setup.file });
    expect(String(warned[0]!.msg)).toContain('401 CEG_UNAUTHENTICATED');
    expect(g.logs.join('')).not.toContain(g.setup.keys.globex);
  });

  it('its former key gets 401 problem+json; the other partners work', async () => {
    const as = (key: string): Promise<Response> => fetch(`${g.url}/subscriptions`, { headers: { authorization: `Bearer ${key}` } });
    const refused = await as(g.setup.keys.globex);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="ce-gateway", error="invalid_token"');
    expect(await refused.json()).toMatchObject({ status: 401, code: 'CEG_UNAUTHENTICATED' });
    expect((await as(g.setup.keys.acme)).status).toBe(200);
    expect((await as(g.setup.keys.ops)).status).toBe(200);
  });
});
