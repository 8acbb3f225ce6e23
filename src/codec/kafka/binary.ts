/**
 * CloudEvents Kafka protocol binding 1.0.2, binary content mode: envelope ⇄ record headers and key.
 * The value (Avro in the Confluent wire format, or null) is the caller's: see codec/event.
 */
import { sameBytes } from '../../core/bytes.js';
import { GatewayError } from '../../core/errors.js';
import { utf8Length } from '../../core/utf8.js';
import type { Attributes, AttributeValue } from '../../envelope/types.js';
import { ViolationCollector, canonicalString, checkAttribute, isMediaTypeFault, mediaTypeProblem, parseAttribute, readMediaType, requiredAttributes } from '../../envelope/index.js';
import type { OutboundRecord, RecordHeader, TransportRecord } from '../../transport/port.js';


/**
 * Encoded header values that repeat from record to record — specversion, type, source, eventname,
 * schemaversion, dataschema, content type — are encoded once and shared (header values are never
 * mutated): most attributes are constant per kind (issue 14). One map per attribute, so a lookup
 * builds no key string. Bounded: an attribute's map is cleared when full.
 */
const CACHED_ATTRIBUTES = ['specversion', 'type', 'source', 'eventname', 'eventclass', 'schemaversion', 'dataschema', 'datacontenttype', 'runid'] as const;
const MAX_CACHED_VALUES = 1024;
const valueCache = new Map<string, Map<string, Buffer>>(CACHED_ATTRIBUTES.map((a) => [a, new Map()]));

/**
 * A header value as UTF-8 bytes. Always a Buffer, so the Kafka adapters hand it on without
 * wrapping it; an uncached one comes from Node's Buffer pool (`Buffer.from`), which is cheaper
 * and leaves less garbage than a TextEncoder's ArrayBuffer per value (A/B in BENCHMARKS.md).
 */
function headerBytes(attribute: string, text: string): Buffer {
  const cache = valueCache.get(attribute);
  if (cache === undefined || text.length > 512) return Buffer.from(text, 'utf8');
  let bytes = cache.get(text);
  if (bytes === undefined) {
    if (cache.size >= MAX_CACHED_VALUES) cache.clear();
    // Its own memory (not a pool slice): a cached value lives long and must not pin an 8 KiB pool.
    bytes = Buffer.alloc(Buffer.byteLength(text), text, 'utf8');
    cache.set(text, bytes);
  }
  return bytes;
}
// ignoreBOM: a leading U+FEFF is part of an attribute's value (accepted at ingress), not a byte order mark to drop.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Header name prefix of the binary content mode (Kafka binding §3.2.3). */
export const HEADER_PREFIX = 'ce_';
const CONTENT_TYPE = 'content-type';
const STRUCTURED_MEDIA_TYPE = 'application/cloudevents+json';

// Header names for the attributes every event has, built once rather than per record.
const headerNameCache = new Map<string, string>();
function headerName(attribute: string): string {
  let name = headerNameCache.get(attribute);
  if (name === undefined) {
    name = HEADER_PREFIX + attribute;
    if (headerNameCache.size < 256) headerNameCache.set(attribute, name);
  }
  return name;
}

/**
 * Builds the record of one event in binary content mode.
 * Shapes: key = UTF-8 of `partitionkey` (null when absent: Kafka binding §3.1, key mapping);
 *   one `ce_<attribute>` header per attribute holding its canonical string (booleans and integers
 *   as text, never "undefined"); `content-type` = `datacontenttype`; `value` as given (null = tombstone).
 * Units: `timestampMs` = now (epoch ms), the time the gateway writes the record — never `time`:
 *   the broker applies retention and its future-timestamp limit to the record timestamp, so an
 *   old or clock-skewed partner `time` would get the record deleted at once or refused.
 * Spec: CloudEvents Kafka protocol binding 1.0.2 §3.1 (key), §3.2 (binary content mode).
 */
export function toBinaryRecord(attributes: Attributes, value: Uint8Array | null): OutboundRecord {
  const headers: RecordHeader[] = [];
  let key: Buffer | null = null;
  for (const name in attributes) {
    const v: AttributeValue | undefined = attributes[name];
    if (v === undefined) continue;
    if (name === 'datacontenttype') headers.push([CONTENT_TYPE, headerBytes(name, String(v))]);
    else {
      const bytes = headerBytes(name, canonicalString(v));
      // The key is the same bytes as the `ce_partitionkey` header: one Buffer for both (never mutated).
      if (name === 'partitionkey' && typeof v === 'string') key = bytes;
      headers.push([headerName(name), bytes]);
    }
  }
  return { key, value, headers, timestampMs: Date.now() };
}

/**
 * The bytes of the attributes a binary-mode record from {@link toBinaryRecord} carries: for each
 * attribute, the UTF-8 bytes of its name and of its canonical value — the same sum as counting
 * the attribute map, read from the headers already encoded (no second encoding per event, issue 14).
 * `content-type` counts as the attribute `datacontenttype`; headers without the `ce_` prefix otherwise
 * are not attributes and are not counted.
 */
export function attributeBytesOf(headers: readonly RecordHeader[]): number {
  let bytes = 0;
  for (const [name, value] of headers) {
    if (name === CONTENT_TYPE) bytes += DATACONTENTTYPE_BYTES + value.byteLength;
    else if (name.startsWith(HEADER_PREFIX)) bytes += utf8Length(name) - HEADER_PREFIX.length + value.byteLength;
  }
  return bytes;
}
const DATACONTENTTYPE_BYTES = 'datacontenttype'.length;

/** What a consumed record holds before its value is decoded. */
export type RecordEvent =
  | { readonly mode: 'binary'; readonly attributes: Attributes; readonly value: Uint8Array | null }
  | { readonly mode: 'structured'; readonly json: string };

/**
 * Reads a consumed record's CloudEvent attributes (binary mode) or its structured body.
 * Errors: CEG_INVALID_EVENT (retriable: false) — a poison record — when a `ce_` header repeats,
 *   `content-type` repeats or comes with a `ce_datacontenttype` header of another value (case-insensitive names;
 *   the same value is one datacontenttype: the `cloudevents` JS SDK writes both),
 *   a header is not UTF-8, `content-type` is not one media type (RFC 9110 §8.3.1; a parameter
 *   twice, RFC 6838 §4.3; a list; in binary mode, a control character the datacontenttype rule refuses — `details.attribute` `datacontenttype`), a required attribute (`ce_specversion`, `ce_id`, `ce_source`, `ce_type`)
 *   is missing, or an attribute has the wrong type.
 * Spec: CloudEvents Kafka protocol binding 1.0.2 §3.2 (binary), §3.3 (structured, detected by
 *   `content-type: application/cloudevents+json`).
 */
export function fromRecord(record: TransportRecord): RecordEvent {
  const attrs: Record<string, AttributeValue> = {};
  let contentType: string | undefined;
  const headers = record.headers;
  for (let i = 0; i < headers.length; i++) {
    // Indexed, not destructured: `const [a, b] = pair` runs the array iterator (two result objects
    // per header, about a tenth of a push subscription's allocations, issue 8 heap profile).
    const pair = headers[i]!;
    const name = pair[0];
    const raw = pair[1];
    const h = headerOf(name);
    if (h.attribute === undefined) {
      if (h.contentType) {
        // Repeated, it is two datacontenttypes (and maybe two content modes): which one counts is
        // the reader's guess, as for a repeated ce_ header. Poison, never "the last one wins".
        if (contentType !== undefined) throw poison(`duplicate header ${name}`, record, { attribute: 'datacontenttype' });
        contentType = text(raw, h, record);
        if (Object.hasOwn(attrs, 'datacontenttype') && attrs.datacontenttype !== contentType) throw poison(`duplicate header ${name}`, record, { attribute: 'datacontenttype' });
      }
      continue;
    }
    const attribute = h.attribute;
    if (Object.hasOwn(attrs, attribute)) throw poison(`duplicate header ${name}`, record, { attribute });
    const value = attributeValue(raw, h, record);
    // `ce_datacontenttype` beside `content-type`: the attribute under both of the binding's
    // mappings (§3.2.1, and §3.2.3's "all attributes" read literally), as the `cloudevents` JS SDK's
    // Kafka.binary writes it. The same value is one datacontenttype; a different one is poison.
    if (attribute === 'datacontenttype' && contentType !== undefined && value !== contentType) throw poison(`duplicate header ${name}`, record, { attribute });
    attrs[attribute] = value;
  }
  if (attrs.specversion === undefined) {
    // No ce_specversion: structured mode when content-type names it. Read by the envelope's one
    // parser, as the ingress reads it: not one media type (a parameter twice, RFC 6838 §4.3; a
    // list; malformed) → poison naming datacontenttype, as an attribute of the wrong type is.
    const mediaType = contentType === undefined ? undefined : readMediaType(contentType);
    if (mediaType !== undefined && isMediaTypeFault(mediaType)) {
      throw poison(mediaTypeProblem(contentType!, 'content-type (datacontenttype)') ?? 'content-type is not one media type', record, { attribute: 'datacontenttype' });
    }
    if (mediaType !== undefined && mediaType.essence === STRUCTURED_MEDIA_TYPE) {
      if (record.value === null) throw poison('structured-mode record without a value', record, {});
      return { mode: 'structured', json: decodeText(record.value, 'value', record) };
    }
  }
  if (attrs.specversion === undefined) throw poison('not a CloudEvent: no ce_specversion header', record, { attribute: 'specversion' });
  // The other required attributes too: without them the result would not be the Attributes it claims.
  for (const name of requiredAttributes) {
    if (attrs[name] === undefined) throw poison(`not a CloudEvent: no ce_${name} header`, record, { attribute: name });
  }
  // Binary mode: content-type is the datacontenttype attribute, held to its rule as the ingress
  // holds it: one media type (the same parser's faults) and a CloudEvents String (no control
  // character, such as a tab inside or U+0085 quoted, which the media-type grammar alone allows).
  if (contentType !== undefined) attrs.datacontenttype = datacontenttypeOrPoison(contentType, record);
  return { mode: 'binary', attributes: attrs as unknown as Attributes, value: record.value };
}

/**
 * What a header name means, worked out once per name (not per record): its attribute (lower-case,
 * without `ce_`), whether it is `content-type`, and the last value read under it.
 * - Most headers repeat from record to record on a topic (specversion, type, source, dataschema,
 *   eventname, content type…): comparing a few bytes with the last value is cheaper than a strict
 *   UTF-8 decode and the attribute's parse, so the last bytes, text and parsed value are kept.
 * - Headers that change with every record (id, time, partition key) would only pay the compare
 *   and a copy: after {@link GIVE_UP} misses in a row a name is no longer cached.
 * Bounded: at most {@link MAX_CACHED_NAMES} names are remembered; others are worked out per record.
 */
interface HeaderInfo {
  readonly name: string;
  readonly attribute: string | undefined;
  readonly contentType: boolean;
  /**
   * `bytes`: a copy of the last value (or the value itself when it owns its whole buffer: a shared
   * copy handed out again and again by a transport, compared by identity first).
   */
  last: { readonly bytes: Uint8Array; readonly text: string; value: AttributeValue | undefined } | undefined;
  misses: number;
}

const headerInfos = new Map<string, HeaderInfo>();
const MAX_CACHED_NAMES = 256;
const MAX_CACHED_BYTES = 256;
const GIVE_UP = 16;

function headerOf(name: string): HeaderInfo {
  let h = headerInfos.get(name);
  if (h !== undefined) return h;
  const lower = name.toLowerCase();
  h = { name, attribute: lower.startsWith(HEADER_PREFIX) ? lower.slice(HEADER_PREFIX.length) : undefined, contentType: lower === CONTENT_TYPE, last: undefined, misses: 0 };
  if (headerInfos.size < MAX_CACHED_NAMES) headerInfos.set(name, h);
  return h;
}


/** The header's text: the cached one when its bytes are the last ones seen under that name. */
function text(bytes: Uint8Array, h: HeaderInfo, record: TransportRecord): string {
  const last = h.last;
  if (last !== undefined && (last.bytes === bytes || sameBytes(last.bytes, bytes))) {
    h.misses = 0;
    return last.text;
  }
  const decoded = decodeText(bytes, h.name, record);
  if (h.misses < GIVE_UP && bytes.byteLength <= MAX_CACHED_BYTES && headerInfos.get(h.name) === h) {
    if (last !== undefined) h.misses++;
    // Record values are never written (the port's contract). A value that is a whole buffer of its
    // own is kept as it is: a transport that shares repeating values hands the same object again
    // (identity compare). A view is copied (not `.slice()`: on a Buffer that is a view): it belongs
    // to a fetched answer, which the cache must not keep alive.
    h.last = { bytes: ownsItsBuffer(bytes) ? bytes : new Uint8Array(bytes), text: decoded, value: undefined };
  }
  return decoded;
}

/** The attribute's value: parsed once per distinct last value of its header. */
function attributeValue(raw: Uint8Array, h: HeaderInfo, record: TransportRecord): AttributeValue {
  const attribute = h.attribute!;
  const s = text(raw, h, record);
  const last = h.last;
  if (last !== undefined && last.text === s) {
    if (last.value !== undefined) return last.value;
    const value = parseOrPoison(attribute, s, record);
    last.value = value;
    return value;
  }
  return parseOrPoison(attribute, s, record);
}

/**
 * The datacontenttype rule's answer per `content-type` text ('' = valid), at most
 * {@link CONTENT_TYPE_CACHE_LIMIT} texts: a topic's records carry one or two, so a consumed record
 * costs one Map lookup rather than a check (the consume hot path, issue 8).
 */
const contentTypeVerdicts = new Map<string, string>();
const CONTENT_TYPE_CACHE_LIMIT = 256;

/** `content-type` as the datacontenttype attribute, checked by the envelope's rule (as the ingress checks it); poison naming `datacontenttype` otherwise. */
function datacontenttypeOrPoison(contentType: string, record: TransportRecord): string {
  let reason = contentTypeVerdicts.get(contentType);
  if (reason === undefined) {
    const out = new ViolationCollector();
    checkAttribute('datacontenttype', contentType, out);
    reason = out.items[0]?.reason ?? '';
    if (contentTypeVerdicts.size >= CONTENT_TYPE_CACHE_LIMIT) contentTypeVerdicts.clear();
    contentTypeVerdicts.set(contentType, reason);
  }
  if (reason !== '') throw poison(`header content-type (datacontenttype): ${reason}`, record, { attribute: 'datacontenttype' });
  return contentType;
}

function parseOrPoison(attribute: string, value: string, record: TransportRecord): AttributeValue {
  try {
    return parseAttribute(attribute, value);
  } catch (err) {
    throw poison(`header ce_${attribute}: ${(err as Error).message}`, record, { attribute });
  }
}

function ownsItsBuffer(bytes: Uint8Array): boolean {
  return bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength;
}

function decodeText(bytes: Uint8Array, where: string, record: TransportRecord): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw poison(`${where} is not valid UTF-8`, record, {});
  }
}

function poison(reason: string, record: TransportRecord, details: Record<string, unknown>): GatewayError {
  return new GatewayError('CEG_INVALID_EVENT', reason, {
    retriable: false,
    details: { ...details, topic: record.topic, partition: record.partition, offset: record.offset.toString() },
  });
}
