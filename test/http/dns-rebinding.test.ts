/**
 * Without authentication (no PARTNERS_FILE, loopback bind) the gateway serves only requests whose
 * `Host` names a loopback host: a web page whose name an attacker rebinds to 127.0.0.1 (DNS
 * rebinding) would otherwise be same-origin with the gateway and could create subscriptions or
 * read events as the anonymous admin. With partners the credential protects every route, so any
 * `Host` is served. Every answer carries `X-Content-Type-Options: nosniff` (an error repeats a path
 * the caller chose; a browser must never sniff it into HTML).
 */
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { isLoopbackHostHeader } from '../../src/core/loopback.js';
import { createLogger } from '../../src/observability/index.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';
import { rawRequest } from '../helpers/raw-http.js';

const quiet = () => createLogger({ level: 'silent', destination: new PassThrough() });

async function get(url: string, host: string, path = '/subscriptions', auth?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const [r] = await rawRequest(url, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${auth === undefined ? '' : `Authorization: Bearer ${auth}\r\n`}Connection: close\r\n\r\n`);
  return { status: r!.status, headers: r!.headers, body: r!.body.toString() };
}

describe('Host header without authentication (DNS rebinding)', () => {
  let gw: Gateway;
  let url: string;
  let port: number;

  beforeAll(async () => {
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }), quiet());
    port = (await gw.listen()).port;
    await gw.ready;
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('serves loopback hosts: 127.0.0.1, localhost, a name under .localhost, [::1], with and without a port', async () => {
    for (const host of [`127.0.0.1:${port}`, '127.0.0.1', `localhost:${port}`, 'LOCALHOST', `app.localhost:${port}`, `[::1]:${port}`, 'localhost.']) {
      const r = await get(url, host);
      expect(r.status, host).toBe(200);
    }
  });

  it('refuses every other host with 403 problem+json naming host, before any route runs', async () => {
    for (const host of [`rebind.attacker.example:${port}`, 'evil.example', '127.0.0.1.nip.io', 'localhost.attacker.example', '[::2]', '10.0.0.1', '0.0.0.0']) {
      const r = await get(url, host);
      expect(r.status, host).toBe(403);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(r.body)).toMatchObject({ code: 'CEG_FORBIDDEN', violations: [{ field: 'host' }] });
    }
    // A state-changing request is refused the same way: nothing is created.
    const [post] = await rawRequest(url, `POST /subscriptions HTTP/1.1\r\nHost: rebind.attacker.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    expect(post!.status).toBe(403);
  });

  it('every answer says nosniff, a 404 that repeats the path included', async () => {
    const r = await get(url, 'localhost', '/schemas/json/%3Cscript%3Ealert(1)%3C%2Fscript%3E');
    expect(r.status).toBe(404);
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect((await get(url, 'localhost', '/healthz')).headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('Host header with partners', () => {
  let setup: PartnersSetup;
  let gw: Gateway;
  let url: string;

  beforeAll(async () => {
    setup = partnersSetup(`rebind${Date.now().toString(36)}`);
    process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...setup.env }), quiet());
    url = `http://127.0.0.1:${(await gw.listen()).port}`;
    await gw.ready;
  });
  afterAll(async () => {
    await gw?.close();
    setup?.cleanup();
  });

  it('serves any Host: the credential protects the routes (a gateway behind a proxy is reached by its public name)', async () => {
    expect((await get(url, 'gateway.example.com', '/subscriptions', setup.keys.ops)).status).toBe(200);
    expect((await get(url, 'gateway.example.com', '/subscriptions')).status).toBe(401);
  });
});

describe('isLoopbackHostHeader', () => {
  it('no name outside localhost / .localhost, no address outside 127/8 and ::1 counts as loopback', () => {
    fc.assert(
      fc.property(fc.domain(), fc.option(fc.integer({ min: 1, max: 65535 })), (domain, p) => {
        const host = p === null ? domain : `${domain}:${p}`;
        const d = domain.toLowerCase();
        expect(isLoopbackHostHeader(host)).toBe(d === 'localhost' || d.endsWith('.localhost'));
      }),
    );
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        expect(isLoopbackHostHeader(ip)).toBe(ip.startsWith('127.'));
      }),
    );
    fc.assert(
      fc.property(fc.ipV6(), (ip) => {
        expect(isLoopbackHostHeader(`[${ip}]`)).toBe(ip === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(ip) || /^0*:0*:0*:0*:0*:0*:0*:0*1$/.test(ip));
      }),
    );
  });
});
