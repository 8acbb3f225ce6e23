import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHttpRequest, parseStructuredEvent, payloadTooLarge } from '../../../src/codec/http/index.js';
import { caught, json, violations } from './helpers.js';

const SJ = { 'content-type': 'application/cloudevents+json' };
const BJ = { 'content-type': 'application/cloudevents-batch+json' };
const ev = { specversion: '1.0', id: 'evt-1', source: 'urn:caishen:pdsp:host-1', type: 'com.caishen.bar.closed' };

describe('structured mode', () => {
  it('reads attributes in their JSON types and data as JSON', () => {
    const r = parseHttpRequest(SJ, json({ ...ev, schemaversion: 2, flag: true, time: '2024-05-01T12:00:00.5-03:00', data: { close: 1.25 } }));
    expect(r.mode).toBe('structured');
    expect(r.events[0]).toEqual({
      attributes: { ...ev, schemaversion: 2, flag: true, time: '2024-05-01T12:00:00.5-03:00' },
      data: { kind: 'json', value: { close: 1.25 } },
    });
  });

  it('matches the media type case-insensitively with parameters', () => {
    for (const ct of ['Application/CloudEvents+JSON; charset=UTF-8', 'application/cloudevents+json;charset="utf-8"']) {
      expect(parseHttpRequest({ 'Content-Type': ct }, json(ev)).mode, ct).toBe('structured');
    }
  });

  it('decodes data_base64 to the exact bytes', () => {
    const bytes = Buffer.from([0, 255, 1, 254, 128]);
    const r = parseHttpRequest(SJ, json({ ...ev, datacontenttype: 'application/octet-stream', data_base64: bytes.toString('base64') }));
    const data = r.events[0]!.data as { kind: string; bytes: Uint8Array };
    expect(data.kind).toBe('binary');
    expect(Buffer.from(data.bytes)).toEqual(bytes);
  });

  it('refuses data and data_base64 together', () => {
    const err = caught(() => parseHttpRequest(SJ, json({ ...ev, data: 1, data_base64: 'AA==' })));
    expect(violations(err)).toEqual([{ field: '/data_base64', reason: expect.stringMatching(/both/) }]);
  });

  it.each(['A', 'AA=A', 'AA A', 'AA-_', 'AAA==='])('refuses invalid base64 %j naming data_base64', (b64) => {
    const err = caught(() => parseHttpRequest(SJ, json({ ...ev, data_base64: b64 })));
    expect(err.code).toBe('CEG_INVALID_DATA');
    expect(violations(err)).toEqual([{ field: '/data_base64', reason: expect.stringMatching(/base64/) }]);
  });

  it('treats null attributes as unset and keeps explicit null data', () => {
    const r = parseHttpRequest(SJ, json({ ...ev, subject: null, data: null }));
    expect(r.events[0]!.attributes).toEqual(ev);
    expect(r.events[0]!.data).toEqual({ kind: 'json', value: null });
  });

  it('no data member means no data', () => {
    expect(parseHttpRequest(SJ, json(ev)).events[0]!.data).toBeUndefined();
  });

  it('keeps a string data with a non-JSON datacontenttype as its UTF-8 bytes', () => {
    const r = parseHttpRequest(SJ, json({ ...ev, datacontenttype: 'application/xml', data: '<a>€</a>' }));
    expect(Buffer.from((r.events[0]!.data as { bytes: Uint8Array }).bytes).toString('utf8')).toBe('<a>€</a>');
  });

  it('refuses non-string data with a non-JSON datacontenttype', () => {
    const err = caught(() => parseHttpRequest(SJ, json({ ...ev, datacontenttype: 'text/plain', data: { a: 1 } })));
    expect(violations(err)).toEqual([{ field: '/data', reason: expect.any(String) }]);
  });

  it('refuses an array body, naming the body', () => {
    const err = caught(() => parseHttpRequest(SJ, json([ev])));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(violations(err)).toEqual([{ field: 'body', reason: expect.stringMatching(/cloudevents-batch\+json/) }]);
  });

  it('refuses a body that is not JSON, naming the body', () => {
    const err = caught(() => parseHttpRequest(SJ, Buffer.from('{nope')));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(err.details.field).toBe('body');
  });

  it('refuses attribute values of the wrong JSON type', () => {
    const err = caught(() => parseHttpRequest(SJ, json({ ...ev, schemaversion: '2.0', id: 5, ext: { a: 1 }, ratio: 0.5 })));
    expect(err.code).toBe('CEG_INVALID_ATTRIBUTE');
    expect(violations(err).map((v) => v.attribute)).toEqual(['id', 'schemaversion', 'ext', 'ratio']);
  });

  it('refuses an unsafe integer attribute advising a string', () => {
    const err = caught(() => parseHttpRequest(SJ, Buffer.from(`{"specversion":"1.0","id":"a","source":"s","type":"t","seq":12345678901234567890}`)));
    expect(violations(err)).toEqual([{ attribute: 'seq', reason: expect.stringMatching(/send it as a string/) }]);
  });

  it('refuses non-finite numbers in data by pointer, and leaves large integers to the schema (a double takes 1e16)', () => {
    const err = caught(() => parseHttpRequest(SJ, Buffer.from(`{"specversion":"1.0","id":"a","source":"s","type":"t","data":{"volume":1e400}}`)));
    expect(err.code).toBe('CEG_INVALID_DATA');
    expect(violations(err)).toEqual([{ field: '/data/volume', reason: 'number is not finite' }]);
    const r = parseHttpRequest(SJ, Buffer.from(`{"specversion":"1.0","id":"a","source":"s","type":"t","data":{"volume":9007199254740993,"confidence":1e16}}`));
    expect(r.events[0]!.data).toEqual({ kind: 'json', value: { volume: 9007199254740992, confidence: 1e16 } });
  });

  it('refuses bad attribute names, including __proto__', () => {
    const err = caught(() => parseHttpRequest(SJ, Buffer.from(`{"specversion":"1.0","id":"a","source":"s","type":"t","__proto__":{"x":1},"Caps":"v"}`)));
    expect(violations(err).map((v) => v.attribute)).toEqual(['__proto__', 'Caps']);
  });

  it('keeps time verbatim and refuses one without offset', () => {
    expect(parseHttpRequest(SJ, json({ ...ev, time: '2024-05-01T12:00:00.123456789+14:00' })).events[0]!.attributes.time).toBe(
      '2024-05-01T12:00:00.123456789+14:00',
    );
    const err = caught(() => parseHttpRequest(SJ, json({ ...ev, time: '2024-05-01T12:00:00' })));
    expect(err.details.attribute).toBe('time');
  });

  it('refuses a non-UTF-8 charset, unless it is a superset of US-ASCII and the body is all ASCII', () => {
    expect(caught(() => parseHttpRequest({ 'content-type': 'application/cloudevents+json; charset=utf-16' }, json(ev))).code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    expect(caught(() => parseHttpRequest({ 'content-type': 'application/cloudevents+json; charset=latin1' }, json({ ...ev, subject: 'é' }))).code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    expect(parseHttpRequest({ 'content-type': 'application/cloudevents+json; charset=latin1' }, json(ev)).events[0]!.attributes).toEqual(ev);
  });

  it('parseStructuredEvent reads text or bytes', () => {
    expect(parseStructuredEvent(JSON.stringify({ ...ev, data: 'x' })).data).toEqual({ kind: 'json', value: 'x' });
    expect(parseStructuredEvent(json(ev)).attributes).toEqual(ev);
    expect(caught(() => parseStructuredEvent('[]')).details.field).toBe('body');
  });
});

describe('batch mode', () => {
  it('reads every event in order', () => {
    const r = parseHttpRequest(BJ, json([{ ...ev, id: 'a', data: 1 }, { ...ev, id: 'b', data_base64: 'AQI=' }]));
    expect(r.mode).toBe('batch');
    expect(r.events.map((e) => e.attributes.id)).toEqual(['a', 'b']);
    expect(r.events[0]!.data).toEqual({ kind: 'json', value: 1 });
    expect(Array.from((r.events[1]!.data as { bytes: Uint8Array }).bytes)).toEqual([1, 2]);
  });

  it('accepts an empty batch', () => {
    expect(parseHttpRequest(BJ, json([]))).toEqual({ mode: 'batch', events: [] });
  });

  it('lists every bad event by index with all of its violations', () => {
    const body = Buffer.from(
      json([
        { ...ev, id: 'ok' },
        { ...ev, id: '', time: 'noon' },
        'not an object',
        { specversion: '1.0', id: 'x', source: 's' },
        { ...ev, data: { n: 'BIG' } },
      ])
        .toString()
        .replace('"BIG"', '1e400'),
    );
    const err = caught(() => parseHttpRequest(BJ, body));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(violations(err)).toEqual([
      { attribute: 'id', index: 1, reason: 'must be a non-empty string' },
      { attribute: 'time', index: 1, reason: expect.stringMatching(/RFC 3339/) },
      { field: '/2', index: 2, reason: expect.stringMatching(/JSON object/) },
      { attribute: 'type', index: 3, reason: 'required attribute is missing' },
      { field: '/data/n', index: 4, reason: 'number is not finite' },
    ]);
    expect(err.details.index).toBe(1);
  });

  it('property: an entry that is not an object is named by its JSON pointer in the body (/<index>, RFC 6901), with its index', () => {
    const notObject = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 }));
    fc.assert(
      fc.property(fc.array(fc.option(notObject, { nil: undefined }), { minLength: 1, maxLength: 8 }), (slots) => {
        const entries = slots.map((x, i) => (x === undefined ? { ...ev, id: `e${i}` } : x));
        const bad = slots.flatMap((x, i) => (x === undefined ? [] : [i]));
        if (bad.length === 0) return;
        const err = caught(() => parseHttpRequest(BJ, json(entries)));
        expect(violations(err)).toEqual(bad.map((i) => ({ field: `/${i}`, index: i, reason: 'a structured CloudEvent must be a JSON object' })));
      }),
    );
  });

  it('uses the attribute code when no element is malformed', () => {
    const err = caught(() => parseHttpRequest(BJ, json([{ ...ev }, { ...ev, schemaversion: -1 }])));
    expect(err.code).toBe('CEG_INVALID_ATTRIBUTE');
    expect(violations(err)).toEqual([{ attribute: 'schemaversion', index: 1, reason: expect.any(String) }]);
  });

  it('refuses a body that is not an array', () => {
    const err = caught(() => parseHttpRequest(BJ, json(ev)));
    expect(violations(err)).toEqual([{ field: 'body', reason: expect.stringMatching(/array/) }]);
  });

  it('bounds the number of events', () => {
    const err = caught(() => parseHttpRequest(BJ, json([ev, ev, ev]), { maxBatchEvents: 2 }));
    expect(err.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(err.details).toMatchObject({ maxBatchEvents: 2, events: 3 });
  });
});

describe('mode detection and bounds', () => {
  it('415 for a plain JSON request without ce- headers', () => {
    const err = caught(() => parseHttpRequest({ 'content-type': 'application/json' }, json(ev)));
    expect(err.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    expect(err.retriable).toBe(false);
    expect(err.details.contentType).toBe('application/json');
  });

  it('415 without any Content-Type or ce- header', () => {
    expect(caught(() => parseHttpRequest({}, Buffer.alloc(0))).code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
  });

  it('415 for an unsupported event format, even with ce- headers', () => {
    const err = caught(() => parseHttpRequest({ 'content-type': 'application/cloudevents+avro', 'ce-specversion': '1.0' }, Buffer.from('x')));
    expect(err.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    expect(err.message).toMatch(/cloudevents\+avro/);
  });

  it('413 when the body exceeds maxBodyBytes', () => {
    const err = caught(() => parseHttpRequest(SJ, json(ev), { maxBodyBytes: 10 }));
    expect(err.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(err.details).toMatchObject({ field: 'body', maxBytes: 10 });
    expect(payloadTooLarge(5, 6).details).toEqual({ field: 'body', maxBytes: 5, receivedBytes: 6 });
  });
});
