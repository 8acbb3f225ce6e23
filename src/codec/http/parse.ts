/**
 * CloudEvents HTTP binding 1.0.2, receiving side: one request (headers + whole body) → the
 * events it carries, or one error listing every violation. Pure: no I/O.
 * Spec: CloudEvents HTTP binding 1.0.2 §3 (mode by Content-Type), §3.1 binary, §3.2 structured,
 * §3.3 batched; JSON format 1.0.2 §3, §4.
 */
import { GatewayError } from '../../core/errors.js';
import type { Envelope, EnvelopeLimits } from '../../envelope/index.js';
import { DEFAULT_ENVELOPE_LIMITS, ViolationCollector, mediaTypeProblem } from '../../envelope/index.js';
import { hasCeHeader, readBinaryEvent } from './binary.js';
import type { HttpHeaders } from './binary.js';
import { BATCH_JSON, BODY_FIELD, CLOUDEVENTS_PREFIX, STRUCTURED_JSON, attributeNumberTexts, charsetProblem, isJsonMediaType, parseJsonText, parseMediaType, readEventBatch, readStructuredEvent } from '../json/index.js';
import { assertBodySize, batchTooLarge } from './limits.js';

/** Content-Type faults refused as 415 before the mode is known (a malformed one in binary mode is the datacontenttype rule's, 400). */
const HEADER_FAULTS = ['repeated', 'list'] as const;

/** Content mode of a request. */
export type HttpMode = 'binary' | 'structured' | 'batch';

/** What a valid request carries: its mode and its frozen envelopes (batch: in body order). */
export interface ParsedHttpRequest {
  readonly mode: HttpMode;
  readonly events: readonly Envelope[];
}

/** Bounds (bytes, events); absent = unbounded. */
export interface HttpParseOptions {
  /** Largest body accepted, bytes (the reader should already stop there; checked again here). */
  readonly maxBodyBytes?: number;
  /** Most events accepted in one batch. */
  readonly maxBatchEvents?: number;
  /** Attribute count and bytes per event; default {@link DEFAULT_ENVELOPE_LIMITS}. */
  readonly limits?: EnvelopeLimits;
}

const SHOWN = 100;

/** The value of a header by case-insensitive name (first one when repeated). */
export function headerValue(headers: HttpHeaders, lowerName: string): string | undefined {
  let v = headers[lowerName];
  if (v === undefined) {
    for (const name in headers) {
      if (name.length === lowerName.length && name.toLowerCase() === lowerName) {
        v = headers[name];
        break;
      }
    }
  }
  return v === undefined ? undefined : typeof v === 'string' ? v : v[0];
}

function unsupported(contentType: string | undefined, why: string): GatewayError {
  const shown = contentType === undefined ? undefined : contentType.length > SHOWN ? `${contentType.slice(0, SHOWN)}…` : contentType;
  return new GatewayError('CEG_UNSUPPORTED_MEDIA_TYPE', why, {
    retriable: false,
    details: { header: 'content-type', contentType: shown, supported: [STRUCTURED_JSON, BATCH_JSON, 'binary mode: ce-* headers with any Content-Type'] },
  });
}

/**
 * Parses a CloudEvents HTTP request.
 * - `application/cloudevents+json` → structured (one JSON object; an array is refused);
 * - `application/cloudevents-batch+json` → batch (a JSON array of structured events, each
 *   validated; every bad one reported by `index`);
 * - any other `application/cloudevents…` → unsupported event format;
 * - otherwise, with `ce-` headers → binary (Content-Type = datacontenttype; JSON media types
 *   parsed as JSON data, others kept as bytes; empty body = no data).
 * Media types match case-insensitively, parameters allowed (a charset other than UTF-8 is
 * refused for the JSON formats, and in binary mode for a JSON Content-Type: JSON is read as UTF-8).
 * Throws: GatewayError, retriable false:
 *   CEG_PAYLOAD_TOO_LARGE (body over `maxBodyBytes`, batch over `maxBatchEvents`);
 *   CEG_UNSUPPORTED_MEDIA_TYPE (no ce- headers and not a CloudEvents media type, an event
 *   format other than JSON, a `charset` other than UTF-8 on a JSON format or JSON data, or a
 *   Content-Type with a parameter given twice, RFC 6838 §4.3, or a list of media types);
 *   CEG_INVALID_EVENT (body not JSON / wrong shape), CEG_MISSING_ATTRIBUTE, CEG_INVALID_ATTRIBUTE,
 *   CEG_INVALID_DATA — `details.violations` lists each (`attribute`, or `field` as a JSON pointer
 *   such as `/data/volume`, plus `index` in a batch).
 */
export function parseHttpRequest(headers: HttpHeaders, body: Uint8Array, options: HttpParseOptions = {}): ParsedHttpRequest {
  if (options.maxBodyBytes !== undefined) assertBodySize(body.byteLength, options.maxBodyBytes);
  const limits = options.limits ?? DEFAULT_ENVELOPE_LIMITS;
  const rawContentType = headerValue(headers, 'content-type');
  const contentType = rawContentType === undefined ? undefined : rawContentType.trim();
  // RFC 6838 §4.3: a parameter given twice (`charset=latin1; charset=utf-8`) is an error, in
  // every mode — receivers keep different ones (same 415 as a charset the gateway cannot read).
  // A list (`application/cloudevents+json; q=1, text/plain`) is not one media type: 415 too. Both
  // read by the envelope's one parser, as datacontenttype and the management API read them.
  const repeated = contentType === undefined ? undefined : mediaTypeProblem(contentType, 'Content-Type', HEADER_FAULTS);
  if (repeated !== undefined) throw unsupported(contentType, repeated);
  const mediaType = contentType === undefined || contentType === '' ? undefined : parseMediaType(contentType);
  if (mediaType !== undefined && mediaType.essence.startsWith(CLOUDEVENTS_PREFIX)) {
    const charset = charsetProblem(mediaType, 'CloudEvents JSON', body);
    if (charset !== undefined) throw unsupported(contentType, charset);
    if (mediaType.essence === STRUCTURED_JSON) return { mode: 'structured', events: [parseStructured(body, limits)] };
    if (mediaType.essence === BATCH_JSON) return { mode: 'batch', events: parseBatch(body, options.maxBatchEvents, limits) };
    throw unsupported(contentType, `event format ${mediaType.essence} is not supported; use ${STRUCTURED_JSON} or ${BATCH_JSON}`);
  }
  if (!hasCeHeader(headers)) {
    throw unsupported(
      contentType,
      contentType === undefined
        ? `not a CloudEvent: no ce-* headers and no Content-Type; send ${STRUCTURED_JSON}, ${BATCH_JSON}, or binary mode with ce-specversion`
        : `not a CloudEvent: Content-Type ${mediaType?.essence ?? 'is malformed'} without ce-* headers; send ${STRUCTURED_JSON}, ${BATCH_JSON}, or binary mode with ce-specversion`,
    );
  }
  // JSON data is read as UTF-8: a JSON Content-Type declaring another charset would be misread
  // (iso-8859-1 C3 A9 is "Ã©", not "é"), so it is refused as structured and batch mode refuse it.
  // Non-JSON data (text/* included) is kept as bytes, charset and all, and refused later by the
  // ingress whatever its charset: the gateway's data is JSON.
  const dataCharset = mediaType !== undefined && isJsonMediaType(mediaType) ? charsetProblem(mediaType, 'JSON data', body) : undefined;
  if (dataCharset !== undefined) throw unsupported(contentType, dataCharset);
  const out = new ViolationCollector();
  // An empty Content-Type for data is not "none" (RFC 9110 §8.3: the value is a media type): refused
  // as an empty datacontenttype is in structured mode. Without data (a tombstone) it says nothing.
  if (contentType === '' && body.byteLength > 0) out.attribute('datacontenttype', 'Content-Type is empty: give the data\'s media type (RFC 2046), or leave the header out');
  const env = readBinaryEvent(headers, body, contentType === '' ? undefined : contentType, mediaType, out, limits);
  if (env === undefined || out.size > 0) throw out.toError();
  return { mode: 'binary', events: [env] };
}

function parseStructured(body: Uint8Array, limits: EnvelopeLimits): Envelope {
  const out = new ViolationCollector();
  const parsed = parseJsonText(body);
  if (!parsed.ok) out.field(parsed.pointer ?? BODY_FIELD, `the body is ${parsed.reason}`, 'event');
  else if (Array.isArray(parsed.value)) {
    out.field(BODY_FIELD, `a structured-mode body is one JSON object; send an array as ${BATCH_JSON}`, 'event');
  } else {
    const env = readStructuredEvent(parsed.value, out, BODY_FIELD, limits, attributeNumberTexts(body, parsed.value, false)?.get(0));
    if (env !== undefined) return env;
  }
  throw out.toError();
}

/**
 * A batch with invalid events. Besides the violations it carries the events that did parse, by
 * their index, so the caller can check those too and report every bad event at once.
 */
export class BatchViolationsError extends GatewayError {
  readonly partial: readonly (Envelope | undefined)[];

  constructor(base: GatewayError, partial: readonly (Envelope | undefined)[]) {
    super(base.code, base.message, { retriable: base.retriable, details: base.details });
    this.partial = partial;
  }
}

function parseBatch(body: Uint8Array, maxBatchEvents: number | undefined, limits: EnvelopeLimits): Envelope[] {
  const out = new ViolationCollector();
  const parsed = parseJsonText(body);
  if (!parsed.ok) {
    out.field(parsed.pointer ?? BODY_FIELD, `the body is ${parsed.reason}`, 'event');
    throw out.toError();
  }
  if (!Array.isArray(parsed.value)) {
    out.field(BODY_FIELD, `a batch body is a JSON array of structured events (${BATCH_JSON})`, 'event');
    throw out.toError();
  }
  const items = parsed.value as unknown[];
  if (maxBatchEvents !== undefined && items.length > maxBatchEvents) throw batchTooLarge(maxBatchEvents, items.length);
  const events = readEventBatch(items, out, limits, attributeNumberTexts(body, items, true));
  if (out.size > 0) throw new BatchViolationsError(out.toError(), events);
  return events as Envelope[];
}
