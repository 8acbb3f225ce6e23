/**
 * B-F9: a sink that echoes the request (headers included) in its error body must not get the
 * subscription's own secret values into the dead letter's excerpt: `delivery.headers` values
 * (stored sealed, "never returned") and signing secrets are redacted before the excerpt is kept.
 * Against a real HTTP sink on 127.0.0.1 that answers 400 (dead letter) or 500 (retry) with the
 * request's headers as JSON.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookSink, parseAllowList } from '../../../src/connectors/sinks/webhook/index.js';
import type { PushSettings } from '../../../src/connectors/sinks/webhook/index.js';
import { REDACTED, redact, secretTexts } from '../../../src/connectors/sinks/webhook/redact.js';
import { silentLogger } from '../../../src/observability/index.js';

let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      // /pad/<status>/<n>/<c>: n times the character c, then the echoed header value, then more text
      // (a sink echoing the request after some text of its own: the value may cross the 1 KiB cut).
      const pad = /^\/pad\/(\d+)\/(\d+)\/(.+)$/.exec(req.url ?? '');
      if (pad !== null) {
        res.writeHead(Number(pad[1])).end(`${decodeURIComponent(pad[3]!).repeat(Number(pad[2]))}${String(req.headers['x-sink-token'])}|${String(req.headers['x-json'])} tail`);
        return;
      }
      const status = req.url === '/bad' ? 400 : 500;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'echo', headers: req.headers, note: 'secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const settings = (path: string): PushSettings => ({
  url: `${base}${path}`,
  contentMode: 'binary',
  data: 'json',
  handshake: false,
  secrets: [SECRET],
  headers: { authorization: 'Bearer SINK-HEADER-VALUE-777', 'x-api-key': 'k"ey\\with-escapes-42', 'x-short': 'on' },
  timeoutMs: 2000,
  retryAfterCapMs: 1000,
  rateLimit: null,
  concurrency: 1,
});

describe('the dead-letter excerpt never carries the subscription\'s own secret values', () => {
  it.each([
    ['/bad', 'deadLetter'],
    ['/fail', 'retry'],
  ])('a sink echoing the request headers (%s → %s): header values and signing secrets are redacted', async (path, kind) => {
    const sink = createWebhookSink(settings(path), { log: silentLogger(), allow: parseAllowList('127.0.0.1'), origin: 'gateway.test', ctx: { markGone: () => undefined, share: () => 1 } });
    try {
      const out = await sink.handler({ attributes: { specversion: '1.0', id: 'e1', source: '/t', type: 't.x' }, data: { kind: 'json', value: {} } }, { subscription: 's', topic: 't', partition: 0, offset: 0n, attempt: 1 });
      expect(out).toMatchObject({ kind });
      const excerpt = (out as { failure?: { excerpt?: string } }).failure?.excerpt ?? '';
      expect(excerpt).toContain('"error":"echo"');
      expect(excerpt).not.toContain('SINK-HEADER-VALUE-777');
      expect(excerpt).not.toContain('with-escapes-42');
      expect(excerpt).not.toContain('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
      expect(excerpt).toContain(`"authorization":"${REDACTED}"`);
      // Short values are no secrets: left alone (the header is still there).
      expect(excerpt).toContain('"x-short":"on"');
    } finally {
      await sink.close();
    }
  });

  it('a value crossing the excerpt\'s 1 KiB cut leaves none of itself in the excerpt, whatever comes before it (break report 2026-12-06)', async () => {
    const token = 'PADSECRET-0123456789-abcdefghijklmnopqrstuvwxyz';
    const long = `LONG-${'0123456789abcdef'.repeat(255)}`; // 4,085 characters: near the longest value allowed
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 1100 }), fc.constantFrom('a', 'é', '€', '😀'), fc.constantFrom(400, 500), fc.constantFrom(token, long), async (n, c, status, value) => {
        const s: PushSettings = { ...settings(`/pad/${status}/${n}/${encodeURIComponent(c)}`), headers: { 'x-sink-token': value, 'x-json': 'q"uote\\d-value' } };
        const sink = createWebhookSink(s, { log: silentLogger(), allow: parseAllowList('127.0.0.1'), origin: 'gateway.test', ctx: { markGone: () => undefined, share: () => 1 } });
        try {
          const out = await sink.handler({ attributes: { specversion: '1.0', id: 'e1', source: '/t', type: 't.x' }, data: { kind: 'json', value: {} } }, { subscription: 's', topic: 't', partition: 0, offset: 0n, attempt: 1 });
          const excerpt = (out as { failure?: { excerpt?: string } }).failure?.excerpt ?? '';
          expect(Buffer.byteLength(excerpt)).toBeLessThanOrEqual(1024);
          expect(excerpt.startsWith(c.repeat(Math.min(n, 10)))).toBe(true);
          // No piece of the value of 4 characters or more (the pad is one other character repeated).
          for (let at = 0; at + 4 <= value.length; at++) expect(excerpt, `n=${n} c=${c}`).not.toContain(value.slice(at, at + 4));
        } finally {
          await sink.close();
        }
      }),
      { numRuns: 60 },
    );
    // 60 runs of a real sink and HTTP exchange: ~2–3 s alone, over the project's 10 s when the
    // machine's two cores are shared with other work (seen at a load average of 20).
  }, 30_000);

  it('a sink echoing only the credentials of an Authorization-style value (the token after the scheme, Basic\'s user:password decoded) gets none of them into the excerpt (break report 2026-12-07)', async () => {
    // Sinks that refuse a credential commonly name it alone: `invalid token <token>`, or the decoded
    // Basic user. The whole value `Bearer <token>` never appears in such an answer, so redacting
    // only whole values kept the token itself (seen on a real gateway's GET …/deadletters).
    const echo = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const body: Record<string, string> = {};
        for (const name of ['authorization', 'x-api-key', 'x-digest']) {
          const v = String(req.headers[name] ?? '');
          const creds = v.slice(v.indexOf(' ') + 1);
          body[name] = creds;
          if (/^basic /i.test(v)) {
            const plain = Buffer.from(creds, 'base64').toString('utf8');
            body.basicUser = plain;
            body.basicPassword = plain.slice(plain.indexOf(':') + 1);
          }
          for (const m of v.matchAll(/(\w+)="?([^",]*)"?/g)) body[`${name}.${m[1]!}`] = m[2]!;
        }
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid credentials', seen: body }));
      });
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/hook`;
    const basic = Buffer.from('partner-user:BASIC-PASSWORD-555').toString('base64');
    try {
      for (const [headers, secrets] of [
        [{ authorization: 'Bearer BEARER-TOKEN-4242' }, ['BEARER-TOKEN-4242']],
        [{ authorization: `Basic ${basic}` }, [basic, 'BASIC-PASSWORD-555']],
        [{ 'x-api-key': 'ApiKey KEYVALUE-99999', 'x-digest': 'Digest username="bob", response="6629fae49393a05397450978507c4ef1"' }, ['KEYVALUE-99999', '6629fae49393a05397450978507c4ef1']],
      ] as const) {
        const sink = createWebhookSink({ ...settings('/'), url, headers }, { log: silentLogger(), allow: parseAllowList('127.0.0.1'), origin: 'gateway.test', ctx: { markGone: () => undefined, share: () => 1 } });
        try {
          const out = await sink.handler({ attributes: { specversion: '1.0', id: 'e1', source: '/t', type: 't.x' }, data: { kind: 'json', value: {} } }, { subscription: 's', topic: 't', partition: 0, offset: 0n, attempt: 1 });
          const excerpt = (out as { failure?: { excerpt?: string } }).failure?.excerpt ?? '';
          expect(excerpt).toContain('"error":"invalid credentials"');
          for (const secret of secrets) expect(excerpt, JSON.stringify(headers)).not.toContain(secret);
          expect(excerpt).toContain(REDACTED);
        } finally {
          await sink.close();
        }
      }
    } finally {
      echo.closeAllConnections();
      await new Promise<void>((r) => echo.close(() => r()));
    }
  });

  it('secretTexts: the credentials after an auth scheme, each auth-param value and Basic\'s decoded password count; the scheme itself does not', () => {
    const basic = Buffer.from('u:pass-word-1').toString('base64');
    const texts = secretTexts({ a: 'Bearer tok-123456', b: `Basic ${basic}`, c: 'Digest realm="r", nonce="n0nce-value"' }, []);
    expect(texts).toEqual(expect.arrayContaining(['Bearer tok-123456', 'tok-123456', basic, 'u:pass-word-1', 'pass-word-1', 'n0nce-value']));
    expect(texts).not.toContain('Bearer');
    expect(texts).not.toContain('Digest');
    expect(redact('WWW-Authenticate: Bearer error="invalid_token" tok-123456', texts)).toBe(`WWW-Authenticate: Bearer error="invalid_token" ${REDACTED}`);
  });

  it('redact: longest value first, JSON-escaped forms too', () => {
    const texts = secretTexts({ a: 'abcdef', b: 'abcdefgh', c: 'q"uote!!' }, []);
    expect(redact('x abcdefgh y abcdef z q\\"uote!!', texts)).toBe(`x ${REDACTED} y ${REDACTED} z ${REDACTED}`);
  });
});
