/**
 * Generated poison records for the consumer side: records a foreign producer could write to a
 * catalog topic, each of which a subscription must dead-letter with a reason (never stall on,
 * never crash on). Each case carries the CloudEvents id it is identified by on the dead-letter
 * topic (`ce_id`, or `dlq_source_offset` where it has none).
 */
import { randomBytes } from 'node:crypto';
import type { EventCodec } from '../../src/codec/event/index.js';
import { encodeAvroFramed } from '../../src/codec/data/index.js';
import type { RecordHeader } from '../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED, priceLoaded, seriesUpdated } from '../fixtures/events.js';
import { SERIES_UPDATE_COMPLETED } from '../../src/catalog/generated/index.js';

const enc = new TextEncoder();

/** One poison record: its name, headers and value (the key is the caller's). */
export interface PoisonCase {
  readonly name: string;
  readonly headers: readonly RecordHeader[];
  readonly value: Uint8Array | null;
}

/** Binary-mode headers of a valid price event with this id, `over` replacing or (undefined) dropping some. */
export function ceHeaders(id: string, over: Record<string, Uint8Array | string | undefined> = {}): RecordHeader[] {
  const base: Record<string, Uint8Array | string | undefined> = { ce_specversion: '1.0', ce_id: id, ce_source: 'urn:brk', ce_type: PRICE_LOADING_COMPLETED, ...over };
  const out: RecordHeader[] = [];
  for (const [k, v] of Object.entries(base)) if (v !== undefined) out.push([k, typeof v === 'string' ? enc.encode(v) : v]);
  return out;
}

/** A valid framed Avro value of a price event (the catalog's latest schema id). */
export function goodPriceValue(codec: EventCodec, instrument = 'BRK/USD'): Uint8Array {
  const b = codec.binding(PRICE_LOADING_COMPLETED)!;
  return encodeAvroFramed(b.type, priceLoaded(instrument, 'H1'), b.schema.id);
}

/** Every generated poison case; `tag` makes the ids unique to the run. */
export function poisonCases(codec: EventCodec, tag: string): PoisonCase[] {
  const price = codec.binding(PRICE_LOADING_COMPLETED)!;
  const series = codec.binding(SERIES_UPDATE_COMPLETED.eventId)!;
  const good = goodPriceValue(codec);
  const id = (n: string): string => `${tag}-${n}`;
  const frame = (schemaId: number, body: Uint8Array): Uint8Array => {
    const b = Buffer.alloc(5 + body.length);
    b[0] = 0;
    b.writeUInt32BE(schemaId >>> 0, 1);
    b.set(body, 5);
    return b;
  };
  const body = good.subarray(5);
  const cases: PoisonCase[] = [];
  const add = (name: string, headers: RecordHeader[], value: Uint8Array | null): void => void cases.push({ name, headers, value });
  // Values under valid headers.
  const rnd = randomBytes(64);
  rnd[0] = 0x7b;
  add('random bytes', ceHeaders(id('random')), rnd);
  add('empty value', ceHeaders(id('empty')), new Uint8Array(0));
  add('magic byte only', ceHeaders(id('magic')), new Uint8Array([0]));
  add('magic + 2 bytes of id', ceHeaders(id('half-id')), new Uint8Array([0, 0, 0]));
  add('frame without body', ceHeaders(id('no-body')), frame(price.schema.id, new Uint8Array(0)));
  add('truncated Avro body', ceHeaders(id('truncated')), frame(price.schema.id, body.subarray(0, Math.floor(body.length / 2))));
  add('trailing bytes after Avro', ceHeaders(id('trailing')), frame(price.schema.id, Buffer.concat([body, Buffer.from('garbage')])));
  add('unknown schema id', ceHeaders(id('unknown-id')), frame(0x7ffffff0, body));
  add('schema id 0xffffffff', ceHeaders(id('max-id')), frame(0xffffffff, body));
  add('schema id of another subject', ceHeaders(id('other-subject')), encodeAvroFramed(series.type, seriesUpdated('BRK/USD', 'H1'), series.schema.id));
  add('price body under another subject id', ceHeaders(id('other-subject-2')), frame(series.schema.id, body));
  add('Avro string length 2^31', ceHeaders(id('huge-len')), frame(price.schema.id, new Uint8Array([0xfe, 0xff, 0xff, 0xff, 0x0f])));
  add('Avro negative string length', ceHeaders(id('neg-len')), frame(price.schema.id, new Uint8Array([0x03, 0x41])));
  add('tombstone (null value)', ceHeaders(id('tombstone')), null);
  add('~900 KiB value', ceHeaders(id('big-value')), frame(price.schema.id, randomBytes(900 * 1024)));
  // Headers under a valid value.
  add('ce_source not UTF-8', ceHeaders(id('src-utf8'), { ce_source: new Uint8Array([0x75, 0xff, 0xfe]) }), good);
  add('ce_subject not UTF-8', [...ceHeaders(id('subj-utf8')), ['ce_subject', new Uint8Array([0xc3, 0x28])]], good);
  add('ce_source with a control character', ceHeaders(id('src-ctl'), { ce_source: 'urn:\u0001brk' }), good);
  add('ce_subject with NUL', [...ceHeaders(id('subj-nul')), ['ce_subject', enc.encode('a\u0000b')]], good);
  add('ce_source empty', ceHeaders(id('src-empty'), { ce_source: '' }), good);
  add('ce_subject empty', [...ceHeaders(id('subj-empty')), ['ce_subject', new Uint8Array(0)]], good);
  add('ce_source duplicated (same value)', [...ceHeaders(id('src-dup')), ['ce_source', enc.encode('urn:brk')]], good);
  add('ce_subject duplicated', [...ceHeaders(id('subj-dup')), ['ce_subject', enc.encode('a')], ['CE_SUBJECT', enc.encode('b')]], good);
  add('content-type duplicated', [...ceHeaders(id('ct-dup')), ['content-type', enc.encode('application/avro')], ['content-type', enc.encode('text/plain')]], good);
  add('ce_specversion 0.3', ceHeaders(id('v03'), { ce_specversion: '0.3' }), good);
  add('ce_specversion 2.0', ceHeaders(id('v20'), { ce_specversion: '2.0' }), good);
  add('ce_specversion empty', ceHeaders(id('v-empty'), { ce_specversion: '' }), good);
  add('no ce_source', ceHeaders(id('no-src'), { ce_source: undefined }), good);
  add('no ce_type', ceHeaders(id('no-type'), { ce_type: undefined }), good);
  add('content-type malformed', [...ceHeaders(id('ct-bad')), ['content-type', enc.encode('application/')]], good);
  add('content-type parameter twice', [...ceHeaders(id('ct-twice')), ['content-type', enc.encode('application/avro; a=1; a=2')]], good);
  add('content-type not UTF-8', [...ceHeaders(id('ct-utf8')), ['content-type', new Uint8Array([0x61, 0xff])]], good);
  add('ce_time malformed', [...ceHeaders(id('time-bad')), ['ce_time', enc.encode('yesterday')]], good);
  add('ce_time year 0', [...ceHeaders(id('time-0')), ['ce_time', enc.encode('0000-01-01T00:00:00Z')]], good);
  add('ce_dataschema not a URI', [...ceHeaders(id('ds-bad')), ['ce_dataschema', enc.encode('::not a uri')]], good);
  add('extension name with upper case', [...ceHeaders(id('ext-case')), ['ce_Foo-Bar', enc.encode('x')]], good);
  add('empty attribute name', [...ceHeaders(id('ext-empty')), ['ce_', enc.encode('x')]], good);
  add('ce_schemaversion past 32 bits', [...ceHeaders(id('seq')), ['ce_schemaversion', enc.encode('99999999999999999999999')]], good);
  add('1 MiB header', [...ceHeaders(id('big-header')), ['ce_subject', enc.encode('s'.repeat(900 * 1024))]], good);
  add('2,000 headers', [...ceHeaders(id('many-headers')), ...Array.from({ length: 2000 }, (_, i): RecordHeader => [`x-h${i}`, enc.encode('v')])], good);
  // Structured mode.
  const structured = (n: string, json: string): void => add(`structured: ${n}`, [['content-type', enc.encode('application/cloudevents+json')]], enc.encode(json));
  const ev = (over: Record<string, unknown>): string => JSON.stringify({ specversion: '1.0', id: id(`s-${Object.keys(over).join('-')}`), source: 'urn:brk', type: PRICE_LOADING_COMPLETED, datacontenttype: 'application/json', data: priceLoaded('BRK/USD', 'H1'), ...over });
  structured('not JSON', '{"specversion":');
  structured('a JSON array', '[1,2,3]');
  structured('a JSON string', '"hello"');
  structured('JSON null', 'null');
  structured('data of the wrong shape', ev({ data: { instrument: 1 } }));
  structured('data an array', ev({ data: [1, 2] }));
  // JSON.stringify writes Infinity as null: the number goes in as text.
  structured('barsLoaded huge number', ev({ data: { ...priceLoaded('BRK/USD', 'H1'), barsLoaded: 0 } }).replace('"barsLoaded":0', '"barsLoaded":1e400'));
  structured('barsLoaded 2^53+1', ev({ data: { ...priceLoaded('BRK/USD', 'H1'), barsLoaded: 0 } }).replace('"barsLoaded":0', '"barsLoaded":9007199254740993'));
  structured('deep nesting in data', ev({ data: 'X' }).replace('"data":"X"', `"data":${'['.repeat(100_000)}${']'.repeat(100_000)}`));
  structured('deep nesting in an extension', ev({ foo: 'X' }).replace('"foo":"X"', `"foo":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`));
  structured('specversion 0.3', ev({ specversion: '0.3' }));
  structured('no id', ev({ id: undefined }));
  structured('id a number', ev({ id: 42 }));
  structured('data_base64 not base64', ev({ data: undefined, data_base64: '!!!' }));
  structured('data and data_base64', ev({ data_base64: 'AAAA' }));
  structured('trailing text after the object', `${ev({})} x`);
  cases.push({ name: 'structured: invalid UTF-8 bytes', headers: [['content-type', enc.encode('application/cloudevents+json')]], value: new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x7d]) });
  cases.push({ name: 'structured: null value', headers: [['content-type', enc.encode('application/cloudevents+json')]], value: null });
  cases.push({ name: 'no headers, empty value', headers: [], value: new Uint8Array(0) });
  cases.push({ name: 'no headers, null value', headers: [], value: null });
  return cases;
}
