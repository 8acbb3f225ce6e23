import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { secretsKeyMissing } from '../../../src/bus/subscriptions/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import {
  decodeHeaderValue,
  encodeHeaderValue,
  parseHttpRequest,
  parseMediaType,
  problemContentType,
  toBatchHttp,
  toBinaryHttp,
  toProblem,
  toStructuredHttp,
  toStructuredJson,
} from '../../../src/codec/http/index.js';
import { createEnvelope, deepFreeze } from '../../helpers/envelope.js';
import type { Envelope } from '../../../src/envelope/index.js';
import { caught, ceHeaders } from './helpers.js';

describe('header values', () => {
  it('percent-encodes space, quote, percent and non-ASCII, upper-case hex', () => {
    expect(encodeHeaderValue('Euro € 😀')).toBe('Euro%20%E2%82%AC%20%F0%9F%98%80');
    expect(encodeHeaderValue('a"b%c')).toBe('a%22b%25c');
    expect(encodeHeaderValue('tab\there')).toBe('tab%09here');
    expect(encodeHeaderValue('urn:caishen:pdsp:host-1')).toBe('urn:caishen:pdsp:host-1');
  });

  it('round-trips any valid string', () => {
    for (const s of ['', 'plain', 'Euro € 😀', '%41', '"quoted"', 'ü\u{10FFFD}~!#$&']) {
      expect(decodeHeaderValue(encodeHeaderValue(s))).toEqual({ ok: true, value: s });
    }
  });

  it('any string of whole code points (control characters, CR LF, non-ASCII included) encodes to a value a header can carry, and decodes back to itself', () => {
    // A value goes out as a ce- header of a webhook push: nothing may end the header line early or be refused by Node's HTTP client.
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => {
        const encoded = encodeHeaderValue(s);
        expect(encoded).toMatch(/^[\x21-\x7e]*$/);
        expect(decodeHeaderValue(encoded)).toEqual({ ok: true, value: s });
      }),
      { numRuns: 2000 },
    );
  });

  it('trims surrounding whitespace', () => {
    expect(decodeHeaderValue('  a b \t')).toEqual({ ok: true, value: 'a b' });
  });
});

describe('parseMediaType', () => {
  it('lowercases type, subtype and parameter names, keeps parameter values', () => {
    expect(parseMediaType('Application/Cloudevents+JSON ; Charset="UTF-8"')).toEqual({
      type: 'application',
      subtype: 'cloudevents+json',
      essence: 'application/cloudevents+json',
      params: { charset: 'UTF-8' },
    });
  });

  it('refuses malformed values', () => {
    for (const bad of ['json', '/json', 'application/', 'a b/c', 'a/b; x', 'a/b; =y']) expect(parseMediaType(bad), bad).toBeUndefined();
  });
});

const full: Envelope = createEnvelope(
  {
    type: 'com.caishen.bar.closed',
    source: 'urn:caishen:pdsp:host-1',
    id: 'id 1',
    time: '2024-05-01T12:00:00+02:00',
    subject: 'EUR/USD € "H4"',
    schemaversion: 3,
    flag: true,
    averyveryverylongextensionname: 'long',
    datacontenttype: 'application/json',
  },
  { kind: 'json', value: { close: 1.25, name: 'ünï', list: [1, null, true] } },
);

describe('toBinaryHttp', () => {
  it('writes percent-encoded ce- headers and Content-Type', () => {
    const m = toBinaryHttp(full);
    expect(m.headers).toEqual({
      'ce-specversion': '1.0',
      'ce-id': 'id%201',
      'ce-type': 'com.caishen.bar.closed',
      'ce-source': 'urn:caishen:pdsp:host-1',
      'ce-time': '2024-05-01T12:00:00+02:00',
      'ce-subject': 'EUR/USD%20%E2%82%AC%20%22H4%22',
      'ce-schemaversion': '3',
      'ce-flag': 'true',
      'ce-averyveryverylongextensionname': 'long',
      'content-type': 'application/json',
    });
    expect(JSON.parse(m.body.toString('utf8'))).toEqual({ close: 1.25, name: 'ünï', list: [1, null, true] });
  });

  it('round-trips through the parser (flag comes back as a String: unknown extension)', () => {
    const m = toBinaryHttp(full);
    const back = parseHttpRequest(m.headers, m.body).events[0]!;
    expect(back).toEqual({ attributes: { ...full.attributes, flag: 'true' }, data: full.data });
  });

  it('defaults Content-Type to application/json for JSON data without datacontenttype', () => {
    const env = createEnvelope({ type: 't', source: 's' }, { kind: 'json', value: 'text' });
    const m = toBinaryHttp(env);
    expect(m.headers['content-type']).toBe('application/json');
    expect(m.body.toString()).toBe('"text"');
  });

  it('sends binary data as is and no data as an empty body', () => {
    const bin = createEnvelope({ type: 't', source: 's', datacontenttype: 'image/png' }, { kind: 'binary', bytes: new Uint8Array([137, 80, 78, 71]) });
    const m = toBinaryHttp(bin);
    expect(Array.from(m.body)).toEqual([137, 80, 78, 71]);
    expect(m.headers['content-type']).toBe('image/png');
    const back = parseHttpRequest(m.headers, m.body).events[0]!;
    expect(Array.from((back.data as { bytes: Uint8Array }).bytes)).toEqual([137, 80, 78, 71]);
    const none = toBinaryHttp(createEnvelope({ type: 't', source: 's' }));
    expect(none.body.length).toBe(0);
    expect(none.headers['content-type']).toBeUndefined();
  });

  it('sends a string with a text media type as its UTF-8', () => {
    const env = deepFreeze<Envelope>({ attributes: { specversion: '1.0', id: 'a', source: 's', type: 't', datacontenttype: 'text/plain' }, data: { kind: 'json', value: 'héllo' } });
    expect(toBinaryHttp(env).body.toString('utf8')).toBe('héllo');
    const bad = deepFreeze<Envelope>({ attributes: { specversion: '1.0', id: 'a', source: 's', type: 't', datacontenttype: 'text/plain' }, data: { kind: 'json', value: { a: 1 } } });
    expect(caught(() => toBinaryHttp(bad)).code).toBe('CEG_INVALID_DATA');
  });
});

describe('toStructuredHttp / toBatchHttp', () => {
  it('writes attributes in JSON types and data as JSON', () => {
    const m = toStructuredHttp(full);
    expect(m.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
    expect(JSON.parse(m.body.toString('utf8'))).toEqual({ ...full.attributes, data: (full.data as { value: unknown }).value });
    expect(parseHttpRequest(m.headers, m.body).events[0]).toEqual(full);
  });

  it('writes binary data as data_base64 and round-trips exact bytes', () => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    const env = createEnvelope({ type: 't', source: 's', datacontenttype: 'application/octet-stream' }, { kind: 'binary', bytes });
    expect(toStructuredJson(env).data_base64).toBe(Buffer.from(bytes).toString('base64'));
    const back = parseHttpRequest(toStructuredHttp(env).headers, toStructuredHttp(env).body).events[0]!;
    expect(Buffer.from((back.data as { bytes: Uint8Array }).bytes)).toEqual(Buffer.from(bytes));
  });

  it('round-trips a batch', () => {
    const a = createEnvelope({ type: 't', source: 's' }, { kind: 'json', value: [1] });
    const b = createEnvelope({ type: 'u', source: 's' });
    const m = toBatchHttp([a, b]);
    expect(parseHttpRequest(m.headers, m.body)).toEqual({ mode: 'batch', events: [a, b] });
  });
});

describe('toProblem', () => {
  it('maps validation errors to 400 with every violation', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'ce-time': 'noon', 'ce-schemaversion': 'x' }, Buffer.alloc(0)));
    const p = toProblem(err, '/events');
    expect(p).toEqual({
      type: 'urn:ce-gateway:error:CEG_INVALID_ATTRIBUTE',
      title: 'Invalid CloudEvent attribute',
      status: 400,
      detail: err.message,
      code: 'CEG_INVALID_ATTRIBUTE',
      retriable: false,
      violations: [
        { attribute: 'time', reason: expect.any(String) },
        { attribute: 'schemaversion', reason: expect.any(String) },
      ],
      instance: '/events',
    });
    expect(problemContentType).toBe('application/problem+json');
  });

  it.each([
    ['CEG_MISSING_ATTRIBUTE', false, 400],
    ['CEG_INVALID_DATA', false, 400],
    ['CEG_INVALID_EVENT', false, 400],
    ['CEG_PAYLOAD_TOO_LARGE', false, 413],
    ['CEG_UNSUPPORTED_MEDIA_TYPE', false, 415],
    ['CEG_BROKER_UNAVAILABLE', true, 503],
    ['CEG_REGISTRY_UNAVAILABLE', true, 503],
    ['CEG_QUEUE_FULL', true, 503],
    ['CEG_SCHEMA_NOT_FOUND', true, 503],
    ['CEG_SCHEMA_INCOMPATIBLE', false, 409],
    ['CEG_INVALID_OPTIONS', false, 500],
    // Codes answered 503 when retriable, raised not retriable (a broker refusing the gateway's
    // credentials, a client error the transport could not place): 500, never a 503 saying "not retriable".
    ['CEG_BROKER_UNAVAILABLE', false, 500],
    ['CEG_REGISTRY_UNAVAILABLE', false, 500],
    ['CEG_STORE_UNAVAILABLE', false, 500],
    ['CEG_REPLAY_FAILED', false, 500],
    ['CEG_CLOSED', false, 500],
  ] as const)('%s (retriable %s) → %i', (code, retriable, status) => {
    expect(toProblem(new GatewayError(code, 'm', { retriable })).status).toBe(status);
  });

  it('names a single attribute or field when there is no violation list', () => {
    const p = toProblem(new GatewayError('CEG_PARTITION_KEY_MISMATCH', 'partitionkey differs', { retriable: false, details: { attribute: 'partitionkey' } }));
    expect(p.violations).toEqual([{ attribute: 'partitionkey', reason: 'partitionkey differs' }]);
    expect(p.instance).toBeUndefined();
  });

  it('does not leak internals of a non-retriable server error', () => {
    const p = toProblem(new GatewayError('CEG_CATALOG_INVALID', 'secret path /etc/x', { retriable: false }));
    expect(p.status).toBe(500);
    expect(p.detail).not.toContain('/etc/x');
  });

  it('tells a missing SUBSCRIPTION_SECRETS_KEY (500, not retriable: waiting does not give the gateway a key): the deployment\'s state, naming the setting', () => {
    const p = toProblem(secretsKeyMissing('push subscriptions seal their webhook secrets with it'));
    expect(p).toMatchObject({ status: 500, retriable: false });
    expect(p.detail).toMatch(/^SUBSCRIPTION_SECRETS_KEY \(or SUBSCRIPTION_SECRETS_KEY_FILE\) is required/);
  });

  it('keeps the message of a retriable error (it says what to retry)', () => {
    expect(toProblem(new GatewayError('CEG_BROKER_UNAVAILABLE', 'broker unreachable; retry', { retriable: true })).detail).toBe('broker unreachable; retry');
  });
});
