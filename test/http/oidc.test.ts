/**
 * OIDC bearer tokens (issue 11, optional part): JWTs verified with `jose` against a JWKS from a
 * file or from a URL (a real HTTP server on 127.0.0.1), their `sub` naming a partner of
 * PARTNERS_FILE whose permissions apply; a wrong audience, issuer, signer, algorithm or an expired
 * token, or one naming no partner, is 401.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
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

  const token = (o: { sub?: string; aud?: string; iss?: string; exp?: string | number; key?: CryptoKey; kid?: string } = {}): Promise<string> =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: o.kid ?? 'k1' })
      .setSubject(o.sub ?? 'acme')
      .setIssuer(o.iss ?? ISSUER)
      .setAudience(o.aud ?? AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(o.exp ?? '5m')
      .sign(o.key ?? signer);

  async function start(env: Record<string, string>): Promise<string> {
    const gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...setup.env, OIDC_ISSUER: ISSUER, OIDC_AUDIENCE: AUDIENCE, ...env }), createLogger({ level: 'silent' }));
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

  it('refuses a wrong audience, issuer, signer or key id, an expired token, an unknown partner, an HS256 token: 401', async () => {
    const hs = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('acme').setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime('5m').sign(new TextEncoder().encode('x'.repeat(32)));
    const bad = [
      await token({ aud: 'other' }),
      await token({ iss: 'https://evil.test' }),
      await token({ key: stranger }),
      await token({ exp: Math.floor(Date.now() / 1000) - 3600 }),
      await token({ sub: 'nobody' }),
      hs,
    ];
    for (const [i, t] of bad.entries()) {
      const res = await fetch(`${fileUrl}/subscriptions`, { headers: { authorization: `Bearer ${t}` } });
      expect(res.status, `case ${i}`).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
  });
});
