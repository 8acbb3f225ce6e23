/**
 * OIDC bearer tokens (issue 11, optional part): JWTs verified with `jose` against a JWKS from a
 * file or from a URL (a real HTTP server on 127.0.0.1), their `sub` naming a partner of
 * PARTNERS_FILE whose permissions apply; a wrong audience, issuer, signer, algorithm, `typ` (an ID
 * token), a missing `exp`, an `iat` in the future or an expired token, or one naming no partner, is
 * 401. A JWKS that cannot be fetched is 503 CEG_AUTH_UNAVAILABLE with Retry-After: logged, not a
 * failed attempt (API keys from the address keep working), and not fetched again at once.
 */
import { createServer } from 'node:http';
import { Writable } from 'node:stream';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';

const ISSUER = 'https://idp.example.test';
const AUDIENCE = 'ce-gateway';

describe('OIDC bearer tokens', () => {
  let setup: PartnersSetup;
  let jwksServer: Server;
  const gateways: Gateway[] = [];
  let fileUrl: string;
  let remoteUrl: string;
  let signer: CryptoKey;
  let stranger: CryptoKey;

  const token = (o: { sub?: string; aud?: string; iss?: string; exp?: string | number | null; iat?: number; typ?: string | null; key?: CryptoKey; kid?: string } = {}): Promise<string> => {
    const jwt = new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: o.kid ?? 'k1', ...(o.typ === null ? {} : { typ: o.typ ?? 'at+jwt' }) })
      .setSubject(o.sub ?? 'acme')
      .setIssuer(o.iss ?? ISSUER)
      .setAudience(o.aud ?? AUDIENCE)
      .setIssuedAt(o.iat);
    if (o.exp !== null) jwt.setExpirationTime(o.exp ?? '5m');
    return jwt.sign(o.key ?? signer);
  };

  async function start(env: Record<string, string>, log = createLogger({ level: 'silent' })): Promise<string> {
    const gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...setup.env, AUTH_FAILURES_PER_MINUTE: '1000', OIDC_ISSUER: ISSUER, OIDC_AUDIENCE: AUDIENCE, ...env }), log);
    gateways.push(gw);
    const addr = await gw.listen();
    await gw.ready;
    return `http://127.0.0.1:${addr.port}`;
  }
  const publish = async (url: string, bearer: string, source = 'urn:partner:acme'): Promise<number> =>
    (await fetch(`${url}/events`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent({ source })) })).status;

  beforeAll(async () => {
    setup = partnersSetup(`oidc${Date.now().toString(36)}`);
    process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
    const pair = await generateKeyPair('ES256');
    signer = pair.privateKey;
    stranger = (await generateKeyPair('ES256')).privateKey;
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] });
    const jwksFile = join(setup.dir, 'jwks.json');
    writeFileSync(jwksFile, jwks);
    jwksServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
    await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
    fileUrl = await start({ OIDC_JWKS_FILE: jwksFile });
    remoteUrl = await start({ OIDC_JWKS_URL: `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks` });
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await new Promise((r) => jwksServer?.close(r));
    setup?.cleanup();
  });

  it('a valid token names its partner, whose permissions apply (JWKS from a file and from a URL)', async () => {
    for (const url of [fileUrl, remoteUrl]) {
      expect(await publish(url, await token())).toBe(202);
      expect(await publish(url, await token(), 'urn:partner:globex')).toBe(403);
      const subs = await fetch(`${url}/subscriptions`, { headers: { authorization: `Bearer ${await token({ sub: 'globex' })}` } });
      expect(subs.status).toBe(200);
    }
  });

  it('API keys keep working next to tokens', async () => {
    expect(await publish(fileUrl, setup.keys.acme)).toBe(202);
  });

  it('refuses a wrong audience, issuer, signer or key id, an expired token, an unknown partner, an HS256 token, no exp, an iat in the future, an ID token (typ JWT or none): 401', async () => {
    const hs = await new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' }).setSubject('acme').setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime('5m').sign(new TextEncoder().encode('x'.repeat(32)));
    const nowS = Math.floor(Date.now() / 1000);
    const bad = [
      await token({ aud: 'other' }),
      await token({ iss: 'https://evil.test' }),
      await token({ key: stranger }),
      await token({ exp: nowS - 3600 }),
      await token({ sub: 'nobody' }),
      hs,
      await token({ exp: null }),
      await token({ iat: nowS + 3600, exp: nowS + 7200 }),
      await token({ typ: 'JWT' }),
      await token({ typ: null }),
    ];
    for (const [i, t] of bad.entries()) {
      const res = await fetch(`${fileUrl}/subscriptions`, { headers: { authorization: `Bearer ${t}` } });
      expect(res.status, `case ${i}`).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
  });
  it('typ is compared as RFC 8725 says (application/ prefix, any case); OIDC_TOKEN_TYPES=* accepts an ID token, a list accepts its members', async () => {
    expect(await publish(fileUrl, await token({ typ: 'application/AT+JWT' }))).toBe(202);
    const anyUrl = await start({ OIDC_JWKS_FILE: join(setup.dir, 'jwks.json'), OIDC_TOKEN_TYPES: '*' });
    expect(await publish(anyUrl, await token({ typ: 'JWT' }))).toBe(202);
    expect(await publish(anyUrl, await token({ typ: null }))).toBe(202);
    expect(await publish(anyUrl, await token({ exp: null }))).toBe(401); // exp stays required
    const listUrl = await start({ OIDC_JWKS_FILE: join(setup.dir, 'jwks.json'), OIDC_TOKEN_TYPES: 'at+jwt, application/okta-internal-at+jwt' });
    expect(await publish(listUrl, await token({ typ: 'okta-internal-at+jwt' }))).toBe(202);
    expect(await publish(listUrl, await token({ typ: 'JWT' }))).toBe(401);
  });

  it('a JWKS that cannot be fetched: 503 CEG_AUTH_UNAVAILABLE with Retry-After, logged, not a failed attempt, fetched at most once per 5 s', async () => {
    let hits = 0;
    let answer: 'fail' | 'ok' = 'fail';
    const jwks = readFileSync(join(setup.dir, 'jwks.json'), 'utf8');
    const flaky = createServer((_req, res) => {
      hits++;
      if (answer === 'ok') res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
      else res.writeHead(500).end('down');
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    try {
      const lines: { level: number; msg: string; jwks?: string }[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as never);
          done();
        },
      });
      const port = (flaky.address() as AddressInfo).port;
      const url = await start({ OIDC_JWKS_URL: `http://127.0.0.1:${port}/jwks?key=s3kr1tv4lue`, AUTH_FAILURES_PER_MINUTE: '3' }, createLogger({ level: 'info', destination: sink }));
      const t = await token();
      // More attempts than the address may fail: none counts, so the API key is not locked out.
      for (let i = 0; i < 6; i++) {
        const res = await fetch(`${url}/subscriptions`, { headers: { authorization: `Bearer ${t}` } });
        expect(res.status, `attempt ${i}`).toBe(503);
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        const retryAfter = Number(res.headers.get('retry-after'));
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(5);
        expect(((await res.json()) as { code: string }).code).toBe('CEG_AUTH_UNAVAILABLE');
      }
      expect(hits).toBe(1); // one fetch failed: the next ones wait out the retry delay
      expect(await publish(url, setup.keys.acme)).toBe(202);
      const warned = lines.filter((l) => l.msg.includes('JWKS cannot be fetched'));
      expect(warned).toHaveLength(1);
      expect(warned[0]!.jwks).toBe(`http://127.0.0.1:${port}/jwks`); // no query: it may hold a credential
      expect(JSON.stringify(lines)).not.toContain('s3kr1tv4lue');
      // The key set answers again: after the retry delay the token is verified.
      answer = 'ok';
      await new Promise((r) => setTimeout(r, 5100));
      expect(await publish(url, t)).toBe(202);
      expect(hits).toBe(2);
    } finally {
      await new Promise((r) => flaky.close(r));
    }
  }, 20_000);

  it('a JWKS URL that refuses connections is the same 503, not a 401', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const url = await start({ OIDC_JWKS_URL: `http://127.0.0.1:${port}/jwks` });
    const res = await fetch(`${url}/subscriptions`, { headers: { authorization: `Bearer ${await token()}` } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).not.toBeNull();
    expect(res.headers.get('www-authenticate')).toBeNull();
  });
});
