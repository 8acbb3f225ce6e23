/**
 * OIDC bearer tokens (issue 11, optional part): JWTs verified with `jose` against a JWKS from a
 * file or from a URL (a real HTTP server on 127.0.0.1), their `sub` naming a partner of
 * PARTNERS_FILE whose permissions apply; a wrong audience, issuer, signer, algorithm, `typ` (an ID
 * token), a missing `exp`, an `iat` in the future or an expired token, or one naming no partner, is
 * 401. A JWKS that cannot be fetched is 503 CEG_AUTH_UNAVAILABLE with Retry-After: logged, not a
 * failed attempt (API keys from the address keep working), and not fetched again at once.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { MAX_JWKS_BYTES, MAX_JWKS_KEYS, OidcVerifier, withoutUrlSecrets } from '../../src/http/auth/oidc.js';
import { createLogger } from '../../src/observability/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';
import { waitFor } from '../helpers/wait.js';

const ISSUER = 'https://idp.example.test';
const AUDIENCE = 'ce-gateway';
/**
 * The key set fetch's timing the gateways here run with (createGateway `oidcJwksTimings`), ms:
 * shorter than the defaults (5000 each) so the waits below are shorter; the fetch timeout keeps its
 * default (a test's key set answers after 1 s). The retry delay leaves room for six requests on a
 * loaded machine within it; the refetch minimum for the cold lookup's bound below.
 */
const TIMINGS = { refetchMinMs: 3000, retryMs: 2500 } as const;

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
    const gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...setup.env, AUTH_FAILURES_PER_MINUTE: '1000', OIDC_ISSUER: ISSUER, OIDC_AUDIENCE: AUDIENCE, ...env }), log, { oidcJwksTimings: TIMINGS });
    gateways.push(gw);
    const addr = await gw.listen();
    await gw.ready;
    return `http://127.0.0.1:${addr.port}`;
  }
  /** A logger writing into `lines` (parsed JSON lines). */
  const capture = (): { log: ReturnType<typeof createLogger>; lines: { level: number; msg: string; err?: string; jwks?: string }[] } => {
    const lines: { level: number; msg: string; err?: string; jwks?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as never);
        done();
      },
    });
    return { log: createLogger({ level: 'info', destination: sink }), lines };
  };
  /** A JWKS endpoint on 127.0.0.1 answering with `handle`; `fetches` holds the time of each request. */
  async function jwksHost(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; fetches: number[] }> {
    const fetches: number[] = [];
    const server = createServer((req, res) => {
      fetches.push(Date.now());
      handle(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    hosts.push(server);
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, fetches };
  }
  const hosts: Server[] = [];
  const statuses = (codes: number[]): Record<number, number> => codes.reduce<Record<number, number>>((m, c) => ({ ...m, [c]: (m[c] ?? 0) + 1 }), {});
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
    for (const h of hosts) h.closeAllConnections();
    await Promise.all(hosts.map((h) => new Promise((r) => h.close(r))));
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

  it('a JWKS that cannot be fetched: 503 CEG_AUTH_UNAVAILABLE with Retry-After, logged, not a failed attempt, fetched at most once per retry delay', async () => {
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
        expect(retryAfter).toBeLessThanOrEqual(Math.ceil(TIMINGS.retryMs / 1000)); // the delay given, not the default
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
      await new Promise((r) => setTimeout(r, TIMINGS.retryMs + 100));
      expect(await publish(url, t)).toBe(202);
      expect(hits).toBe(2);
    } finally {
      await new Promise((r) => flaky.close(r));
    }
  }, 20_000);

  it('discovery: without OIDC_JWKS_URL or OIDC_JWKS_FILE the key set is the jwks_uri of <OIDC_ISSUER>/.well-known/openid-configuration; a document naming another issuer or a plain-http jwks_uri beyond loopback is a 503 (logged, naming the field), fetched again only after the retry delay', async () => {
    const jwks = readFileSync(join(setup.dir, 'jwks.json'), 'utf8');
    let issuerInDocument: ((issuer: string) => string) | undefined = () => 'https://evil.test/realms/acme';
    const idp = await jwksHost((req, res) => {
      const origin = `http://127.0.0.1:${req.socket.localPort}`;
      const json = (body: unknown): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/realms/acme/.well-known/openid-configuration') json({ issuer: issuerInDocument?.(`${origin}/realms/acme`), jwks_uri: `${origin}/realms/acme/certs` });
      else if (req.url === '/realms/plain/.well-known/openid-configuration') json({ issuer: `${origin}/realms/plain`, jwks_uri: 'http://idp.example.test/certs' });
      else if (req.url === '/realms/acme/certs') res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
      else res.writeHead(404).end();
    });
    const origin = new URL(idp.url).origin;
    const issuer = `${origin}/realms/acme`;
    const { log, lines } = capture();
    const url = await start({ OIDC_ISSUER: issuer }, log);
    const t = await token({ iss: issuer });
    // The document names another issuer (§4.3: it MUST NOT be used): 503, and no second fetch within the retry delay.
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/subscriptions`, { headers: { authorization: `Bearer ${t}` } });
      expect(res.status, `attempt ${i}`).toBe(503);
      expect(((await res.json()) as { code: string }).code).toBe('CEG_AUTH_UNAVAILABLE');
    }
    expect(idp.fetches).toHaveLength(1);
    const warned = lines.filter((l) => l.msg.includes('discovery document'));
    expect(warned).toHaveLength(1);
    expect(warned[0]!.err).toContain('"issuer"');
    expect(await publish(url, setup.keys.acme)).toBe(202); // API keys unaffected
    // The provider fixes its document: after the retry delay the key set comes from its jwks_uri.
    issuerInDocument = (own) => own;
    await new Promise((r) => setTimeout(r, TIMINGS.retryMs + 100));
    expect(await publish(url, t)).toBe(202);
    expect(await publish(url, await token({ iss: issuer, key: stranger }))).toBe(401);
    expect(idp.fetches).toHaveLength(3); // the document again, then the key set once
    // A jwks_uri over plain http to a host that is not loopback is never fetched.
    const plainIssuer = `${origin}/realms/plain`;
    const other = capture();
    const plainUrl = await start({ OIDC_ISSUER: plainIssuer }, other.log);
    expect(await publish(plainUrl, await token({ iss: plainIssuer }))).toBe(503);
    expect(other.lines.find((l) => l.msg.includes('discovery document'))?.err).toContain('"jwks_uri" is not https');
  });

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
  it('valid tokens are never failed attempts: 30 concurrent valid tokens during a slow first JWKS fetch (allowance 10) are all accepted, and an API key of the address meanwhile', async () => {
    const jwks = readFileSync(join(setup.dir, 'jwks.json'), 'utf8');
    const host = await jwksHost((_req, res) => void setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks), 1000));
    const url = await start({ OIDC_JWKS_URL: host.url, AUTH_FAILURES_PER_MINUTE: '10' });
    const t = await token();
    const pending = Array.from({ length: 30 }, () => fetch(`${url}/subscriptions`, { headers: { authorization: `Bearer ${t}` } }).then((r) => r.status));
    await new Promise((r) => setTimeout(r, 300));
    expect((await fetch(`${url}/subscriptions`, { headers: { authorization: `Bearer ${setup.keys.ops}` } })).status).toBe(200);
    expect(statuses(await Promise.all(pending))).toEqual({ 200: 30 });
    expect(host.fetches).toHaveLength(1);
  }, 20_000);

  it('key rotation: a token with a kid published after the set was cached is accepted (one refetch, not a 401); a kid still unknown after it is 401; refetches at most one at a time and once per refetch minimum', async () => {
    const k2 = await generateKeyPair('ES256');
    const k1Jwk = (JSON.parse(readFileSync(join(setup.dir, 'jwks.json'), 'utf8')) as { keys: object[] }).keys[0]!;
    let published: object[] = [k1Jwk];
    const host = await jwksHost((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published })));
    const url = await start({ OIDC_JWKS_URL: host.url, AUTH_FAILURES_PER_MINUTE: '3' });
    expect(await publish(url, await token())).toBe(202);
    expect(host.fetches).toHaveLength(1);
    published = [k1Jwk, { ...(await exportJWK(k2.publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' }];
    // More tokens than the address may fail, sent at once: one fetch for all, none refused.
    const rotated = await token({ kid: 'k2', key: k2.privateKey });
    expect(statuses(await Promise.all(Array.from({ length: 5 }, () => publish(url, rotated))))).toEqual({ 202: 5 });
    expect(host.fetches).toHaveLength(2);
    expect(host.fetches[1]! - host.fetches[0]!).toBeGreaterThanOrEqual(TIMINGS.refetchMinMs - 50);
    // Made-up kids: one more fetch for all of them, then 401 (counted: 3 of them lock the address).
    const unknown = await Promise.all(['x1', 'x2', 'x3'].map(async (kid) => publish(url, await token({ kid }))));
    expect(unknown).toEqual([401, 401, 401]);
    expect(host.fetches).toHaveLength(3);
    expect(host.fetches[2]! - host.fetches[1]!).toBeGreaterThanOrEqual(TIMINGS.refetchMinMs - 50);
    // A kid missing from a set fetched after the token arrived (a gateway's first fetch) is 401 at once.
    const cold = await start({ OIDC_JWKS_URL: host.url });
    const t0 = Date.now();
    expect(await publish(cold, await token({ kid: 'x4' }))).toBe(401);
    // Waiting for the cooldown would take the refetch minimum (3 s); a fetch on loopback takes ms.
    expect(Date.now() - t0).toBeLessThan(TIMINGS.refetchMinMs - 500);
    expect(host.fetches).toHaveLength(4);
  }, 30_000);

  it(`a JWKS answer over MAX_JWKS_BYTES (${MAX_JWKS_BYTES}) or with more than MAX_JWKS_KEYS keys is a failed fetch (503, one warning), not read whole`, async () => {
    const k1Jwk = (JSON.parse(readFileSync(join(setup.dir, 'jwks.json'), 'utf8')) as { keys: object[] }).keys[0]!;
    let written = 0;
    const streamed = await jwksHost((_req, res) => {
      // Chunked (no content-length): a valid key set behind 8 MiB of padding.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"pad":"');
      const pad = 'x'.repeat(64 * 1024);
      const more = (): void => {
        while (written < 8 * MAX_JWKS_BYTES) {
          written += pad.length;
          if (!res.write(pad)) return void res.once('drain', more);
        }
        res.end(`","keys":[${JSON.stringify(k1Jwk)}]}`);
      };
      res.on('error', () => undefined);
      more();
    });
    const declared = await jwksHost((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pad: 'x'.repeat(MAX_JWKS_BYTES), keys: [k1Jwk] })));
    const many = await jwksHost((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: Array.from({ length: MAX_JWKS_KEYS + 1 }, (_, i) => ({ ...k1Jwk, kid: i === 0 ? 'k1' : `k${i + 1}` })) })));
    for (const [host, why] of [
      [streamed, 'larger than'],
      [declared, 'larger than'],
      [many, `more than ${MAX_JWKS_KEYS}`],
    ] as const) {
      const { log, lines } = capture();
      const url = await start({ OIDC_JWKS_URL: host.url }, log);
      expect(await publish(url, await token()), why).toBe(503);
      const warned = lines.filter((l) => l.msg.includes('JWKS cannot be fetched'));
      expect(warned).toHaveLength(1);
      expect(warned[0]!.err).toContain(why);
    }
    expect(written).toBeLessThan(8 * MAX_JWKS_BYTES); // the reader stopped, the server did not write it all
  }, 20_000);

  it('one failed JWKS fetch awaited by 50 requests logs one warning, not 50', async () => {
    const host = await jwksHost((req) => void setTimeout(() => req.socket.destroy(), 500));
    const { log, lines } = capture();
    const url = await start({ OIDC_JWKS_URL: host.url }, log);
    const t = await token();
    const codes = await Promise.all(Array.from({ length: 50 }, () => fetch(`${url}/subscriptions`, { headers: { authorization: `Bearer ${t}` } }).then((r) => r.status)));
    expect(statuses(codes)).toEqual({ 503: 50 });
    expect(host.fetches).toHaveLength(1);
    expect(lines.filter((l) => l.msg.includes('JWKS cannot be fetched'))).toHaveLength(1);
  }, 20_000);

  it('a JWKS URL never reaches a log with its userinfo or query: fetch errors are cut to origin and path; a verifier refuses a URL with userinfo', () => {
    const msg = 'Request cannot be constructed from a URL that includes credentials: http://jwksuser:UPASS1@127.0.0.1:18555/jwks?token=QSECRET1#f';
    expect(withoutUrlSecrets(msg)).toBe('Request cannot be constructed from a URL that includes credentials: http://127.0.0.1:18555/jwks');
    expect(withoutUrlSecrets('bad http://u:p@[::1x/jwks?token=Q')).not.toMatch(/u:p|token=Q/);
    expect(() => new OidcVerifier({ issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'http://u:UPASS1@127.0.0.1:9/jwks', partnerClaim: 'sub' }, [])).toThrow(/must not hold credentials/);
    try {
      new OidcVerifier({ issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'http://u:UPASS1@127.0.0.1:9/jwks', partnerClaim: 'sub' }, []);
    } catch (err) {
      expect(String(err)).not.toContain('UPASS1');
    }
  });

  it('OIDC_JWKS_FILE is read again when it changes: a key added to it is accepted without a restart; a change that is no JWKS keeps the keys read before, with a warning', async () => {
    const dir = join(setup.dir, 'rotate');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'jwks.json');
    const next = await generateKeyPair('ES256');
    // k1: the key of `signer`, as the shared JWKS file holds it.
    const k1 = (JSON.parse(readFileSync(join(setup.dir, 'jwks.json'), 'utf8')) as { keys: Record<string, unknown>[] }).keys[0]!;
    writeFileSync(file, JSON.stringify({ keys: [k1] }));
    const { log, lines } = capture();
    const url = await start({ OIDC_JWKS_FILE: file }, log);
    const rotated = await token({ key: next.privateKey, kid: 'k2' });
    expect(await publish(url, rotated)).toBe(401);
    // The issuer's rotation: the new key is published next to the old one.
    writeFileSync(file, JSON.stringify({ keys: [k1, { ...(await exportJWK(next.publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' }] }));
    await waitFor('a token of the added key accepted', async () => (await publish(url, rotated)) === 202, 15_000, 250);
    expect(lines.filter((l) => l.msg === 'OIDC_JWKS_FILE changed on disk: its keys are in use')).not.toHaveLength(0);
    expect(await publish(url, await token())).toBe(202);
    // A half-written or wrong file: the keys read before stay in use.
    writeFileSync(file, '{"keys": [');
    await waitFor('the unreadable change warned of', () => lines.some((l) => l.level === 40 && l.msg.startsWith('OIDC_JWKS_FILE changed on disk but is no readable JWKS')), 15_000, 100);
    expect(await publish(url, rotated)).toBe(202);
    expect(await publish(url, await token())).toBe(202);
  }, 40_000);

  it('jwksTimings that are not whole ms from 1 to 2^31 − 1 are refused at construction (CEG_INVALID_OPTIONS naming each)', () => {
    expect(() => new OidcVerifier({ issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'https://idp.example.test/jwks', partnerClaim: 'sub', jwksTimings: { refetchMinMs: 0, retryMs: 1.5, timeoutMs: 2 ** 31 } }, [])).toThrow(
      /oidc jwksTimings: refetchMinMs, retryMs, timeoutMs: an integer from 1 to 2147483647 ms/,
    );
    expect(() => new OidcVerifier({ issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'https://idp.example.test/jwks', partnerClaim: 'sub', jwksTimings: { retryMs: 1 } }, [])).not.toThrow();
  });
});
