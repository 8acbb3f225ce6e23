/**
 * Conformance of codec/http against the `cloudevents` SDK (v10) as the reference client:
 * SDK-serialized events parse to the same attributes and data, and our encodings parse back in
 * the SDK to the same event. Spec: CloudEvents HTTP binding 1.0.2, JSON format 1.0.2.
 */
import { describe, expect, it } from 'vitest';
import { CloudEvent, HTTP } from 'cloudevents';
import type { Message } from 'cloudevents';
import { parseHttpRequest, toBatchHttp, toBinaryHttp, toStructuredHttp } from '../../src/codec/http/index.js';
import type { HttpHeaders } from '../../src/codec/http/index.js';
import { GatewayError } from '../../src/core/errors.js';
import { createEnvelope } from '../helpers/envelope.js';
import type { Envelope } from '../../src/envelope/index.js';

const LONG = 'averyveryverylongextensionname'; // 30 characters: over the SHOULD-limit of 20

/** The SDK's headers may hold numbers or booleans (extensions); HTTP carries text. */
function httpHeaders(msg: Message): HttpHeaders {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(msg.headers)) if (v !== undefined) out[k] = String(v);
  return out;
}

function bodyBytes(msg: Message): Buffer {
  const b: unknown = msg.body;
  if (typeof b === 'string') return Buffer.from(b, 'utf8');
  if (b instanceof Uint8Array) return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (b === undefined || b === null) return Buffer.alloc(0);
  throw new Error(`unexpected SDK body ${typeof b}`);
}

function parseSdk(msg: Message): Envelope {
  const r = parseHttpRequest(httpHeaders(msg), bodyBytes(msg));
  expect(r.events).toHaveLength(1);
  return r.events[0]!;
}

const unicodeData = { instrument: 'EUR/USD', note: 'Grüße € 😀 — 東京', close: 1.08345, volume: 9007199254740991, tags: ['ä', null, true] };

function sdkEvent(extra: Record<string, unknown> = {}): CloudEvent<unknown> {
  return new CloudEvent({
    id: 'evt-42',
    source: 'urn:caishen:pdsp:host-1',
    type: 'com.caishen.bar.closed',
    time: '2024-05-01T12:00:00.000Z',
    subject: 'EUR-USD_H4',
    datacontenttype: 'application/json',
    dataschema: 'https://schemas.caishen.example/ids/7',
    correlationid: 'corr-1',
    partitionkey: 'EUR-USD_H4',
    [LONG]: 'long-name-ok',
    data: unicodeData,
    ...extra,
  });
}

const expectedAttributes = {
  specversion: '1.0',
  id: 'evt-42',
  source: 'urn:caishen:pdsp:host-1',
  type: 'com.caishen.bar.closed',
  time: '2024-05-01T12:00:00.000Z',
  subject: 'EUR-USD_H4',
  datacontenttype: 'application/json',
  dataschema: 'https://schemas.caishen.example/ids/7',
  correlationid: 'corr-1',
  partitionkey: 'EUR-USD_H4',
  [LONG]: 'long-name-ok',
};

describe('SDK → codec: binary mode (HTTP.binary)', () => {
  it('gives the same attributes, long extension names and unicode JSON data', () => {
    const env = parseSdk(HTTP.binary(sdkEvent()));
    expect(env.attributes).toEqual(expectedAttributes);
    expect(env.data).toEqual({ kind: 'json', value: unicodeData });
  });

  it('reads Integer and Boolean extensions as their canonical strings (binary mode carries no type), schemaversion as Integer', () => {
    const env = parseSdk(HTTP.binary(sdkEvent({ schemaversion: 3, count: 7, flag: false })));
    expect(env.attributes.schemaversion).toBe(3);
    expect(env.attributes.count).toBe('7');
    expect(env.attributes.flag).toBe('false');
  });

  it('accepts raw spaces the SDK does not percent-encode', () => {
    expect(parseSdk(HTTP.binary(sdkEvent({ subject: 'EUR USD H4' }))).attributes.subject).toBe('EUR USD H4');
  });

  it('refuses the raw non-ASCII header value the SDK sends (binding §3.1.3.2 requires percent-encoding), naming the attribute', () => {
    const msg = HTTP.binary(sdkEvent({ subject: 'Grüße' }));
    expect(msg.headers['ce-subject']).toBe('Grüße'); // the SDK does not percent-encode
    try {
      parseSdk(msg);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).details.attribute).toBe('subject');
    }
  });

  it('keeps binary data as exact bytes', () => {
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 253, 254, 255]);
    const env = parseSdk(HTTP.binary(sdkEvent({ datacontenttype: 'application/octet-stream', data: bytes })));
    expect(env.data?.kind).toBe('binary');
    expect(Buffer.from((env.data as { bytes: Uint8Array }).bytes)).toEqual(bytes);
    expect(env.attributes.datacontenttype).toBe('application/octet-stream');
  });

  it('reads an event without data', () => {
    const env = parseSdk(HTTP.binary(new CloudEvent({ id: 'a', source: '/s', type: 't', time: '2024-05-01T12:00:00.000Z' })));
    expect(env.data).toBeUndefined();
    expect(env.attributes).toMatchObject({ id: 'a', source: '/s', type: 't' });
  });
});

describe('SDK → codec: structured mode (HTTP.structured)', () => {
  it('gives the same attributes, unicode data and typed extensions', () => {
    const env = parseSdk(HTTP.structured(sdkEvent({ schemaversion: 3, count: 7, flag: true, subject: 'Grüße € 😀' })));
    expect(env.attributes).toEqual({ ...expectedAttributes, subject: 'Grüße € 😀', schemaversion: 3, count: 7, flag: true });
    expect(env.data).toEqual({ kind: 'json', value: unicodeData });
  });

  it('decodes data_base64 to the exact bytes', () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const env = parseSdk(HTTP.structured(sdkEvent({ datacontenttype: 'application/octet-stream', data: bytes })));
    expect(Buffer.from((env.data as { bytes: Uint8Array }).bytes)).toEqual(bytes);
  });

  it('reads an SDK-built batch (JSON array of structured events)', () => {
    const a = sdkEvent({ id: 'a' });
    const b = sdkEvent({ id: 'b', data: 'just a string' });
    const r = parseHttpRequest({ 'content-type': 'application/cloudevents-batch+json' }, Buffer.from(JSON.stringify([a, b])));
    expect(r.mode).toBe('batch');
    expect(r.events.map((e) => e.attributes.id)).toEqual(['a', 'b']);
    expect(r.events[1]!.data).toEqual({ kind: 'json', value: 'just a string' });
  });
});

/** What the SDK makes of our message. */
function sdkParse(headers: Readonly<Record<string, string>>, body: Buffer): CloudEvent<unknown> {
  const ev = HTTP.toEvent({ headers: { ...headers }, body: body.toString('utf8') });
  if (Array.isArray(ev)) throw new Error('expected one event');
  return ev as CloudEvent<unknown>;
}

const ours: Envelope = createEnvelope(
  {
    type: 'com.caishen.bar.closed',
    source: 'urn:caishen:pdsp:host-1',
    id: 'evt-7',
    time: '2024-05-01T12:00:00.000Z',
    subject: 'EUR-USD_H4',
    datacontenttype: 'application/json',
    correlationid: 'corr-9',
    causationid: 'evt-6',
    runid: 'run-1',
    schemaversion: 2,
    partitionkey: 'EUR-USD_H4',
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    [LONG]: 'x',
  },
  { kind: 'json', value: unicodeData },
);

describe('codec → SDK', () => {
  it('toBinaryHttp parses in HTTP.toEvent to the same event (ASCII attribute values)', () => {
    const m = toBinaryHttp(ours);
    const ev = sdkParse(m.headers, m.body);
    const { schemaversion, ...rest } = ours.attributes;
    for (const [k, v] of Object.entries(rest)) expect((ev as unknown as Record<string, unknown>)[k], k).toBe(v);
    // binary mode carries no type: the SDK reads the Integer as its canonical string
    expect((ev as unknown as Record<string, unknown>).schemaversion).toBe(String(schemaversion));
    expect(ev.data).toEqual(unicodeData);
  });

  it('toBinaryHttp percent-encodes what the SDK leaves raw; our parser restores it', () => {
    const env = createEnvelope({ type: 't', source: 's', subject: 'Grüße € 😀 "x" 50%' });
    const m = toBinaryHttp(env);
    expect(m.headers['ce-subject']).toBe('Gr%C3%BC%C3%9Fe%20%E2%82%AC%20%F0%9F%98%80%20%22x%22%2050%25');
    expect(parseHttpRequest(m.headers, m.body).events[0]!.attributes.subject).toBe('Grüße € 😀 "x" 50%');
  });

  it('toStructuredHttp parses in HTTP.toEvent to the same event, unicode included', () => {
    const env = createEnvelope({ ...(ours.attributes as Record<string, string | number>), subject: 'Grüße € 😀' }, ours.data);
    const m = toStructuredHttp(env);
    const ev = sdkParse(m.headers, m.body);
    for (const [k, v] of Object.entries(env.attributes)) expect((ev as unknown as Record<string, unknown>)[k], k).toBe(v);
    expect(ev.data).toEqual(unicodeData);
  });

  it('toStructuredHttp binary data parses in the SDK to the same bytes', () => {
    const bytes = new Uint8Array([0, 128, 255, 7]);
    const env = createEnvelope({ type: 't', source: 's', datacontenttype: 'application/octet-stream' }, { kind: 'binary', bytes });
    const m = toStructuredHttp(env);
    const ev = sdkParse(m.headers, m.body);
    expect(Array.from(ev.data as ArrayLike<number>)).toEqual([0, 128, 255, 7]);
  });

  it('toBatchHttp parses in HTTP.toEvent to the same events', () => {
    const b = createEnvelope({ type: 'u', source: 's', id: 'b', time: '2024-05-01T12:00:01.000Z' }, { kind: 'json', value: { n: 1 } });
    const m = toBatchHttp([ours, b]);
    const evs = HTTP.toEvent({ headers: { ...m.headers }, body: m.body.toString('utf8') });
    expect(Array.isArray(evs)).toBe(true);
    const list = evs as CloudEvent<unknown>[];
    expect(list.map((e) => e.id)).toEqual(['evt-7', 'b']);
    expect(list[1]!.data).toEqual({ n: 1 });
  });
});
