/**
 * A JSON-format CloudEvent (one object) → envelope. Used by the structured and batched content
 * modes of HTTP and by the Kafka structured mode.
 * Spec: CloudEvents JSON format 1.0.2 §2.2 (type mapping; null = unset), §3 (envelope),
 * §3.1.2 (data / data_base64 deserialization), §4 (batch).
 */
import type { Attributes, AttributeValue, Envelope, EventData, JsonValue } from '../../envelope/index.js';
import {
  ViolationCollector,
  attributeNameProblem,
  base64Problem,
  checkAttribute,
  inspectJson,
  requiredAttributes,
  unsafeNumberReason,
} from '../../envelope/index.js';
import { declaresJson } from './media-type.js';
import { parseJsonText } from './json-text.js';

/** Field name used for violations about the request body as a whole. */
export const BODY_FIELD = 'body';
const MISSING = 'required attribute is missing';
const utf8 = new TextEncoder();

/**
 * Reads one JSON-format event into a frozen envelope, adding every violation to `out` (stamped
 * with `out.index` in a batch). Returns undefined when this event had any violation.
 * `whole` is the field that names the event itself (`body`, or `''` inside a batch).
 */
export function readStructuredEvent(obj: unknown, out: ViolationCollector, whole: string = BODY_FIELD): Envelope | undefined {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    out.field(whole, 'a structured CloudEvent must be a JSON object', 'event');
    return undefined;
  }
  const before = out.size;
  const src = obj as Record<string, unknown>;
  const attrs: Record<string, AttributeValue> = {};
  let hasData = false;
  let dataValue: unknown;
  let base64: string | undefined;
  for (const key in src) {
    const v = src[key];
    if (key === 'data') {
      hasData = true;
      dataValue = v;
      continue;
    }
    if (key === 'data_base64') {
      if (v === null) continue;
      if (typeof v === 'string') base64 = v;
      else out.field('/data_base64', 'must be a base64 string');
      continue;
    }
    if (v === null || v === undefined) continue; // JSON format §2.2: null = unset
    const nameProblem = attributeNameProblem(key);
    if (nameProblem !== undefined) {
      out.attribute(key, nameProblem);
      continue;
    }
    if (typeof v === 'object') {
      out.attribute(key, 'attribute values must be a String, Integer or Boolean, not a JSON object or array');
      continue;
    }
    if (typeof v === 'number') {
      const unsafe = unsafeNumberReason(v);
      if (unsafe !== undefined) {
        out.attribute(key, unsafe);
        continue;
      }
    }
    attrs[key] = v as AttributeValue;
    checkAttribute(key, v, out);
  }
  for (const name of requiredAttributes) {
    if (attrs[name] === undefined && src[name] == null) out.attribute(name, MISSING, 'missing');
  }
  let data: EventData | undefined;
  if (base64 !== undefined) {
    if (hasData) out.field('/data_base64', 'data and data_base64 cannot both be present');
    else {
      const problem = base64Problem(base64);
      if (problem !== undefined) out.field('/data_base64', problem);
      else {
        const buf = Buffer.from(base64, 'base64');
        data = Object.freeze({ kind: 'binary', bytes: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength) });
      }
    }
  } else if (hasData) {
    const ct = attrs.datacontenttype;
    if (declaresJson(typeof ct === 'string' ? ct : undefined)) {
      inspectJson(dataValue, '/data', true, (pointer, reason) => out.field(pointer, reason));
      data = Object.freeze({ kind: 'json', value: dataValue as JsonValue });
    } else if (typeof dataValue === 'string') {
      // JSON format §3.1.2: non-JSON content travels as a string encoded per datacontenttype;
      // kept as its UTF-8 bytes so binary and structured mode give the same envelope.
      data = Object.freeze({ kind: 'binary', bytes: utf8.encode(dataValue) });
    } else {
      out.field('/data', 'with a non-JSON datacontenttype, data must be a string (or send the bytes as data_base64)');
    }
  }
  if (out.size > before) return undefined;
  const attributes = Object.freeze(attrs) as unknown as Attributes;
  return Object.freeze(data === undefined ? { attributes } : { attributes, data });
}

/**
 * One JSON-format event (text or UTF-8 bytes) → a validated, frozen envelope.
 * Throws: GatewayError (retriable false) CEG_INVALID_EVENT (not JSON, not an object),
 * CEG_MISSING_ATTRIBUTE, CEG_INVALID_ATTRIBUTE or CEG_INVALID_DATA; `details.violations` lists
 * every violation. Spec: CloudEvents JSON format 1.0.2 §2–§3.
 */
export function parseStructuredEvent(json: string | Uint8Array): Envelope {
  const out = new ViolationCollector();
  const parsed = parseJsonText(json);
  if (!parsed.ok) {
    out.field(BODY_FIELD, parsed.reason, 'event');
    throw out.toError();
  }
  const env = readStructuredEvent(parsed.value, out);
  if (env === undefined) throw out.toError();
  return env;
}
