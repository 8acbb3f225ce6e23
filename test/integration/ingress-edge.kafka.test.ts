/**
 * Issue 12 (and the ingress part of issue 7) on the real stack: ingress under bad input and HTTP
 * edge cases. Each kind of fault has a test whose title names it; every refusal is checked for
 * its status, problem+json and that nothing reached any catalog topic. Topics of this run only
 * (a catalog copy), so other writers of the stack do not disturb the end offsets; the copy's price
 * topic takes at most 16 KiB per record batch, so a batch of a hundred events exceeds it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, strategySignal, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { openRaw, rawPost, rawRequest } from '../helpers/raw-http.js';
import type { RawResponse } from '../helpers/raw-http.js';
import { uniqueName } from '../helpers/stack.js';

const STRUCTURED = 'application/cloudevents+json';
const BATCH = 'application/cloudevents-batch+json';
const CHART = '13faf290-81b9-48d9-b49f-c534545eae14';
const SIGNAL = 'b785f117-3e61-4864-89c3-4accf13140c2';
const SMALL_TOPIC_BYTES = 16_384;
/** Just above the signal kind's 1024-byte bound: a record of a full-size event does not fit. */
const TINY_TOPIC_BYTES = 1100;

/** Sets `maxMessageBytes` of the copy's topic ending in `suffix`. */
function limitTopic(text: string, suffix: string, bytes: number): string {
  const at = text.indexOf(`${suffix}:\n`, text.indexOf('\ntopics:'));
  const end = text.indexOf('cleanupPolicy: delete\n', at) + 'cleanupPolicy: delete\n'.length;
  return `${text.slice(0, end)}    maxMessageBytes: ${bytes}\n${text.slice(end)}`;
}

const catalog = catalogWithOwnTopics(uniqueName('edge'));
let gw: TestGateway;
let topics: string[];
let priceTopic: string;

beforeAll(async () => {
  // Small record batches on two topics of this run (issue 12 kind 4).
  const file = join(catalog.dir, 'catalog.yaml');
  writeFileSync(file, limitTopic(limitTopic(readFileSync(file, 'utf8'), 'trading.price-loading-completed', SMALL_TOPIC_BYTES), 'trading.strategy-signal', TINY_TOPIC_BYTES));
  gw = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir, HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '1500' } });
  topics = gw.gateway.catalog.topics.map((t) => t.name);
  priceTopic = gw.gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)!.topic.name;
  expect(await gw.gateway.transport.maxMessageBytes(priceTopic)).toBe(SMALL_TOPIC_BYTES);
});
afterAll(async () => {
  await gw?.close();
  catalog.cleanup();
});

/** Sum of end offsets over every catalog topic of this run. */
async function recordsOnAllTopics(): Promise<bigint> {
  const ends = await Promise.all(topics.map((t) => gw.gateway.transport.endOffsets(t)));
  return ends.flat().reduce((n, p) => n + p.offset, 0n);
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

async function post(body: string | Uint8Array, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** Asserts a refusal: the status, problem+json naming a cause, and no record on any topic. */
async function expectRefused(send: () => Promise<Answer | RawResponse>, status: number, code?: string): Promise<Record<string, unknown>> {
  const before = await recordsOnAllTopics();
  const a = await send();
  const type = a.headers instanceof Headers ? a.headers.get('content-type') : a.headers['content-type'];
  const body: Record<string, unknown> = 'atMs' in a ? (JSON.parse(a.body) as Record<string, unknown>) : a.body;
  expect({ status: a.status, code: body.code }).toEqual({ status, code: code ?? body.code });
  expect(type).toMatch(/^application\/problem\+json/);
  expect(typeof body.detail).toBe('string');
  expect(await recordsOnAllTopics()).toBe(before);
  return body;
}

const binaryHeaders = (id: string): [string, string][] => [
  ['content-type', 'application/json'],
  ['ce-specversion', '1.0'],
  ['ce-id', id],
  ['ce-source', 'urn:partner:edge'],
  ['ce-type', PRICE_LOADING_COMPLETED],
  ['ce-time', '2022-03-15T12:00:02Z'],
];

function withExtensions(n: number): Record<string, unknown> {
  const ev = structuredPriceEvent();
  for (let i = 0; i < n; i++) ev[`x${i}`] = 'v';
  return ev;
}

describe('kind 1: every answer on a connection belongs to its request, in order', () => {
  it('pipelining: a valid event then a malformed request on one keep-alive connection — 202 for the event first, then 400, and the event is stored', async () => {
    const before = await recordsOnAllTopics();
    const c = await openRaw(gw.url);
    const event = JSON.stringify(structuredPriceEvent({}, priceLoaded('PIP/ONE', 'M1')));
    c.write(Buffer.concat([rawPost([['content-type', STRUCTURED]], event), Buffer.from('BREW /coffee HTCPCP/1.0\r\n\r\n')]));
    const { responses } = await c.closed(10_000);
    c.destroy();
    expect(responses.map((r) => r.status)).toEqual([202, 400]);
    expect(JSON.parse(responses[0]!.body)).toMatchObject({ events: [{ topic: priceTopic }] });
    expect(responses[1]!.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(responses[1]!.body)).toMatchObject({ code: 'CEG_MALFORMED_REQUEST' });
    expect(await recordsOnAllTopics()).toBe(before + 1n);
  });
});

describe('kind 4: one partner’s oversized batch does not delay everyone', () => {
  it('a batch larger than the topic’s max.message.bytes is produced in byte-sized requests (202), while another partner’s event is answered at once', async () => {
    const events = Array.from({ length: 100 }, (_, i) => structuredPriceEvent({}, priceLoaded('BIG/USD', 'M1', String(22031500 + i))));
    expect(Buffer.byteLength(JSON.stringify(events))).toBeGreaterThan(2 * SMALL_TOPIC_BYTES);
    const t0 = performance.now();
    const big = post(JSON.stringify(events), { 'content-type': BATCH });
    const other = post(JSON.stringify(structuredPriceEvent({}, priceLoaded('OTH/USD', 'H1'))), { 'content-type': STRUCTURED }).then((a) => ({ a, ms: performance.now() - t0 }));
    const [b, o] = await Promise.all([big, other]);
    expect(b.status).toBe(202);
    expect((b.body.events as unknown[]).length).toBe(100);
    expect(o.a.status).toBe(202);
    expect(o.ms).toBeLessThan(2000); // behaviour bound with a wide margin: measured 2–9 s before the fix
  });

  it('a record larger than the topic’s max.message.bytes is refused before producing, naming the limit (413)', async () => {
    // Within the kind's bound (data + attributes ≤ 1024 bytes) but over the topic's 1100 bytes as a record.
    const ev = structuredPriceEvent({ type: SIGNAL, pad: 'p'.repeat(400) }, strategySignal('TNY/USD', 'H1'));
    const problem = await expectRefused(() => post(JSON.stringify(ev), { 'content-type': STRUCTURED }), 413, 'CEG_PAYLOAD_TOO_LARGE');
    expect(JSON.stringify(problem.violations)).toMatch(new RegExp(`takes at most ${TINY_TOPIC_BYTES} \\(max\\.message\\.bytes\\)`));
  });
});

describe('kind 5: input that slipped past the checks', () => {
  it('data_base64 carrying JSON is held to the rules of a JSON body: invalid UTF-8 refused, a BOM and text/json read as in binary mode', async () => {
    const asB64 = (b: Buffer): string => b.toString('base64');
    const json = Buffer.from(JSON.stringify(priceLoaded('B64/USD', 'H1')));
    const invalid = Buffer.concat([json.subarray(0, 20), Buffer.from([0xff, 0xfe]), json.subarray(20)]);
    const refused = await expectRefused(() => post(JSON.stringify(structuredPriceEvent({ data: undefined, data_base64: asB64(invalid) })), { 'content-type': STRUCTURED }), 400, 'CEG_INVALID_DATA');
    expect(JSON.stringify(refused.violations)).toMatch(/UTF-8/);
    for (const [ct, bytes] of [
      ['application/json', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json])],
      ['text/json', json],
    ] as const) {
      const a = await post(JSON.stringify(structuredPriceEvent({ datacontenttype: ct, data: undefined, data_base64: asB64(bytes) })), { 'content-type': STRUCTURED });
      expect({ ct, status: a.status }).toEqual({ ct, status: 202 });
      const bin = await post(bytes, { 'content-type': ct, 'ce-specversion': '1.0', 'ce-id': `bin-${ct}`, 'ce-source': 'urn:partner:edge', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z' });
      expect({ ct, status: bin.status }).toEqual({ ct, status: 202 });
    }
  });

  it('a data map key __proto__ is refused naming the field, not silently dropped', async () => {
    const data = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__22031512', bars: [], readyAt: '2022-03-15T12:00:03.123456Z' };
    const body = JSON.stringify(structuredPriceEvent({ type: CHART }, data)).replace('"readyAt"', '"series":{"__proto__":[1.5]},"readyAt"');
    const problem = await expectRefused(() => post(body, { 'content-type': STRUCTURED }), 400, 'CEG_INVALID_DATA');
    expect(problem.violations).toEqual([expect.objectContaining({ field: '/data/series/__proto__' })]);
  });

  it('duplicate JSON member names are refused (structured, batch, binary data), naming the member', async () => {
    const ev = JSON.stringify(structuredPriceEvent({ id: 'dup-1' }));
    const twice = ev.replace('"id":"dup-1"', '"id":"dup-1","id":"dup-2"');
    const p1 = await expectRefused(() => post(twice, { 'content-type': STRUCTURED }), 400);
    expect(JSON.stringify(p1.violations)).toMatch(/"field":"\/id"/);
    await expectRefused(() => post(`[${twice}]`, { 'content-type': BATCH }), 400);
    const data = JSON.stringify(priceLoaded()).replace('"barsLoaded":120', '"barsLoaded":120,"barsLoaded":7');
    const p3 = await expectRefused(() => rawRequest(gw.url, rawPost(binaryHeaders('dup-bin'), data)).then((r) => r[0]!), 400);
    expect(JSON.stringify(p3.violations)).toMatch(/\/data\/barsLoaded/);
  });

  it('more than 2,000 header lines (Node keeps only 2,000) are refused, so a repeated ce- header cannot hide past them', async () => {
    const filler: [string, string][] = Array.from({ length: 2100 }, (_, i) => [`f${i}`, '1']);
    const r = await expectRefused(() => rawRequest(gw.url, rawPost([...binaryHeaders('lines'), ...filler, ['ce-id', 'second']], JSON.stringify(priceLoaded()))).then((x) => x[0]!), 431, 'CEG_HEADERS_TOO_LARGE');
    expect(r.detail).toMatch(/2000 header lines/);
  });

  it.each([
    ['second 60 (outside or at a leap second: Java cannot read it)', '2016-12-31T23:59:60Z'],
    ['more than nine fraction digits', '2022-03-15T12:00:02.1234567891Z'],
    ['year 0000', '0000-03-15T12:00:02Z'],
  ])('time a mainstream SDK cannot read is refused: %s', async (_what, time) => {
    const problem = await expectRefused(() => post(JSON.stringify(structuredPriceEvent({ time })), { 'content-type': STRUCTURED }), 400, 'CEG_INVALID_ATTRIBUTE');
    expect(problem.violations).toEqual([expect.objectContaining({ attribute: 'time' })]);
  });

  it('schemaversion as the canonical string of an Integer is accepted in structured mode, as ce-schemaversion is in binary mode', async () => {
    expect((await post(JSON.stringify(structuredPriceEvent({ schemaversion: '1' })), { 'content-type': STRUCTURED })).status).toBe(202);
    expect((await rawRequest(gw.url, rawPost([...binaryHeaders('sv-bin'), ['ce-schemaversion', '1']], JSON.stringify(priceLoaded()))))[0]!.status).toBe(202);
    await expectRefused(() => post(JSON.stringify(structuredPriceEvent({ schemaversion: '1.0' })), { 'content-type': STRUCTURED }), 400, 'CEG_INVALID_ATTRIBUTE');
  });

  it('a partner dataschema is replaced (README), unless it names our schema base: then a registered version selects it and any other id is refused', async () => {
    const a = await post(JSON.stringify(structuredPriceEvent({ dataschema: 'https://partner.example/schemas/price.json' })), { 'content-type': STRUCTURED });
    expect(a.status).toBe(202);
    const base = gw.gateway.config.dataschemaBase;
    await expectRefused(() => post(JSON.stringify(structuredPriceEvent({ dataschema: `${base}999999999` })), { 'content-type': STRUCTURED }), 400, 'CEG_INVALID_ATTRIBUTE');
  });
});

describe('kind 6: HTTP semantics', () => {
  it('405 with Allow: POST for other methods on /events', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${gw.url}/events`, { method });
      expect({ method, status: res.status, allow: res.headers.get('allow'), type: res.headers.get('content-type') }).toEqual({ method, status: 405, allow: 'POST', type: 'application/problem+json' });
    }
  });

  it('absolute-form request targets are accepted (RFC 9112 §3.2.2)', async () => {
    const host = new URL(gw.url).host;
    const r = await rawRequest(gw.url, rawPost([['content-type', STRUCTURED], ['connection', 'close']], JSON.stringify(structuredPriceEvent()), `http://${host}/events`, host));
    expect(r[0]!.status).toBe(202);
  });

  it('Content-Encoding: gzip is decoded; other codings are refused with 415 naming them, never parsed as plain JSON', async () => {
    const ev = JSON.stringify(structuredPriceEvent());
    expect((await post(gzipSync(ev), { 'content-type': STRUCTURED, 'content-encoding': 'gzip' })).status).toBe(202);
    for (const coding of ['br', 'deflate', 'gzip, gzip', 'compress']) {
      const problem = await expectRefused(() => post(ev, { 'content-type': STRUCTURED, 'content-encoding': coding }), 415, 'CEG_UNSUPPORTED_MEDIA_TYPE');
      expect(problem).toMatchObject({ contentEncoding: coding, supported: ['identity', 'gzip'] });
    }
    await expectRefused(() => post(ev, { 'content-type': STRUCTURED, 'content-encoding': 'gzip' }), 400, 'CEG_INVALID_EVENT'); // declared gzip, is not
  });

  it('transfer codings other than chunked are answered 501', async () => {
    const body = JSON.stringify(structuredPriceEvent());
    const chunk = (s: string): string => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n0\r\n\r\n`;
    for (const te of ['gzip, chunked', 'gzip']) {
      const raw = `POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${STRUCTURED}\r\nTransfer-Encoding: ${te}\r\n\r\n${te.endsWith('chunked') ? chunk(body) : body}`;
      await expectRefused(() => rawRequest(gw.url, raw).then((r) => r[0]!), 501, 'CEG_NOT_IMPLEMENTED');
    }
  });

  it('a request that times out is answered 408 (slow body; slow headers)', async () => {
    const slowBody = await openRaw(gw.url);
    slowBody.write(`POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${STRUCTURED}\r\nContent-Length: 100\r\n\r\n{"spec`);
    const r1 = await slowBody.closed(10_000);
    expect(r1.responses.map((r) => r.status)).toEqual([408]);
    expect(JSON.parse(r1.responses[0]!.body)).toMatchObject({ code: 'CEG_REQUEST_TIMEOUT' });
    const slowHeaders = await openRaw(gw.url);
    slowHeaders.write('POST /events HTTP/1.1\r\nHost: localhost\r\n');
    const r2 = await slowHeaders.closed(10_000);
    expect(r2.responses.map((r) => r.status)).toEqual([408]);
  });

  it('Expect: 100-continue with a declared body over the limit gets 413 without 100 Continue; within the limit 100 then 202', async () => {
    const over = await openRaw(gw.url);
    over.write(`POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${STRUCTURED}\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n\r\n`);
    const r = await over.closed(5000);
    expect(r.responses.map((x) => x.status)).toEqual([413]);
    const ok = await openRaw(gw.url);
    const body = JSON.stringify(structuredPriceEvent());
    ok.write(`POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${STRUCTURED}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
    expect((await ok.responses(1, 5000)).map((x) => x.status)).toEqual([100]);
    ok.write(body);
    expect((await ok.closed(10_000)).responses.map((x) => x.status)).toEqual([100, 202]);
  });

  it('CONNECT is answered (405 problem), not left hanging', async () => {
    const r = await rawRequest(gw.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(r.map((x) => x.status)).toEqual([405]);
    expect(r[0]!.headers['content-type']).toBe('application/problem+json');
  });
});

describe('kind 7 and issue 7: every refusal names its cause; attribute limits', () => {
  it('a 415 names the media type it got and those accepted', async () => {
    const problem = await expectRefused(() => post('x', { 'content-type': 'text/plain' }), 415, 'CEG_UNSUPPORTED_MEDIA_TYPE');
    expect(problem.contentType).toBe('text/plain');
    expect(problem.supported).toEqual(expect.arrayContaining([STRUCTURED, BATCH]));
  });

  it('ingress refuses an event with 10,000 extensions in structured, batch and binary mode, fast, naming the limit', async () => {
    const t0 = performance.now();
    const s = await expectRefused(() => post(JSON.stringify(withExtensions(10_000)), { 'content-type': STRUCTURED }), 400, 'CEG_TOO_MANY_ATTRIBUTES');
    expect(s.detail).toMatch(/maxAttributes \(100\)/);
    const b = await expectRefused(() => post(JSON.stringify([structuredPriceEvent(), withExtensions(10_000)]), { 'content-type': BATCH }), 400, 'CEG_TOO_MANY_ATTRIBUTES');
    expect(b.violations).toEqual([expect.objectContaining({ index: 1, code: 'CEG_TOO_MANY_ATTRIBUTES' })]);
    // Binary mode: 10,000 ce- headers exceed the 16 KiB header bound (431); 150 fit in it and break maxAttributes.
    const many: [string, string][] = Array.from({ length: 10_000 }, (_, i) => [`ce-x${i}`, 'v']);
    await expectRefused(() => rawRequest(gw.url, rawPost([...binaryHeaders('ext-bin'), ...many], JSON.stringify(priceLoaded()))).then((r) => r[0]!), 431, 'CEG_HEADERS_TOO_LARGE');
    const some: [string, string][] = Array.from({ length: 150 }, (_, i) => [`ce-x${i}`, 'v']);
    const bin = await expectRefused(() => rawRequest(gw.url, rawPost([...binaryHeaders('ext-bin2'), ...some], JSON.stringify(priceLoaded()))).then((r) => r[0]!), 400, 'CEG_TOO_MANY_ATTRIBUTES');
    expect(bin).toMatchObject({ limit: 'maxAttributes', max: 100 });
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it('60,000 extensions are refused as fast in every mode (the check counts before it looks at attributes)', async () => {
    const t0 = performance.now();
    await expectRefused(() => post(JSON.stringify(withExtensions(60_000)), { 'content-type': STRUCTURED }), 400, 'CEG_TOO_MANY_ATTRIBUTES');
    await expectRefused(() => post(JSON.stringify([withExtensions(60_000)]), { 'content-type': BATCH }), 400, 'CEG_TOO_MANY_ATTRIBUTES');
    const many: [string, string][] = Array.from({ length: 60_000 }, (_, i) => [`ce-x${i}`, 'v']);
    await expectRefused(() => rawRequest(gw.url, rawPost([...binaryHeaders('ext-60k'), ...many], JSON.stringify(priceLoaded()))).then((r) => r[0]!), 431, 'CEG_HEADERS_TOO_LARGE');
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it('attribute bytes over maxAttributeBytes are refused (413) naming the limit', async () => {
    const ev = structuredPriceEvent();
    for (let i = 0; i < 6; i++) ev[`big${i}`] = 'b'.repeat(3000);
    const problem = await expectRefused(() => post(JSON.stringify(ev), { 'content-type': STRUCTURED }), 413, 'CEG_ATTRIBUTES_TOO_LARGE');
    expect(problem).toMatchObject({ limit: 'maxAttributeBytes', max: 16_384 });
  });

  it('a kind’s size bound counts the attributes too', async () => {
    const ev = structuredPriceEvent();
    for (let i = 0; i < 3; i++) ev[`note${i}`] = 'n'.repeat(300);
    const problem = await expectRefused(() => post(JSON.stringify(ev), { 'content-type': STRUCTURED }), 413, 'CEG_PAYLOAD_TOO_LARGE');
    expect(problem.detail).toMatch(/bytes of attributes/);
  });
});
