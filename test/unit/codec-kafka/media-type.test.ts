/**
 * A Kafka record's `content-type` (its datacontenttype, or the structured mode's marker) is read by
 * the envelope's one media-type parser, as the ingress reads a Content-Type: a parameter given
 * twice (RFC 6838 §4.3) or a list is poison naming `datacontenttype` (it was last-wins, and a list
 * starting with application/cloudevents+json was taken for structured mode); `application/+json`
 * is not JSON (RFC 6838 §4.2.8). Break report 2026-12-06.
 */
import { describe, expect, it } from 'vitest';
import { fromRecord } from '../../../src/codec/kafka/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import type { TransportRecord } from '../../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED } from '../../fixtures/events.js';
import { codecFixture } from '../bus/helpers.js';
import { caughtAsync as rejection } from '../../helpers/errors.js';

const enc = new TextEncoder();
const required: [string, string][] = [['ce_specversion', '1.0'], ['ce_id', 'e1'], ['ce_source', 'urn:x'], ['ce_type', 'k']];

function record(headers: [string, string][], value: Uint8Array | null = enc.encode('v')): TransportRecord {
  return { topic: 't', partition: 0, offset: 7n, timestampMs: 0, key: null, value, headers: headers.map(([k, v]) => [k, enc.encode(v)] as const) };
}

function thrown(f: () => unknown): GatewayError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    return e as GatewayError;
  }
  throw new Error('expected a throw');
}

describe('a Kafka record content-type, read by the one parser', () => {
  it('a parameter given twice, in either order and any case: poison naming datacontenttype', () => {
    for (const ct of ['application/json; charset=latin1; charset=utf-8', 'application/json; CHARSET=utf-8; charset=latin1']) {
      const err = thrown(() => fromRecord(record([...required, ['content-type', ct]])));
      expect(err.code).toBe('CEG_INVALID_EVENT');
      expect(err.retriable).toBe(false);
      expect(err.details).toMatchObject({ attribute: 'datacontenttype', topic: 't', offset: '7' });
      expect(err.message).toMatch(/charset more than once/);
    }
  });

  it('a list is poison, not the structured mode', () => {
    const err = thrown(() => fromRecord(record([['content-type', 'application/cloudevents+json; q=1, text/plain']], enc.encode('{}'))));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(err.details.attribute).toBe('datacontenttype');
  });

  it('structured data_base64 under application/+json is not read as JSON (RFC 6838 §4.2.8)', async () => {
    const { codec } = await codecFixture();
    const json = JSON.stringify({ specversion: '1.0', id: 's1', source: 'urn:x', type: PRICE_LOADING_COMPLETED, datacontenttype: 'application/+json', data_base64: Buffer.from('{"a":1}').toString('base64') });
    const err = await rejection(codec.fromRecord(record([['content-type', 'application/cloudevents+json']], enc.encode(json))));
    expect(err.code).toBe('CEG_INVALID_DATA');
  });

  it('structured data_base64 declared JSON with a member name twice is poison naming it, as the ingress refuses it (RFC 8259 §4)', async () => {
    const { codec } = await codecFixture();
    const data = '{"instrument":"EUR/USD","instrument":"GBP/USD"}';
    const json = JSON.stringify({ specversion: '1.0', id: 's2', source: 'urn:x', type: PRICE_LOADING_COMPLETED, datacontenttype: 'application/json', data_base64: Buffer.from(data).toString('base64') });
    const err = await rejection(codec.fromRecord(record([['content-type', 'application/cloudevents+json']], enc.encode(json))));
    expect(err.code).toBe('CEG_INVALID_DATA');
    expect(err.retriable).toBe(false);
    expect(err.details.field).toBe('data_base64/instrument');
    expect(err.message).toContain('"instrument" appears more than once');
  });

  it('content-type is held to the datacontenttype rule as the ingress holds it: a control character (a tab inside, U+0085 quoted) is poison', () => {
    // The HTTP ingress answers 400 for these as Content-Type (binary mode) and as datacontenttype;
    // a record from another producer carrying them was read and delivered.
    // Twice each: the second record meets the answer remembered for its content-type.
    for (const ct of ['application/json;\tcharset=utf-8', 'application/json; n="\u0085"', 'application/json; n="a\tb"', 'application/json;\tcharset=utf-8']) {
      const err = thrown(() => fromRecord(record([...required, ['content-type', ct]])));
      expect(err.code, JSON.stringify(ct)).toBe('CEG_INVALID_EVENT');
      expect(err.retriable).toBe(false);
      expect(err.details).toMatchObject({ attribute: 'datacontenttype', topic: 't', offset: '7' });
    }
    // What the ingress takes still reads: obs-text in a quoted value, spaces.
    for (const ct of ['application/json; n="\u00e9"', 'application/json ; charset=utf-8 ', 'application/json; n="\u00e9"']) {
      const read = fromRecord(record([...required, ['content-type', ct]]));
      expect(read.mode === 'binary' ? read.attributes.datacontenttype : undefined).toBe(ct);
    }
  });
});
