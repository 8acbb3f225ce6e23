/**
 * Failed authentications are counted per client address (issue 11); behind trusted proxies the
 * address is the right-most untrusted hop of X-Forwarded-For, never a value the client chose.
 * In-memory adapters; the client is on loopback, standing in for the proxy when it is trusted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';

describe('client address of failed authentications', () => {
  let gw: Gateway | undefined;
  let setup: PartnersSetup | undefined;
  afterEach(async () => {
    await gw?.close();
    setup?.cleanup();
    gw = undefined;
    setup = undefined;
  });

  async function start(extra: Record<string, string>): Promise<{ get: (key: string, xff?: string) => Promise<number>; setup: PartnersSetup }> {
    const s = partnersSetup(`authproxy${Date.now().toString(36)}`);
    setup = s;
    process.env.TEST_GLOBEX_KEY_SHA256 = s.env.TEST_GLOBEX_KEY_SHA256;
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', AUTH_FAILURES_PER_MINUTE: '3', SUBSCRIPTIONS_TOPIC: 'authproxy.subscriptions', ...s.env, ...extra }), createLogger({ level: 'silent' }));
    const { port } = await gw.listen();
    await gw.ready;
    const get = async (key: string, xff?: string): Promise<number> => {
      const res = await fetch(`http://127.0.0.1:${port}/subscriptions`, { headers: { authorization: `Bearer ${key}`, ...(xff === undefined ? {} : { 'x-forwarded-for': xff }) } });
      await res.arrayBuffer();
      return res.status;
    };
    return { get, setup: s };
  }

  async function exhaust(get: (key: string, xff?: string) => Promise<number>, xff: string): Promise<void> {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push(await get(`wrong-key-${i}`, xff));
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(statuses.slice(3)).toEqual([429, 429]);
  }

  it('TRUSTED_PROXIES=loopback: each forwarded client has its own allowance; a client-sent X-Forwarded-For does not move it to another', async () => {
    const { get, setup: s } = await start({ TRUSTED_PROXIES: 'loopback' });
    await exhaust(get, '203.0.113.7');
    expect(await get(s.keys.acme, '203.0.113.7')).toBe(429);
    // another client behind the same proxy is not held up
    expect(await get(s.keys.acme, '203.0.113.8')).toBe(200);
    // the limited client prepends an address of its choosing: the proxy appends the real one, which counts
    expect(await get(s.keys.acme, '198.51.100.1, 203.0.113.7')).toBe(429);
  });

  it('without TRUSTED_PROXIES, X-Forwarded-For is ignored: failures count against the TCP peer whatever it says', async () => {
    const { get, setup: s } = await start({});
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push(await get(`wrong-key-${i}`, `203.0.113.${i + 1}`));
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect(await get(s.keys.acme, '203.0.113.200')).toBe(429);
  });

  it('one client cannot spread its failures by writing its address differently: port, brackets, IPv4-mapped and IPv6 forms are one address', async () => {
    const { get, setup: s } = await start({ TRUSTED_PROXIES: 'loopback' });
    await exhaust(get, '8.8.8.8');
    for (const xff of ['8.8.8.8:1234', '::ffff:8.8.8.8', '[::ffff:8.8.8.8]:443', ' 8.8.8.8 ']) expect(await get(`wrong-${xff}`, xff), xff).toBe(429);
    await exhaust(get, '2001:db8::1');
    for (const xff of ['2001:0DB8:0:0:0:0:0:1', '[2001:db8::1]:8080']) expect(await get(`wrong-${xff}`, xff), xff).toBe(429);
    expect(await get(s.keys.acme, '8.8.4.4')).toBe(200);
  });

  it('an X-Forwarded-For entry that is no IP address is not the client: failures count against the peer (the proxy), whatever the text', async () => {
    const { get, setup: s } = await start({ TRUSTED_PROXIES: 'loopback' });
    await exhaust(get, 'garbage');
    for (const xff of ['008.8.8.8', 'other-garbage', '8.8.8.8:99999', '9.9.9.9, junk']) expect(await get(`wrong-${xff}`, xff), xff).toBe(429);
    // a well-formed client address behind the proxy keeps its own allowance
    expect(await get(s.keys.acme, '8.8.4.4')).toBe(200);
  });

  it('a TRUSTED_PROXIES entry that is no address or range stops start-up, naming the variable', () => {
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, proxy.example.com' })).toThrow(/TRUSTED_PROXIES/);
    expect(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, loopback, ::1' }).auth.trustedProxies).toEqual(['10.0.0.0/8', 'loopback', '::1']);
  });
});
