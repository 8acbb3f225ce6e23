/**
 * The API app's final error handling on a real gateway (in-memory adapters): a path that cannot be
 * percent-decoded is 400 problem+json naming the `path` on every route with a path parameter and
 * every method (property-based, never a 500); express's and body-parser's own 4xx errors (a body
 * over the bound, an unknown content coding, broken gzip, a foreign charset) keep their 4xx as
 * problem+json; an unexpected failure is a 500 CEG_INTERNAL without internals in the answer and
 * logged once with the method, path (no query), route, message and stack.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { MAX_CURSOR_CHARS } from '../../src/bus/subscriptions/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { createMemoryRegistry } from '../../src/registry/index.js';
import type { SchemaRegistry } from '../../src/registry/index.js';

/** The schema id whose lookup fails unexpectedly (a plain Error, not a GatewayError). */
const EXPLODING_ID = 4242;

let gw: Gateway;
let port: number;
const lines: string[] = [];

/** The registry of the gateway, whose schemaById fails with a plain Error for one id. */
function explodingRegistry(): SchemaRegistry {
  const mem = createMemoryRegistry();
  return new Proxy(mem, {
    get(target, key, receiver) {
      if (key === 'schemaById') return (id: number) => (id === EXPLODING_ID ? Promise.reject(new Error('registry exploded (test)')) : target.schemaById(id));
      const v: unknown = Reflect.get(target, key, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

beforeAll(async () => {
  const out = new PassThrough();
  out.on('data', (c: Buffer) => lines.push(...c.toString('utf8').split('\n').filter((l) => l !== '')));
  gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', INSTANCE_ID: 'errs-1' }), createLogger({ level: 'info', destination: out }), {
    registry: explodingRegistry(),
    renderMetrics: () => Promise.reject(new Error('metrics exploded (test)')),
  });
  const addr = await gw.listen();
  await gw.ready;
  await gw.subscriptionsLoaded();
  port = addr.port;
});

afterAll(async () => {
  await gw?.close();
});

beforeEach(() => {
  lines.length = 0;
});

interface Answer {
  readonly status: number;
  readonly type: string;
  readonly body: Record<string, unknown>;
  readonly text: string;
}

/** One request with the path exactly as given (fetch would normalise it), answer parsed when JSON. */
function send(method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: Record<string, unknown> = {};
        try {
          parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
        } catch {
          // not JSON: the assertions on `type` say so
        }
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: parsed, text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const fields = (b: Record<string, unknown>): string[] => ((b.violations as { field?: string }[] | undefined) ?? []).map((v) => v.field ?? '');
const errorLines = (): Record<string, unknown>[] => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => (l.level as number) >= 50);

/** Every route with a path parameter, by method, `{}` where the parameter goes; the body for the methods that take one. */
const ROUTES: readonly { method: string; path: string; body?: string }[] = [
  { method: 'GET', path: '/subscriptions/{}' },
  { method: 'PATCH', path: '/subscriptions/{}', body: '{"state":"paused"}' },
  { method: 'DELETE', path: '/subscriptions/{}' },
  { method: 'PUT', path: '/subscriptions/{}', body: '{}' },
  { method: 'GET', path: '/subscriptions/{}/events' },
  { method: 'HEAD', path: '/subscriptions/{}/events' },
  { method: 'GET', path: '/subscriptions/{}/stream' },
  { method: 'POST', path: '/subscriptions/{}/cursors', body: '{"cursor":"c1.x"}' },
  { method: 'POST', path: '/subscriptions/{}/replay', body: '{"to":"latest"}' },
  { method: 'GET', path: '/subscriptions/{}/replays' },
  { method: 'GET', path: '/subscriptions/{}/status' },
  { method: 'GET', path: '/subscriptions/{}/deadletters' },
  { method: 'DELETE', path: '/subscriptions/{}/deadletters' },
  { method: 'POST', path: '/subscriptions/{}/deadletters/redrive', body: '{"all":true}' },
  { method: 'GET', path: '/schemas/ids/{}' },
  { method: 'GET', path: '/schemas/json/{}.json' },
  { method: 'GET', path: '/console/api/trace/{}' },
  { method: 'GET', path: '/console/api/tail/{}' },
];

const HEX = '0123456789abcdefABCDEF';
const UNRESERVED = fc.stringMatching(/^[A-Za-z0-9_-]{0,8}$/);
/** A percent-encoding decodeURIComponent refuses: `%` without two hex digits, or octets that are not UTF-8. */
const BAD_ESCAPE = fc.oneof(
  fc.constant('%'),
  fc.constantFrom(...HEX.split('')).map((h) => `%${h}`),
  fc.tuple(fc.constantFrom(...'GZgz-_.~!'.split('')), fc.constantFrom(...`${HEX}Z`.split(''))).map(([a, b]) => `%${a}${b}`),
  fc.tuple(fc.constantFrom(...HEX.split('')), fc.constantFrom(...'GZgz-_.~!'.split(''))).map(([a, b]) => `%${a}${b}`),
  // A continuation octet alone, a lead octet without its continuations, an overlong form, octets UTF-8 never has.
  fc.integer({ min: 0x80, max: 0xbf }).map((b) => `%${b.toString(16).toUpperCase()}`),
  fc.integer({ min: 0xc2, max: 0xf4 }).map((b) => `%${b.toString(16).toUpperCase()}`),
  fc.constantFrom('%E0%A4', '%C0%AF', '%FF', '%FE', '%ED%A0%80', '%F0%9F%98'),
);
/** What may follow a bad escape without completing it into a good one (no hex digit first). */
const AFTER = fc.stringMatching(/^([G-Zg-z_-][A-Za-z0-9_-]{0,7})?$/);
const BAD_SEGMENT = fc.tuple(UNRESERVED, BAD_ESCAPE, AFTER).map(([a, e, b]) => `${a}${e}${b}`);

describe('a path that cannot be percent-decoded', () => {
  it.each([
    ['GET', '/subscriptions/%ZZ'],
    ['GET', '/subscriptions/%ZZ/events'],
    ['GET', '/subscriptions/%E0%A4/status'],
    ['GET', '/subscriptions/p1%/replays'],
    ['PATCH', '/subscriptions/%ZZ'],
    ['DELETE', '/subscriptions/%ZZ'],
    ['GET', '/schemas/ids/%ZZ'],
    ['GET', '/schemas/json/%ZZ.json'],
  ])('%s %s → 400 problem+json naming the path (the tester\'s cases)', async (method, path) => {
    const r = await send(method, path, method === 'PATCH' ? '{"state":"paused"}' : undefined);
    expect(r.status, r.text).toBe(400);
    expect(r.type).toMatch(/^application\/problem\+json/);
    expect(r.body).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', status: 400, retriable: false, instance: path });
    expect(fields(r.body)).toEqual(['path']);
    expect(String(r.body.detail)).toContain('percent-encoding');
    expect(errorLines()).toEqual([]);
  });

  it('on every route with a path parameter and every method: 400 CEG_MALFORMED_REQUEST, never a 500, nothing logged as an error (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), BAD_SEGMENT, async (route, segment) => {
        const path = route.path.replace('{}', segment);
        const r = await send(route.method, path, route.body);
        expect(r.status, `${route.method} ${path}: ${r.text}`).toBe(400);
        expect(r.type).toMatch(/^application\/problem\+json/);
        if (route.method !== 'HEAD') {
          expect(r.body.code).toBe('CEG_MALFORMED_REQUEST');
          expect(fields(r.body)).toEqual(['path']);
          expect(String(r.body.detail)).toContain(segment.slice(0, 100));
        }
      }),
      { numRuns: 300 },
    );
    expect(errorLines()).toEqual([]);
  });

  it('with a query: the query is not taken for the path, and good encodings still reach the route', async () => {
    const r = await send('GET', '/subscriptions/%ZZ?owner=x%ZZ');
    expect(r.status).toBe(400);
    expect(String(r.body.detail)).toContain('"%ZZ"');
    // Valid percent-encoding decodes as before: an unknown subscription is 404, not 400.
    expect((await send('GET', '/subscriptions/no%2Dsuch')).status).toBe(404);
    expect((await send('GET', '/schemas/ids/%31%32')).status).toBe(404);
  });

  it('the OpenAPI document lists a 400 problem for every operation of a path with a parameter', async () => {
    const doc = (await send('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> };
    const templated = Object.entries(doc.paths).filter(([p]) => p.includes('{'));
    expect(templated.length).toBeGreaterThan(10);
    for (const [p, ops] of templated) for (const [m, op] of Object.entries(ops)) expect(op.responses?.['400'], `${m} ${p}`).toBeDefined();
  });
});

describe('express\'s and body-parser\'s own errors keep their 4xx', () => {
  const big = `{"name":"${'x'.repeat(70_000)}"}`;

  it('a body over the bound: 413 CEG_PAYLOAD_TOO_LARGE naming the route\'s bound', async () => {
    const sub = await send('POST', '/subscriptions', big);
    expect(sub.status).toBe(413);
    expect(sub.type).toMatch(/^application\/problem\+json/);
    expect(sub.body).toMatchObject({ code: 'CEG_PAYLOAD_TOO_LARGE', maxBytes: 65_536 });
    expect(fields(sub.body)).toEqual(['body']);
    const cursor = await send('POST', '/subscriptions/some/cursors', `{"cursor":"${'c'.repeat(MAX_CURSOR_CHARS + 2048)}"}`);
    expect(cursor.status).toBe(413);
    expect(cursor.body).toMatchObject({ code: 'CEG_PAYLOAD_TOO_LARGE', maxBytes: MAX_CURSOR_CHARS + 1024 });
    // Larger once decoded: the bound holds after gunzip too.
    const zipped = await send('POST', '/subscriptions', gzipSync(big), { 'content-encoding': 'gzip' });
    expect(zipped.status).toBe(413);
  });

  it('an unknown content coding: 415; gzip that is not gzip: 400 naming the body', async () => {
    const coding = await send('POST', '/subscriptions', '{}', { 'content-encoding': 'compress' });
    expect(coding.status).toBe(415);
    expect(coding.body).toMatchObject({ code: 'CEG_UNSUPPORTED_MEDIA_TYPE', contentEncoding: 'compress', supported: ['identity', 'gzip', 'deflate', 'br'] });
    const broken = await send('POST', '/subscriptions/x/replay', 'not gzip at all', { 'content-encoding': 'gzip' });
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ code: 'CEG_MALFORMED_REQUEST' });
    expect(fields(broken.body)).toEqual(['body']);
    expect(errorLines()).toEqual([]);
  });

  it('JSON that is not JSON, not UTF-8, not an object, or in another charset: 400 / 415 naming the body', async () => {
    for (const [method, path] of [['POST', '/subscriptions'], ['PATCH', '/subscriptions/x'], ['POST', '/subscriptions/x/replay'], ['POST', '/subscriptions/x/cursors'], ['POST', '/subscriptions/x/deadletters/redrive'], ['DELETE', '/subscriptions/x/deadletters']] as const) {
      for (const body of ['{"name":', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), '"a string"', 'null', '42']) {
        const r = await send(method, path, body);
        expect(r.status, `${method} ${path} ${String(body)}: ${r.text}`).toBe(400);
        expect(r.body.code).toBe('CEG_MALFORMED_REQUEST');
        expect(fields(r.body)).toEqual(['body']);
      }
      const utf16 = await send(method, path, '{}', { 'content-type': 'application/json; charset=utf-16' });
      expect(utf16.status, `${method} ${path}`).toBe(415);
      expect(utf16.body.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    }
    expect(errorLines()).toEqual([]);
  });
});

/**
 * A request written byte by byte, without Content-Length or Transfer-Encoding (what `curl -X POST
 * -H 'content-type: application/json' URL` sends when `-d` is forgotten; node:http always adds one).
 */
function sendWithoutBody(method: string, path: string, contentType: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', payload = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), body: payload === '' ? {} : (JSON.parse(payload) as Record<string, unknown>) });
    });
    socket.end(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${contentType}\r\nConnection: close\r\n\r\n`);
  });
}

describe('a JSON request without a body (no Content-Length, no Transfer-Encoding)', () => {
  // Until 2026-12-07 these were 415 "send … as application/json" naming application/json as what
  // came: express's req.is() answers null for a request without a body. Now the empty body is read
  // as `{}`, as `Content-Length: 0` is, and the route names what is missing.
  it('is read as an empty body: each route names the missing field, 400', async () => {
    const created = await send('POST', '/subscriptions', JSON.stringify({ name: 'no-body', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }));
    expect(created.status, created.text).toBe(201);
    const create = await sendWithoutBody('POST', '/subscriptions', 'application/json');
    expect(create.status).toBe(400);
    expect(create.body.code).toBe('CEG_INVALID_SUBSCRIPTION');
    expect(fields(create.body)).toEqual(expect.arrayContaining(['name', 'kinds', 'delivery']));
    const patch = await sendWithoutBody('PATCH', '/subscriptions/no-body', 'application/merge-patch+json');
    expect(patch).toMatchObject({ status: 400, body: { code: 'CEG_MALFORMED_REQUEST' } });
    expect(fields(patch.body)).toEqual(['body']);
    const replay = await sendWithoutBody('POST', '/subscriptions/no-body/replay', 'application/json; charset=utf-8');
    expect(replay).toMatchObject({ status: 400, body: { code: 'CEG_INVALID_REPLAY' } });
    expect(fields(replay.body)).toEqual(['to']);
    const cursor = await sendWithoutBody('POST', '/subscriptions/no-body/cursors', 'application/json');
    expect(cursor).toMatchObject({ status: 400, body: { code: 'CEG_INVALID_CURSOR' } });
    expect(fields(cursor.body)).toEqual(['cursor']);
    // Another media type without a body is still refused as that media type.
    const form = await sendWithoutBody('POST', '/subscriptions/no-body/replay', 'application/x-www-form-urlencoded');
    expect(form).toMatchObject({ status: 415, body: { code: 'CEG_UNSUPPORTED_MEDIA_TYPE', contentType: 'application/x-www-form-urlencoded' } });
    expect(errorLines()).toEqual([]);
  });
});

describe('an unexpected failure', () => {
  it('is a 500 CEG_INTERNAL without internals, logged once with method, path without the query, route, message and stack', async () => {
    const r = await send('GET', `/schemas/ids/${EXPLODING_ID}?token=s3cret-in-query`);
    expect(r.status).toBe(500);
    expect(r.type).toMatch(/^application\/problem\+json/);
    expect(r.body).toMatchObject({ code: 'CEG_INTERNAL', status: 500, retriable: false, detail: 'the gateway failed to process the request' });
    expect(r.text).not.toContain('exploded');
    expect(r.body.instance).toBe(`/schemas/ids/${EXPLODING_ID}`); // the query (a token?) is not echoed
    const logged = errorLines();
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 50, component: 'http', method: 'GET', path: `/schemas/ids/${EXPLODING_ID}`, route: '/schemas/ids/:id', status: 500, code: 'CEG_INTERNAL' });
    const err = logged[0]!.err as { message?: string; stack?: string };
    expect(err.message).toBe('registry exploded (test)');
    expect(err.stack).toContain('registry exploded (test)');
    expect(err.stack).toMatch(/api-errors\.test\.ts/);
    expect(lines.join('\n')).not.toContain('s3cret-in-query');
  });

  it('on GET /metrics (the server ahead of the app): a 500 logged once with its stack', async () => {
    const r = await send('GET', '/metrics');
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({ code: 'CEG_INTERNAL' });
    expect(r.text).not.toContain('exploded');
    const logged = errorLines();
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ method: 'GET', path: '/metrics', status: 500, code: 'CEG_INTERNAL' });
    expect((logged[0]!.err as { stack?: string }).stack).toContain('metrics exploded (test)');
  });

  it('client errors and 404s are not logged as errors', async () => {
    expect((await send('GET', '/subscriptions/nope')).status).toBe(404);
    expect((await send('GET', '/no/such/route')).status).toBe(404);
    expect((await send('POST', '/subscriptions', '{"name":"x"}')).status).toBe(400);
    expect(errorLines()).toEqual([]);
  });
});
