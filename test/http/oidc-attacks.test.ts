/**
 * OIDC bearer tokens under attack, against a real identity provider on 127.0.0.1: an HTTP server
 * publishing the discovery document (`/.well-known/openid-configuration`) and its JWKS, keys made
 * with `jose`; the gateway is pointed at the `jwks_uri` the discovery document names. Forged and
 * stale tokens are 401 (alg `none`, HS256 signed with the published public key as the secret, a
 * key embedded in the header or named by `jku`, `nbf` in the future, an unknown `crit`, a token in
 * the query string instead of the header, a huge one); a JWKS endpoint that never answers, or
 * starts its answer and never ends it, is a 503 with Retry-After after the fetch's deadline — the
 * request does not hang — and the query-string token is never echoed back.
 */
import { KeyObject, sign } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair } from 'jose';
import type { CryptoKey, JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway, GatewayOverrides } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { MAX_CREDENTIAL_CHARS } from '../../src/http/auth/authenticate.js';
import { JWKS_TIMEOUT_MS } from '../../src/http/auth/oidc.js';
import { createLogger } from '../../src/observability/index.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';

const AUDIENCE = 'ce-gateway';
/**
 * The JWKS fetch deadline of the stall case's gateways (createGateway `oidcJwksTimings`), ms: a
 * fifth of the default, so each stall ends sooner; the client's own bound is 4× it, which the
 * default deadline would pass.
 */
const STALL_TIMEOUT_MS = 1000;

/** An identity provider on 127.0.0.1: discovery, and a JWKS answered by `jwks` (swappable). */
interface Idp {
  readonly issuer: string;
  readonly jwksUri: string;
  jwks: (req: IncomingMessage, res: ServerResponse) => void;
  readonly server: Server;
  /** Every path asked of the provider, in order. */
  readonly asked: string[];
}

async function identityProvider(publicJwk: JWK): Promise<Idp> {
  const idp = { jwks: (_req: IncomingMessage, res: ServerResponse) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [publicJwk] })) } as Idp & { issuer: string; jwksUri: string; server: Server; asked: string[] };
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(req.url ?? '');
    if (req.url === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: idp.issuer, jwks_uri: idp.jwksUri, id_token_signing_alg_values_supported: ['ES256'], response_types_supported: ['code'], subject_types_supported: ['public'] }));
    } else if (req.url === '/jwks') {
      idp.jwks(req, res);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(idp, { issuer: base, jwksUri: `${base}/jwks`, server, asked });
}

const b64 = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

describe('OIDC tokens under attack (a real issuer on loopback)', () => {
  let setup: PartnersSetup;
  let idp: Idp;
  let signer: CryptoKey;
  let stranger: { privateKey: CryptoKey; publicKey: CryptoKey };
  let publicKey: CryptoKey;
  let publicJwk: JWK;
  let url: string;
  const gateways: Gateway[] = [];

  const token = (o: { header?: Record<string, unknown>; claims?: Record<string, unknown>; key?: CryptoKey; alg?: string } = {}): Promise<string> =>
    new SignJWT({ ...o.claims })
      .setProtectedHeader({ alg: o.alg ?? 'ES256', kid: 'k1', typ: 'at+jwt', ...o.header })
      .setSubject('acme')
      .setIssuer(idp.issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(o.key ?? signer);

  async function start(jwksUri: string, overrides: GatewayOverrides = {}): Promise<string> {
    const gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...setup.env, AUTH_FAILURES_PER_MINUTE: '1000', OIDC_ISSUER: idp.issuer, OIDC_AUDIENCE: AUDIENCE, OIDC_JWKS_URL: jwksUri }), createLogger({ level: 'silent' }), overrides);
    gateways.push(gw);
    const addr = await gw.listen();
    await gw.ready;
    return `http://127.0.0.1:${addr.port}`;
  }
  const call = async (bearer: string | undefined, path = '/subscriptions'): Promise<{ status: number; text: string; headers: Headers }> => {
    const res = await fetch(`${url}${path}`, { headers: bearer === undefined ? {} : { authorization: `Bearer ${bearer}` } });
    return { status: res.status, text: await res.text(), headers: res.headers };
  };

  beforeAll(async () => {
    setup = partnersSetup(`oidcatk${Date.now().toString(36)}`);
    process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
    const pair = await generateKeyPair('ES256', { extractable: true });
    signer = pair.privateKey;
    publicKey = pair.publicKey;
    stranger = await generateKeyPair('ES256', { extractable: true });
    publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    idp = await identityProvider(publicJwk);
    // The gateway takes the JWKS URL; a deployment copies it from the issuer's discovery document.
    const discovery = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as { issuer: string; jwks_uri: string };
    expect(discovery.issuer).toBe(idp.issuer);
    url = await start(discovery.jwks_uri);
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    idp?.server.closeAllConnections();
    await new Promise((r) => idp?.server.close(r));
    setup?.cleanup();
  });

  it('a token the issuer signed is accepted', async () => {
    expect((await call(await token())).status).toBe(200);
  });

  it('forged tokens are 401 invalid_token: alg none, HS256 keyed with the public key (JWK, PEM), an embedded jwk, a jku to the forger\'s keys, an unknown crit', async () => {
    const claims = { sub: 'acme', iss: idp.issuer, aud: AUDIENCE, exp: Math.floor(Date.now() / 1000) + 300, iat: Math.floor(Date.now() / 1000) };
    const unsecured = `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(claims)}.`;
    const noneWithSig = `${b64({ alg: 'none', typ: 'at+jwt', kid: 'k1' })}.${b64(claims)}.${b64('sig')}`;
    const hsJwk = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: 'k1', typ: 'at+jwt' }).sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    const hsPem = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: 'k1', typ: 'at+jwt' }).sign(new TextEncoder().encode(await exportSPKI(publicKey)));
    const embedded = await token({ key: stranger.privateKey, header: { jwk: await exportJWK(stranger.publicKey) } });
    const jku = await token({ key: stranger.privateKey, header: { kid: 'evil', jku: `${idp.issuer}/evil-jwks` } });
    // jose will not sign a header with an unknown `crit`: signed here with the issuer's own key.
    const critInput = `${b64({ alg: 'ES256', kid: 'k1', typ: 'at+jwt', crit: ['x-must-understand'], 'x-must-understand': true })}.${b64(claims)}`;
    const crit = `${critInput}.${sign('sha256', Buffer.from(critInput), { key: KeyObject.from(signer), dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
    for (const [name, t] of Object.entries({ unsecured, noneWithSig, hsJwk, hsPem, embedded, jku, crit })) {
      const r = await call(t);
      expect(r.status, name).toBe(401);
      expect(r.headers.get('www-authenticate'), name).toContain('invalid_token');
    }
    expect(idp.asked).not.toContain('/evil-jwks'); // a header's jku is never fetched
  }, 30_000); // 5.0 s in every CI run (half the default 10 s): room for a loaded machine

  it('a token not valid yet (nbf an hour ahead, beyond the 30 s tolerance) is 401; one issued to another audience among several is 401, ours among several is accepted', async () => {
    expect((await call(await token({ claims: { nbf: Math.floor(Date.now() / 1000) + 3600 } }))).status).toBe(401);
    const many = (aud: string[]): Promise<string> => new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' }).setSubject('acme').setIssuer(idp.issuer).setAudience(aud).setExpirationTime('5m').sign(signer);
    expect((await call(await many(['other', 'another']))).status).toBe(401);
    expect((await call(await many(['other', AUDIENCE]))).status).toBe(200);
  });

  it('a token in the query string (RFC 6750 §2.3) is not a credential, and is never echoed back', async () => {
    const t = await token();
    const r = await call(undefined, `/subscriptions?access_token=${t}`);
    expect(r.status).toBe(401);
    expect(r.text).not.toContain(t);
    // Authenticated by the header, a 404 for an unknown path does not echo the query's token either.
    const nf = await call(t, `/no-such-path?access_token=${t}`);
    expect(nf.status).toBe(404);
    expect(nf.text).not.toContain(t);
    expect(nf.text).not.toContain('access_token');
  });

  it('huge tokens: a 12 KiB JWT-shaped one is 401 (parsed, not a 500); past Node\'s 16 KiB header bound, 431 before any parsing', async () => {
    const t = await token();
    const [h, p, sig] = t.split('.');
    const padded = `${h}.${p}${'A'.repeat(12 * 1024)}.${sig}`;
    expect(padded.length).toBeLessThan(MAX_CREDENTIAL_CHARS);
    const r = await call(padded);
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toContain('invalid_token');
    expect((await call(`${h}.${'A'.repeat(64 * 1024)}.${sig}`)).status).toBe(431);
  });

  it(`a JWKS endpoint that never answers, or sends headers and then stalls, is 503 with Retry-After once the fetch's deadline (${STALL_TIMEOUT_MS} ms here, ${JWKS_TIMEOUT_MS} by default) passes: the request does not hang`, async () => {
    for (const stall of ['no answer', 'headers then nothing'] as const) {
      const held: ServerResponse[] = [];
      idp.jwks = (_req, res) => {
        held.push(res);
        if (stall === 'headers then nothing') res.writeHead(200, { 'content-type': 'application/json' }).write('{"keys":[');
      };
      const gatewayUrl = await start(idp.jwksUri, { oidcJwksTimings: { timeoutMs: STALL_TIMEOUT_MS } });
      const res = await fetch(`${gatewayUrl}/subscriptions`, { headers: { authorization: `Bearer ${await token()}` }, signal: AbortSignal.timeout(4 * STALL_TIMEOUT_MS) });
      expect(res.status, stall).toBe(503);
      expect(Number(res.headers.get('retry-after')), stall).toBeGreaterThanOrEqual(1);
      expect(((await res.json()) as { code: string }).code, stall).toBe('CEG_AUTH_UNAVAILABLE');
      for (const r of held) r.destroy();
    }
    idp.jwks = (_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [publicJwk] }));
  }, 40_000);
});
