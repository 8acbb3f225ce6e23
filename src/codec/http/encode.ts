/**
 * Envelope → HTTP message (egress: webhooks, pull answers).
 * Spec: CloudEvents HTTP binding 1.0.2 §3.1 (binary: ce- headers, percent-encoded values,
 * Content-Type = datacontenttype), §3.2 (structured), §3.3 (batched); JSON format 1.0.2
 * §3.1.1 (data / data_base64 serialization), §4 (batch).
 */
import type { Envelope } from '../../envelope/index.js';
import { canonicalString } from '../../envelope/index.js';
import { encodeHeaderValue } from './header-value.js';
import { BATCH_JSON, STRUCTURED_JSON, cannotEncode, declaresJson, structuredJsonText, toStructuredJson } from '../json/index.js';

/** An HTTP message: lowercase header names → values, and the body bytes. */
export interface HttpMessage {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

const JSON_CONTENT_TYPE = 'application/json';
const EMPTY = Buffer.alloc(0);
const headerNames = new Map<string, string>();

function ceHeader(attribute: string): string {
  let h = headerNames.get(attribute);
  if (h === undefined) {
    h = 'ce-' + attribute;
    if (headerNames.size < 256) headerNames.set(attribute, h);
  }
  return h;
}

/**
 * Binary content mode: one `ce-<name>` header per attribute with its canonical string,
 * percent-encoded (space, `"`, `%`, non-printable and non-ASCII as UTF-8 `%XY`);
 * `content-type` = datacontenttype (JSON data without one: `application/json`). Body: JSON data
 * as JSON text (a string with a non-JSON datacontenttype as its UTF-8), binary data as is,
 * none = empty.
 * Throws: GatewayError CEG_INVALID_DATA (retriable false) for non-string JSON data with a
 * non-JSON datacontenttype.
 */
export function toBinaryHttp(env: Envelope): HttpMessage {
  const headers: Record<string, string> = {};
  const attrs = env.attributes;
  for (const name in attrs) {
    const v = attrs[name];
    if (v === undefined || name === 'datacontenttype') continue;
    headers[ceHeader(name)] = encodeHeaderValue(canonicalString(v));
  }
  const ct = attrs.datacontenttype;
  const data = env.data;
  let body: Buffer = EMPTY;
  if (data === undefined) {
    if (ct !== undefined) headers['content-type'] = ct;
  } else if (data.kind === 'binary') {
    body = Buffer.from(data.bytes.buffer, data.bytes.byteOffset, data.bytes.byteLength);
    if (ct !== undefined) headers['content-type'] = ct;
  } else if (declaresJson(ct)) {
    body = Buffer.from(JSON.stringify(data.value), 'utf8');
    headers['content-type'] = ct ?? JSON_CONTENT_TYPE;
  } else if (typeof data.value === 'string') {
    body = Buffer.from(data.value, 'utf8');
    headers['content-type'] = ct as string;
  } else {
    throw cannotEncode(env);
  }
  return { headers, body };
}

/** Structured content mode: `content-type: application/cloudevents+json; charset=utf-8`. Throws: as {@link toBinaryHttp}. */
export function toStructuredHttp(env: Envelope): HttpMessage {
  return {
    headers: { 'content-type': `${STRUCTURED_JSON}; charset=utf-8` },
    body: Buffer.from(structuredJsonText(env), 'utf8'),
  };
}

/** Batched content mode: a JSON array of structured events. Throws: as {@link toBinaryHttp}. */
export function toBatchHttp(envs: readonly Envelope[]): HttpMessage {
  return {
    headers: { 'content-type': `${BATCH_JSON}; charset=utf-8` },
    body: Buffer.from(JSON.stringify(envs.map(toStructuredJson)), 'utf8'),
  };
}
