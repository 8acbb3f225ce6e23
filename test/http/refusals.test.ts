/**
 * Issue 12 kind 7 and the connection bound: refused and aborted requests are logged at info level
 * in aggregate (one line with counts per status and code), never as error-level lines per request;
 * the server holds at most HTTP_MAX_CONNECTIONS connections.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { RecordPublisher } from '../../src/bus/publisher/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import { createApiApp } from '../../src/http/api/app.js';
import type { IngressDeps } from '../../src/http/ingress/handler.js';
import { createHttpServer } from '../../src/http/server.js';
import { createLogger, silentLogger } from '../../src/observability/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { ScriptedTransport, codecFixture } from '../unit/bus/helpers.js';
import { openRaw, rawPost, rawRequest } from '../helpers/raw-http.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

async function serve(http: { maxConnections?: number } = {}) {
  const lines: { level: number; msg: string; refused?: Record<string, number>; clients?: Record<string, Record<string, number>>; partners?: Record<string, Record<string, number>> }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as never);
      done();
    },
  });
  const log = createLogger({ level: 'info', destination: sink });
  const fx = await codecFixture();
  const transport = new ScriptedTransport();
  await transport.ensureTopics(fx.catalog.topics);
  const records = new RecordPublisher(transport, { queueCapacity: 100, maxBatch: 100, retry: retryPolicy({ maxAttempts: 2, initialDelayMs: 1, factor: 2, maxDelayMs: 5, jitter: 0 }) }, silentLogger());
  const deps: IngressDeps = { codec: fx.codec, publisher: records, log, options: { maxBodyBytes: 65_536, maxBatchEvents: 10, ackTimeoutMs: 2000, retryAfterS: 7, dataschemaBase: 'http://x/schemas/ids/' } };
  const server = createHttpServer({
    ingress: () => deps,
    api: createApiApp({ catalog: fx.catalog, registry: fx.registry, docs: {}, retryAfterS: 7 }),
    ready: () => Promise.resolve({ ready: true, checks: {} }),
    metrics: () => Promise.resolve({ contentType: 'text/plain', body: '' }),
    retryAfterS: 7,
    log,
    http: { maxBodyBytes: 65_536, ...http },
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lines, server, records };
}

describe('refused requests are logged at info level in aggregate', () => {
  it('bad requests and clients that hang up mid-body give one info line of counts, no error-level line per request', async () => {
    const { url, lines, server, records } = await serve();
    for (let i = 0; i < 5; i++) expect((await rawRequest(url, rawPost([['content-type', 'text/plain']], 'x')))[0]!.status).toBe(415);
    expect((await rawRequest(url, 'NOT HTTP\r\n\r\n'))[0]!.status).toBe(400);
    for (let i = 0; i < 3; i++) {
      const c = await openRaw(url);
      c.write(`POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/cloudevents+json\r\nContent-Length: 500\r\n\r\n{"spec`);
      await new Promise((r) => setTimeout(r, 20));
      c.destroy(); // the client hangs up mid-body
    }
    await new Promise((r) => setTimeout(r, 50));
    await new Promise<void>((r) => server.close(() => r())); // flushes the counts
    await records.close();
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    const reports = lines.filter((l) => l.refused !== undefined);
    expect(reports).toHaveLength(1);
    expect(reports[0]!.level).toBe(30);
    expect(reports[0]!.refused).toEqual({ '415 CEG_UNSUPPORTED_MEDIA_TYPE': 5, '400 CEG_MALFORMED_REQUEST': 1, aborted: 3 });
    // …and per client address, issue 15 "Logs" (no partner: this server does not authenticate).
    expect(reports[0]!.clients).toEqual({ '127.0.0.1': { '415 CEG_UNSUPPORTED_MEDIA_TYPE': 5, '400 CEG_MALFORMED_REQUEST': 1, aborted: 3 } });
    expect(reports[0]!.partners).toEqual({});
  });
});

describe('HTTP_MAX_CONNECTIONS', () => {
  it('holds at most the configured number of connections; further ones are closed at once', async () => {
    const { url } = await serve({ maxConnections: 3 });
    const open = await Promise.all([openRaw(url), openRaw(url), openRaw(url)]);
    await new Promise((r) => setTimeout(r, 50));
    const extra = await openRaw(url);
    expect((await extra.closed(2000)).closed).toBe(true);
    open[0].destroy();
    await new Promise((r) => setTimeout(r, 100));
    const again = await rawRequest(url, rawPost([['content-type', 'application/cloudevents+json']], JSON.stringify(structuredPriceEvent())));
    expect(again[0]!.status).toBe(202);
    for (const c of open) c.destroy();
  });
});

describe('Expect other than 100-continue', () => {
  it('is 417 as problem+json naming the header (Node answered a bare 417), and nothing is produced', async () => {
    const { url, records } = await serve();
    for (const expectation of ['200-ok', 'something-else', '102-processing']) {
      const [r] = await rawRequest(url, rawPost([['content-type', 'application/cloudevents+json'], ['expect', expectation], ['connection', 'close']], JSON.stringify(structuredPriceEvent())));
      expect(r!.status, expectation).toBe(417);
      expect(r!.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(r!.body)).toMatchObject({ code: 'CEG_EXPECTATION_FAILED', status: 417 });
    }
    expect(records.stats().enqueued).toBe(0);
  });
});

describe('request framing the parser refuses (RFC 9112 §6.1, §6.3, §7.1)', () => {
  const body = JSON.stringify(structuredPriceEvent());
  const chunked = `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  const request = (headers: string, payload: string): string => `POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/cloudevents+json\r\n${headers}\r\n${payload}`;

  it('Content-Length with Transfer-Encoding, or chunked twice, is a malformed request (400), nothing produced', async () => {
    const { url, records } = await serve();
    for (const [headers, payload] of [
      [`Content-Length: ${Buffer.byteLength(body)}\r\nTransfer-Encoding: chunked\r\n`, chunked],
      [`Transfer-Encoding: chunked\r\nContent-Length: 5\r\n`, chunked],
      [`Content-Length: 5\r\nTransfer-Encoding: gzip, chunked\r\n`, chunked],
      ['Transfer-Encoding: chunked, chunked\r\n', chunked],
      ['Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', chunked],
    ] as const) {
      const [r] = await rawRequest(url, request(headers, payload));
      expect(r?.status, headers).toBe(400);
      expect(r!.headers['content-type']).toBe('application/problem+json');
      const problem = JSON.parse(r!.body) as { code: string; detail: string };
      expect(problem.code, headers).toBe('CEG_MALFORMED_REQUEST');
      expect(problem.detail, headers).toMatch(/Content-Length and Transfer-Encoding|chunked is applied more than once/);
    }
    expect(records.stats().enqueued).toBe(0);
  });

  it('a transfer coding other than chunked is 501 naming it (not a generic failure)', async () => {
    const { url } = await serve();
    // `gzip, chunked` passes the parser (the ingress refuses it); the others the parser refuses.
    for (const te of ['gzip', 'gzip, chunked', 'x-custom', 'chunked, gzip']) {
      const [r] = await rawRequest(url, request(`Transfer-Encoding: ${te}\r\n`, te.endsWith('chunked') ? chunked : body));
      expect(r?.status, te).toBe(501);
      const problem = JSON.parse(r!.body) as { code: string; detail: string; transferEncoding?: string; supported?: string[] };
      expect(problem, te).toMatchObject({ code: 'CEG_NOT_IMPLEMENTED', transferEncoding: te, supported: ['chunked'] });
      expect(problem.detail, te).toBe(`transfer coding "${te}" is not implemented: send the body as is (Content-Length) or chunked`);
    }
  });
});

describe('headers over 16 KiB (431)', () => {
  const filler = (n: number): string => Array.from({ length: n }, (_, i) => `x-fill-${i}: ${'f'.repeat(200)}\r\n`).join('');

  it('on POST /events the detail says attributes are headers in binary mode; on other routes it does not', async () => {
    const { url } = await serve();
    const onEvents = await rawRequest(url, `POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${filler(100)}Content-Length: 2\r\n\r\n{}`);
    expect(onEvents[0]!.status).toBe(431);
    expect(JSON.parse(onEvents[0]!.body)).toMatchObject({ code: 'CEG_HEADERS_TOO_LARGE', detail: 'the request headers exceed 16 KiB; CloudEvents attributes are headers in binary mode — send large values as data' });
    for (const line of ['GET /subscriptions HTTP/1.1', 'GET /events-log HTTP/1.1', 'POST /eventsx HTTP/1.1', 'GET /events HTTP/1.1']) {
      const [r] = await rawRequest(url, `${line}\r\nHost: localhost\r\n${filler(100)}\r\n`);
      expect(r!.status, line).toBe(431);
      const problem = JSON.parse(r!.body) as { code: string; detail: string };
      expect(problem.code, line).toBe('CEG_HEADERS_TOO_LARGE');
      expect(problem.detail, line).toBe('the request headers exceed 16 KiB');
    }
  });

  it('when the headers arrive in many small writes (the parser keeps only the last), the advice says where it applies', async () => {
    const { url } = await serve();
    const c = await openRaw(url);
    c.write('POST /events HTTP/1.1\r\nHost: localhost\r\n');
    for (let i = 0; i < 20; i++) {
      c.write(filler(5).replaceAll('x-fill-', `x-fill-${i}-`));
      await new Promise((r) => setTimeout(r, 5));
    }
    const [r] = await c.responses(1, 5000);
    c.destroy();
    expect(r!.status).toBe(431);
    expect((JSON.parse(r!.body) as { detail: string }).detail).toMatch(/^the request headers exceed 16 KiB \(on POST \/events, binary-mode/);
  });
});
