/**
 * Turns the partner's parsed CloudEvents into records, validating everything before anything is
 * produced: a request is accepted whole or refused whole (batch mode included), and a refusal
 * lists every bad event by index.
 * Who fills what (DESIGN "The envelope"): the partner sends the required attributes, `time`,
 * `subject` and data, and may send `correlationid`, `causationid` and `traceparent`; the gateway
 * fills `eventname`, `eventclass`, `schemaversion`, `dataschema` and `partitionkey` from the model
 * (codec/event `completeOutbound`, shared with the bus publisher and the outbox: a partner's
 * `eventname`, `eventclass` or `schemaversion` is overwritten; a `dataschema` naming a registered
 * version of the kind selects it, one naming our schema base but no version of the kind is
 * refused, any other is replaced; a different `partitionkey` is refused), and a new
 * `correlationid` when none came.
 */
import { GatewayError } from '../../core/errors.js';
import type { ErrorCode } from '../../core/errors.js';
import { partitionKey, unknownTypeReason } from '../../catalog/index.js';
import type { EventKind } from '../../catalog/index.js';
import { MAX_LISTED_VIOLATIONS } from '../../codec/data/index.js';
import { TRACEPARENT_RESERVE, completeOutbound } from '../../codec/event/index.js';
import type { EventCodec, KindBinding, SchemaVersion } from '../../codec/event/index.js';
import { charsetProblem, declaresJson, isJsonMediaType, parseMediaType, readJsonData } from '../../codec/json/index.js';
import type { Attributes, Envelope, EnvelopeLimits, JsonValue } from '../../envelope/index.js';
import { DEFAULT_ENVELOPE_LIMITS, ViolationCollector } from '../../envelope/index.js';
import type { Violation } from '../../envelope/index.js';
import { BATCH_HEADER_BYTES, recordBatchBytes } from '../../bus/publisher/index.js';
import type { OutboundRecord } from '../../transport/port.js';

export interface PreparedEvent {
  readonly index: number;
  readonly id: string;
  readonly topic: string;
  /** The event kind's business name (the `kind` label of the ingress metrics). */
  readonly kind: string;
  readonly record: OutboundRecord;
  /** `recordBatchBytes(record)`, bytes: computed once, for the size check, the publisher and the metrics. */
  readonly bytes: number;
}

export interface PrepareOptions {
  /** Public base of `dataschema`; the schema id is appended. */
  readonly dataschemaBase: string;
  /** Attribute count and bytes per event, counted on the event as written; default {@link DEFAULT_ENVELOPE_LIMITS}. */
  readonly limits?: EnvelopeLimits;
  /** The largest record batch a topic takes (Kafka `max.message.bytes`, read at start-up), bytes; undefined = not known. */
  readonly maxMessageBytes?: (topic: string) => number | undefined;
  /**
   * The request's W3C `traceparent` header, validated: an event without a `traceparent` attribute
   * gets it, so the trace flows from the HTTP request into the Kafka headers (issue 15 "Tracing").
   */
  readonly traceparent?: string;
  /**
   * The request's W3C `tracestate` header, validated (./tracestate.ts); only with `traceparent`.
   * It goes with that traceparent and nowhere else: an event that takes the request's traceparent
   * takes it too (unless it has a `tracestate` attribute of its own, kept as sent), an event with a
   * traceparent of its own never does — the state of another trace would be wrong for it.
   * Spec: W3C Trace Context §3.3 (tracestate accompanies its traceparent).
   */
  readonly tracestate?: string;
  /**
   * Tracing is on: the ingress writes `ce_traceparent` into every record that has none (its
   * producer span), so the limits, the size bound and `max.message.bytes` count it already
   * (codec/event TRACEPARENT_RESERVE).
   */
  readonly reserveTraceparent?: boolean;
}

/** Longest attribute name accepted, characters (CloudEvents recommends ≤ 20; longer ones are allowed). */
export const MAX_ATTRIBUTE_NAME = 128;
/** Largest attribute value accepted, bytes of UTF-8: attributes are headers, not a place for data. */
export const MAX_ATTRIBUTE_BYTES = 4096;


/**
 * Validates and completes every event, then encodes it. `events` may have holes (events that
 * already failed parsing); `earlier` are those events' violations, reported together with these.
 * Errors: GatewayError (retriable: false) with `details.violations` — each names the attribute or
 *   the data field (a JSON pointer under `/data`), and `index` in batch mode. Its code is the one
 *   all violations share (CEG_UNKNOWN_TYPE, CEG_INVALID_DATA, CEG_PARTITION_KEY_MISMATCH,
 *   CEG_MISSING_ATTRIBUTE, CEG_PAYLOAD_TOO_LARGE…), else CEG_INVALID_EVENT. Nothing is encoded
 *   when any event is bad. At most MAX_LISTED_VIOLATIONS (100) violations are listed, the first
 *   by index; when more were found, `details.violationCount` is their total (data violations an
 *   event's data error counted but did not list included). In a batch, an event with the
 *   `source` + `id` of an earlier one is a violation (CEG_INVALID_ATTRIBUTE, attribute `id` with the event's `index`, as every attribute violation of a batch).
 */
export function prepareEvents(events: readonly (Envelope | undefined)[], codec: EventCodec, opts: PrepareOptions, batch: boolean, earlier: readonly Violation[] = []): PreparedEvent[] {
  const violations: Violation[] = [...earlier];
  const out: PreparedEvent[] = [];
  // One list for every event's problems, emptied after each (they are copied out): no array per event.
  const problems: Violation[] = [];
  // Data violations an event's data error counted but did not list (codec/data MAX_LISTED_VIOLATIONS).
  const unlisted = { count: 0 };
  // source → id → index of the first event of the batch with them.
  const seen = new Map<string, Map<string, number>>();
  for (let index = 0; index < events.length; index++) {
    const given = events[index];
    if (given === undefined) continue;
    const env = withRequestTrace(given, opts);
    if (batch) duplicateIdentity(seen, env.attributes, index, problems);
    const prepared = prepareOne(env, index, codec, opts, problems, unlisted);
    for (const p of problems) violations.push(batch ? { ...p, index } : p);
    if (prepared !== undefined && problems.length === 0) out.push(prepared);
    problems.length = 0;
  }
  if (violations.length > 0) {
    violations.sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    const codes = new Set(violations.map((v) => v.code ?? 'CEG_INVALID_EVENT'));
    const code: ErrorCode = codes.size === 1 ? [...codes][0]! : 'CEG_INVALID_EVENT';
    // One answer lists at most MAX_LISTED_VIOLATIONS (the first by index); `violationCount` has
    // the total, as the data cap says it (a batch of 1000 events × 95 bad names answered 14 MB).
    const total = violations.length + unlisted.count;
    const listed = violations.length > MAX_LISTED_VIOLATIONS ? violations.slice(0, MAX_LISTED_VIOLATIONS) : violations;
    throw new GatewayError(code, summary(violations, listed, total, events.length, batch), { retriable: false, details: total > listed.length ? { violations: listed, violationCount: total } : { violations: listed } });
  }
  return out;
}

/**
 * The event with the request's trace context when it has no `traceparent` of its own: the
 * request's `traceparent`, and its `tracestate` with it unless the event has one. Spec: W3C Trace
 * Context §3.2, §3.3 (the two headers travel together); issue 15 "Tracing".
 */
function withRequestTrace(given: Envelope, opts: PrepareOptions): Envelope {
  if (opts.traceparent === undefined || given.attributes.traceparent !== undefined) return given;
  const tracestate = given.attributes.tracestate === undefined ? opts.tracestate : undefined;
  return { ...given, attributes: { ...given.attributes, traceparent: opts.traceparent, ...(tracestate === undefined ? {} : { tracestate }) } };
}

/**
 * Refuses the second event of a batch with the `source` + `id` of an earlier one: "Producers MUST
 * ensure that source + id is unique for each distinct event" (CloudEvents 1.0.2 §id), and
 * consumers drop duplicates by source + id, so the later, different event would be silently lost
 * downstream. The violation names the later event (attribute `id`, `index`) and the earlier
 * index in its reason; the batch is refused whole like any other violation.
 */
function duplicateIdentity(seen: Map<string, Map<string, number>>, a: Attributes, index: number, problems: Violation[]): void {
  let ids = seen.get(a.source);
  if (ids === undefined) seen.set(a.source, (ids = new Map<string, number>()));
  const first = ids.get(a.id);
  if (first === undefined) {
    ids.set(a.id, index);
    return;
  }
  problems.push({ attribute: 'id', reason: `source + id repeat those of the event at index ${first}: each event of a batch needs its own (CloudEvents 1.0.2 §id; consumers drop duplicates by source + id)`, code: 'CEG_INVALID_ATTRIBUTE' });
}

function summary(violations: readonly Violation[], listed: readonly Violation[], count: number, total: number, batch: boolean): string {
  if (!batch) {
    const shown = listed.slice(0, 5).map((v) => `${v.attribute ?? v.field ?? 'event'}: ${v.reason}`).join('; ');
    return count > 5 ? `${shown} (+${count - 5} more)` : shown;
  }
  const bad = new Set(violations.map((v) => v.index)).size;
  return `${bad} of ${total} events are invalid; nothing was produced`;
}

function checkAttributeBounds(a: Attributes, problems: Violation[]): void {
  for (const name in a) {
    const value = a[name];
    if (name.length > MAX_ATTRIBUTE_NAME) {
      problems.push({ attribute: `${name.slice(0, 32)}…`, reason: `attribute name longer than ${MAX_ATTRIBUTE_NAME} characters`, code: 'CEG_INVALID_ATTRIBUTE' });
      // A string of n UTF-16 units takes at most 3n bytes: only a long one is counted exactly.
    } else if (typeof value === 'string' && value.length * 3 > MAX_ATTRIBUTE_BYTES && Buffer.byteLength(value) > MAX_ATTRIBUTE_BYTES) {
      problems.push({ attribute: name, reason: `value longer than ${MAX_ATTRIBUTE_BYTES} bytes; attributes are headers — put data in the data`, code: 'CEG_INVALID_ATTRIBUTE' });
    }
  }
}

function prepareOne(env: Envelope, index: number, codec: EventCodec, opts: PrepareOptions, problems: Violation[], unlisted: { count: number }): PreparedEvent | undefined {
  const a = env.attributes;
  checkAttributeBounds(a, problems);
  const binding = codec.binding(a.type);
  // An internal kind is never accepted over HTTP. A partner that sees it (an admin, or one naming
  // it in its grants) got 403 from admitEvents before this; to everyone else it is answered as
  // unknown, word for word, so the answer never confirms it exists (issue 11; docs/security.md).
  if (binding === undefined || binding.kind.internal) {
    problems.push({ attribute: 'type', reason: unknownTypeReason(codec.catalog, a.type), code: 'CEG_UNKNOWN_TYPE' });
    return undefined;
  }
  if (!binding.kind.publish) {
    problems.push({ attribute: 'type', reason: `event kind ${binding.kind.name} is not published (catalog: publish: false)`, code: 'CEG_UNKNOWN_TYPE' });
    return undefined;
  }
  if (a.time === undefined) problems.push({ attribute: 'time', reason: 'required by this gateway: the instant the event happened, RFC 3339 with an offset', code: 'CEG_MISSING_ATTRIBUTE' });

  const version = chooseVersion(a, binding, opts, problems);
  const json = dataAsJson(env, problems);
  if (json === undefined && problems.length > 0) return undefined;
  let key: string | undefined;
  let value: Uint8Array | undefined;
  if (json === undefined) {
    if (problems.length === 0) checkTombstone(a, binding.kind, problems);
    key = typeof a.partitionkey === 'string' ? a.partitionkey : undefined;
  } else {
    if (version === undefined) return undefined;
    try {
      value = codec.encodeData(version, json);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      const listed = violationsOf(err);
      for (const v of listed) problems.push({ ...v, field: `/data${v.field ?? ''}`, code: 'CEG_INVALID_DATA' });
      const counted = err.details.violationCount;
      if (typeof counted === 'number' && counted > listed.length) unlisted.count += counted - listed.length;
      return undefined;
    }
    try {
      key = partitionKey(binding.kind, json);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      const field = typeof err.details.field === 'string' ? err.details.field.replace(/^\/+/, '') : '';
      problems.push({ field: field === '' ? '/data' : `/data/${field}`, reason: err.message, code: 'CEG_INVALID_DATA' });
      return undefined;
    }
    if (a.partitionkey !== undefined && a.partitionkey !== key) {
      problems.push({ attribute: 'partitionkey', reason: `differs from the key computed from the data ("${key}"); leave it out`, code: 'CEG_PARTITION_KEY_MISMATCH' });
    }
  }
  if (problems.length > 0 || version === undefined) return undefined;

  let event;
  try {
    event = completeOutbound(codec, a, { binding, version, value: value ?? null, partitionkey: key, dataschemaBase: opts.dataschemaBase, limits: opts.limits ?? DEFAULT_ENVELOPE_LIMITS, ...(opts.reserveTraceparent === true ? { reserve: TRACEPARENT_RESERVE } : {}) });
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    for (const v of violationsOf(err)) problems.push({ ...v, code: v.code ?? err.code });
    return undefined;
  }
  const max = opts.maxMessageBytes?.(event.topic);
  // As written: with the traceparent the ingress adds when tracing is on.
  const recordBytes = recordBatchBytes(event.writtenHeaders === event.record.headers ? event.record : { ...event.record, headers: event.writtenHeaders });
  const bytes = BATCH_HEADER_BYTES + recordBytes;
  if (max !== undefined && bytes > max) {
    problems.push({ field: '/data', reason: `the record would take ${bytes} bytes; topic ${event.topic} takes at most ${max} (max.message.bytes)`, code: 'CEG_PAYLOAD_TOO_LARGE', limit: 'maxMessageBytes', max });
    return undefined;
  }
  return { index, id: a.id, topic: event.topic, kind: binding.kind.name, record: event.record, bytes: recordBytes };
}

/**
 * An event without data becomes a tombstone, which only means something on a compacted topic:
 * elsewhere it is refused (a forgotten body must not silently become a deletion marker).
 */
function checkTombstone(a: Attributes, kind: EventKind, problems: Violation[]): void {
  if (!kind.topic.cleanupPolicy.includes('compact')) {
    problems.push({ field: '/data', reason: `data is required: ${kind.name} is not on a compacted topic, so an event without data (a tombstone) means nothing there`, code: 'CEG_INVALID_DATA' });
  } else if (typeof a.partitionkey !== 'string') {
    problems.push({ attribute: 'partitionkey', reason: 'an event without data (a tombstone) needs the partitionkey of the entry it deletes', code: 'CEG_MISSING_ATTRIBUTE' });
  }
}

const URI_WITH_AUTHORITY = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([\s\S]*)$/;
const HOST_PORT = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/;
const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: '80', https: '443' };

/** The last `DATASCHEMA_BASE_URL` normalised (one per gateway; looked at per event). */
let lastBase: { readonly raw: string; readonly normal: string } | undefined;
function normalisedBase(raw: string): string {
  if (lastBase?.raw !== raw) lastBase = { raw, normal: normaliseUri(raw) };
  return lastBase.normal;
}

/**
 * `uri` in the form two equivalent URIs share, so that one can be compared with another by its
 * text: the scheme and the host in lower case and percent-encoded octets' hex digits in upper case
 * (RFC 3986 §6.2.2.1: they are case-insensitive), and an empty or default port of http/https left
 * out (§6.2.3). The user information, path and query are kept as they are (case-sensitive). A
 * text that is no URI with an authority is returned as it is.
 */
export function normaliseUri(uri: string): string {
  const m = URI_WITH_AUTHORITY.exec(uri);
  if (m === null) return uri;
  const scheme = m[1]!.toLowerCase();
  const authority = m[2]!;
  const at = authority.lastIndexOf('@');
  const hp = HOST_PORT.exec(authority.slice(at + 1));
  if (hp === null) return uri;
  const port = hp[2] === undefined || hp[2] === '' || hp[2] === DEFAULT_PORTS[scheme] ? '' : `:${hp[2]}`;
  const upperHex = (t: string): string => t.replace(/%[0-9a-fA-F]{2}/g, (e) => e.toUpperCase());
  return `${scheme}://${upperHex(authority.slice(0, at + 1))}${upperHex(hp[1]!.toLowerCase())}${port}${upperHex(m[3]!)}`;
}

/**
 * The schema version the data is validated and written with: the one the partner's `dataschema`
 * names when it is one of ours and registered for this kind, else the latest. A `dataschema` of
 * ours naming an id that is not a version of this kind is refused (DESIGN "The envelope"). "Ours"
 * is compared normalised ({@link normaliseUri}): `HTTP://GW.example/…` is the same URI as
 * `http://gw.example/…` (RFC 3986 §3.1, §3.2.2, §6.2.2.1).
 */
function chooseVersion(a: Attributes, binding: KindBinding, opts: PrepareOptions, problems: Violation[]): SchemaVersion | undefined {
  // Runs per event: nothing to normalise without a dataschema, and the base once per gateway.
  if (a.dataschema === undefined) return binding;
  const named = normaliseUri(a.dataschema);
  const base = normalisedBase(opts.dataschemaBase);
  if (!named.startsWith(base)) return binding;
  // The id as the gateway writes it (decimal, no sign, no leading zero): `01`, `1.0` or `0x1`
  // would name the same schema under other spellings.
  const text = named.slice(base.length);
  const version = /^(0|[1-9]\d{0,9})$/.test(text) ? binding.versions.get(Number(text)) : undefined;
  if (version === undefined) {
    problems.push({ attribute: 'dataschema', reason: `names a schema that is not a registered version of ${binding.kind.subject}; leave it out to use the latest`, code: 'CEG_INVALID_ATTRIBUTE' });
  }
  return version;
}

/**
 * The data as natural JSON. Bytes (structured mode `data_base64`) are read when the
 * `datacontenttype` declares JSON, with the same rules as a JSON body in binary mode (codec/json
 * `readJsonData`: UTF-8 checked, BOM ignored, duplicate names refused, `text/json` and `+json` alike).
 * A JSON `datacontenttype` with a `charset` other than UTF-8 is refused (CEG_INVALID_ATTRIBUTE),
 * unless the charset is a superset of US-ASCII and the data is all ASCII (codec/json `charsetProblem`).
 */
function dataAsJson(env: Envelope, problems: Violation[]): JsonValue | undefined {
  const d = env.data;
  if (d === undefined) return undefined;
  const ct = env.attributes.datacontenttype;
  // The data is JSON, read and forwarded as UTF-8: a JSON datacontenttype declaring another
  // charset would tell every reader to misread it (binary mode answers 415 before this).
  const mt = ct === undefined ? undefined : parseMediaType(ct);
  // The data as its datacontenttype describes it: the JSON text (all-ASCII data reads the same in an ASCII-superset charset), or data_base64's bytes.
  const charset = mt !== undefined && isJsonMediaType(mt) ? charsetProblem(mt, 'JSON data', () => (d.kind === 'json' ? JSON.stringify(d.value) : d.bytes)) : undefined;
  if (charset !== undefined) {
    problems.push({ attribute: 'datacontenttype', reason: charset, code: 'CEG_INVALID_ATTRIBUTE' });
    return undefined;
  }
  if (d.kind === 'json') return d.value;
  if (!declaresJson(ct)) {
    problems.push({ attribute: 'datacontenttype', reason: `data must be JSON-formatted (application/json or any */json, */*+json), got ${String(ct)}`, code: 'CEG_INVALID_DATA' });
    return undefined;
  }
  const out = new ViolationCollector();
  const json = readJsonData(d.bytes, '/data_base64', ct ?? 'application/json', out);
  for (const v of out.items) problems.push({ ...v, code: 'CEG_INVALID_DATA' });
  return json?.value;
}

function violationsOf(err: GatewayError): Violation[] {
  const v = err.details.violations;
  if (Array.isArray(v)) return v as Violation[];
  const d = err.details;
  // A size bound keeps its name and value in the violation (docs/errors.md: the answer names the bound).
  const bound = typeof d.limit === 'string' && typeof d.max === 'number' ? { limit: d.limit, max: d.max } : {};
  return [{ field: typeof d.field === 'string' ? d.field : '', reason: err.message, ...bound }];
}
