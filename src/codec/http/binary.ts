/**
 * HTTP binary content mode → envelope: `ce-` headers are attributes, Content-Type is
 * `datacontenttype`, the body is the data.
 * Spec: CloudEvents HTTP binding 1.0.2 §3.1.1 (Content-Type; no ce-datacontenttype), §3.1.2
 * (body = data), §3.1.3.1 (ce- prefix, case-insensitive names), §3.1.3.2 (header values).
 */
import type { Attributes, AttributeValue, Envelope, EnvelopeLimits, EventData, ViolationCollector } from '../../envelope/index.js';
import {
  DEFAULT_ENVELOPE_LIMITS,
  attributeNameProblem,
  checkAttributeLimits,
  checkAttribute,
  describeLimitBreach,
  limitBreachCode,
  requiredAttributes,
  tryParseAttribute,
} from '../../envelope/index.js';
import { decodeHeaderValue } from './header-value.js';
import { charsetProblem, isJsonMediaType, readJsonData } from '../json/index.js';
import type { MediaType } from '../json/index.js';

/** Incoming HTTP headers as node:http gives them (names in any case in this API). */
export type HttpHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

const MISSING = 'required attribute is missing';

/** True when any header name starts with `ce-` (any case). */
export function hasCeHeader(headers: HttpHeaders): boolean {
  for (const name in headers) {
    if (name.length > 3 && isCePrefix(name) && headers[name] !== undefined) return true;
  }
  return false;
}

function isCePrefix(name: string): boolean {
  const c0 = name.charCodeAt(0) | 0x20;
  const c1 = name.charCodeAt(1) | 0x20;
  return c0 === 0x63 && c1 === 0x65 && name.charCodeAt(2) === 0x2d; // "ce-"
}

/**
 * Reads a binary-mode request into a frozen envelope, adding every violation to `out`; returns
 * undefined when there was any. `contentType` is the raw Content-Type text (undefined when the
 * request has none) and `mediaType` its parse.
 * A JSON Content-Type (`*\/json`, `*\/*+json`) is read as UTF-8 JSON: a `charset` other than
 * UTF-8 is a violation naming `datacontenttype` (parseHttpRequest refuses it with 415 first);
 * any other Content-Type keeps the body as bytes.
 * Limits: the `ce-` headers (plus Content-Type) are counted before any is decoded; over
 * `limits.maxAttributes`, or over `limits.maxAttributeBytes` once decoded, is one violation coded
 * CEG_TOO_MANY_ATTRIBUTES / CEG_ATTRIBUTES_TOO_LARGE naming the `headers`.
 */
export function readBinaryEvent(
  headers: HttpHeaders,
  body: Uint8Array,
  contentType: string | undefined,
  mediaType: MediaType | undefined,
  out: ViolationCollector,
  limits: EnvelopeLimits = DEFAULT_ENVELOPE_LIMITS,
): Envelope | undefined {
  const before = out.size;
  let count = contentType === undefined ? 0 : 1;
  for (const headerName in headers) if (headerName.length > 3 && isCePrefix(headerName)) count++;
  if (count > limits.maxAttributes) {
    const breach = { limit: 'maxAttributes' as const, max: limits.maxAttributes, actual: count };
    out.coded(limitBreachCode(breach), { field: 'headers' }, describeLimitBreach(breach), { limit: breach.limit, max: breach.max, actual: breach.actual });
    return undefined;
  }
  const attrs: Record<string, AttributeValue> = {};
  for (const headerName in headers) {
    if (headerName.length < 3 || !isCePrefix(headerName)) continue;
    if (headerName.length === 3) {
      // "ce-" alone: an attribute header without its name, not something to pass over in silence.
      out.field('headers', 'a header named just "ce-" names no attribute: the attribute name follows the ce- prefix (e.g. ce-subject)', 'event');
      continue;
    }
    let raw = headers[headerName];
    if (raw === undefined) continue;
    const name = headerName.slice(3).toLowerCase();
    if (typeof raw !== 'string') {
      if (raw.length !== 1) {
        out.attribute(name, `header ce-${name} appears ${raw.length} times; an attribute has one value`);
        continue;
      }
      raw = raw[0] ?? '';
    }
    if (name === 'datacontenttype') {
      out.attribute(name, 'in binary mode datacontenttype travels as Content-Type; a ce-datacontenttype header is not allowed');
      continue;
    }
    const nameProblem = attributeNameProblem(name);
    if (nameProblem !== undefined) {
      out.attribute(name, nameProblem);
      continue;
    }
    if (Object.hasOwn(attrs, name)) {
      out.attribute(name, `header ce-${name} appears more than once (names are case-insensitive)`);
      continue;
    }
    const decoded = decodeHeaderValue(raw);
    if (!decoded.ok) {
      out.attribute(name, decoded.reason);
      continue;
    }
    const parsed = tryParseAttribute(name, decoded.value);
    if (!parsed.ok) {
      out.attribute(name, parsed.reason);
      continue;
    }
    attrs[name] = parsed.value;
    checkAttribute(name, parsed.value, out);
  }
  if (contentType !== undefined) {
    attrs.datacontenttype = contentType;
    checkAttribute('datacontenttype', contentType, out);
  }
  for (const name of requiredAttributes) {
    if (attrs[name] === undefined && !out.items.some((v) => v.attribute === name)) out.attribute(name, MISSING, 'missing');
  }
  if (out.size === before) {
    const breach = checkAttributeLimits(attrs, limits);
    if (breach !== undefined) {
      out.coded(limitBreachCode(breach), { field: 'headers' }, describeLimitBreach(breach), { limit: breach.limit, max: breach.max, actual: breach.actual });
      return undefined;
    }
  }
  let data: EventData | undefined;
  if (body.byteLength > 0) {
    if (mediaType !== undefined && isJsonMediaType(mediaType)) {
      // JSON is read as UTF-8: another declared charset would be misread (parseHttpRequest answers 415 first).
      const charset = charsetProblem(mediaType, 'JSON data', body);
      if (charset !== undefined) out.attribute('datacontenttype', charset);
      const json = charset === undefined ? readJsonData(body, '/data', mediaType.essence, out) : undefined;
      if (json !== undefined) data = Object.freeze({ kind: 'json', value: json.value });
    } else {
      data = Object.freeze({ kind: 'binary', bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength) });
    }
  }
  if (out.size > before) return undefined;
  const attributes = Object.freeze(attrs) as unknown as Attributes;
  return Object.freeze(data === undefined ? { attributes } : { attributes, data });
}
