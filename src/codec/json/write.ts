/**
 * Envelope → the CloudEvents JSON event format (one object), for structured and batched content
 * modes and for connectors that hand events on as JSON.
 * Spec: CloudEvents JSON format 1.0.2 §2.2 (attributes in their JSON types), §3.1.1 (data as JSON
 * for JSON-formatted content, a string for other text content, data_base64 for binary data).
 */
import { GatewayError } from '../../core/errors.js';
import type { Envelope, JsonValue } from '../../envelope/index.js';
import { declaresJson } from './media-type.js';

/** The error for JSON data that is not a string under a non-JSON `datacontenttype`. */
export function cannotEncode(env: Envelope): GatewayError {
  return new GatewayError(
    'CEG_INVALID_DATA',
    `JSON data that is not a string cannot be sent with the non-JSON datacontenttype ${String(env.attributes.datacontenttype)}`,
    { retriable: false, details: { attribute: 'datacontenttype', field: '/data' } },
  );
}

/**
 * The JSON-format object of an event: attributes as JSON members in their native types,
 * `data` (JSON data, or a string for non-JSON content) or `data_base64` (binary data).
 * Throws: GatewayError CEG_INVALID_DATA (retriable false) for non-string JSON data with a
 * non-JSON datacontenttype.
 */
export function toStructuredJson(env: Envelope): Record<string, JsonValue> {
  const obj: Record<string, JsonValue> = {};
  const attrs = env.attributes;
  for (const name in attrs) {
    const v = attrs[name];
    if (v !== undefined) obj[name] = v;
  }
  const data = env.data;
  if (data !== undefined) {
    if (data.kind === 'binary') {
      obj.data_base64 = Buffer.from(data.bytes.buffer, data.bytes.byteOffset, data.bytes.byteLength).toString('base64');
    } else if (declaresJson(typeof attrs.datacontenttype === 'string' ? attrs.datacontenttype : undefined) || typeof data.value === 'string') {
      obj.data = data.value;
    } else {
      throw cannotEncode(env);
    }
  }
  return obj;
}

/**
 * `JSON.stringify(toStructuredJson(env))`, the same text, without the intermediate object for the
 * common case (JSON data under a JSON `datacontenttype`): the attributes object is written as it
 * is and `data` appended to it. Once per event on a batched push (issue 8 profile).
 * Throws: as {@link toStructuredJson}.
 */
export function structuredJsonText(env: Envelope): string {
  const attrs = env.attributes;
  const data = env.data;
  if (data === undefined || data.kind !== 'json' || data.value === undefined || !declaresJson(typeof attrs.datacontenttype === 'string' ? attrs.datacontenttype : undefined) || Object.hasOwn(attrs, 'data') || Object.hasOwn(attrs, 'data_base64')) {
    return JSON.stringify(toStructuredJson(env));
  }
  const head = JSON.stringify(attrs);
  // Never `{}`: the required attributes are there (an envelope without them goes the long way).
  if (head.length < 3) return JSON.stringify(toStructuredJson(env));
  return `${head.slice(0, -1)},"data":${JSON.stringify(data.value)}}`;
}
