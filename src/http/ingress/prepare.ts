/**
 * Turns the partner's parsed CloudEvents into records, validating everything before anything is
 * produced: a request is accepted whole or refused whole (batch mode included).
 * Who fills what (DESIGN "The envelope"): the partner sends the required attributes, `time`,
 * `subject` and data, and may send `correlationid` and `traceparent`; the gateway fills
 * `eventname`, `schemaversion`, `dataschema`, `eventclass`, `partitionkey` from the model, and a new
 * `correlationid` when none came. A partner `partitionkey` that differs is refused.
 */
import { randomUUID } from 'node:crypto';
import { GatewayError } from '../../core/errors.js';
import { partitionKey } from '../../catalog/index.js';
import type { EventKind } from '../../catalog/index.js';
import type { EventCodec, KindBinding, SchemaVersion } from '../../codec/event/index.js';
import type { Attributes, Envelope, JsonValue } from '../../envelope/types.js';
import type { Violation } from '../../envelope/index.js';
import type { OutboundRecord } from '../../transport/port.js';

export interface PreparedEvent {
  readonly index: number;
  readonly id: string;
  readonly topic: string;
  readonly record: OutboundRecord;
}

export interface PrepareOptions {
  /** Public base of `dataschema`; the schema id is appended. */
  readonly dataschemaBase: string;
}

const JSON_MEDIA = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * Validates and completes every event, then encodes it.
 * Errors: CEG_INVALID_EVENT (retriable: false) with `details.violations` — each names the
 *   attribute or data field (JSON pointer under `/data`), and `index` for batch mode; nothing is
 *   encoded when any event is bad. CEG_PAYLOAD_TOO_LARGE when the only problem is a data bound.
 */
export function prepareEvents(events: readonly Envelope[], codec: EventCodec, opts: PrepareOptions, batch: boolean): PreparedEvent[] {
  const violations: Violation[] = [];
  const out: PreparedEvent[] = [];
  events.forEach((env, index) => {
    const problems: Violation[] = [];
    const prepared = prepareOne(env, codec, opts, problems);
    for (const p of problems) violations.push(batch ? { ...p, index } : p);
    if (prepared !== undefined && problems.length === 0) out.push({ index, ...prepared });
  });
  if (violations.length > 0) {
    const onlySize = violations.every((v) => v.reason.startsWith('data is larger than'));
    throw new GatewayError(onlySize ? 'CEG_PAYLOAD_TOO_LARGE' : 'CEG_INVALID_EVENT', summary(violations, events.length, batch), {
      retriable: false,
      details: { violations },
    });
  }
  return out;
}

function summary(violations: readonly Violation[], total: number, batch: boolean): string {
  if (!batch) return violations.map((v) => `${v.attribute ?? v.field ?? 'event'}: ${v.reason}`).join('; ');
  const bad = new Set(violations.map((v) => v.index)).size;
  return `${bad} of ${total} events are invalid; nothing was produced`;
}

function prepareOne(env: Envelope, codec: EventCodec, opts: PrepareOptions, problems: Violation[]): Omit<PreparedEvent, 'index'> | undefined {
  const a = env.attributes;
  const binding = codec.binding(a.type);
  if (binding === undefined) {
    problems.push({ attribute: 'type', reason: `unknown event type "${a.type}": not an eventId of the catalog` });
    return undefined;
  }
  if (!binding.kind.publish) {
    problems.push({ attribute: 'type', reason: `event kind ${binding.kind.name} is not published (catalog: publish: false)` });
    return undefined;
  }
  if (a.time === undefined) problems.push({ attribute: 'time', reason: 'required by this gateway: the instant the event happened, RFC 3339 with an offset' });

  const version = chooseVersion(a, binding, opts, problems);
  const json = dataAsJson(env, problems);
  let key: string | undefined;
  let value: Uint8Array | undefined;
  if (json === undefined) {
    if (problems.length === 0 && typeof a.partitionkey !== 'string') {
      problems.push({ attribute: 'partitionkey', reason: 'an event without data (a tombstone) needs partitionkey' });
    }
    key = typeof a.partitionkey === 'string' ? a.partitionkey : undefined;
  } else {
    try {
      if (version === undefined) return undefined;
      value = codec.encodeData(version, json);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      for (const v of violationsOf(err)) problems.push({ ...v, field: `/data${v.field ?? ''}` });
      return undefined;
    }
    try {
      key = partitionKey(binding.kind, json);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      const field = typeof err.details.field === 'string' ? err.details.field : '';
      problems.push({ field: `/data/${field}`.replace(/\/+$/, ''), reason: err.message });
      return undefined;
    }
    if (a.partitionkey !== undefined && a.partitionkey !== key) {
      problems.push({ attribute: 'partitionkey', reason: `differs from the key computed from the data ("${key}"); leave it out` });
    }
    const bytes = value.length - 5;
    if (bytes > binding.kind.maxDataBytes) {
      problems.push({ field: '/data', reason: `data is larger than the ${binding.kind.eventClass} bound of ${binding.kind.name}: ${bytes} > ${binding.kind.maxDataBytes} bytes (Avro)` });
    }
  }
  if (problems.length > 0) return undefined;

  const attributes: Attributes = complete(a, binding.kind, version ?? binding, key, opts);
  return { id: a.id, topic: binding.kind.topic.name, record: codec.toRecord(attributes, value ?? null) };
}

/**
 * The schema version the data is validated and written with: the one the partner's `dataschema`
 * names when it is one of ours and registered for this kind, else the latest. A `dataschema` of
 * ours naming an id that is not a version of this kind is refused (DESIGN "The envelope").
 */
function chooseVersion(a: Attributes, binding: KindBinding, opts: PrepareOptions, problems: Violation[]): SchemaVersion | undefined {
  const named = a.dataschema;
  if (named === undefined || !named.startsWith(opts.dataschemaBase)) return binding;
  const id = Number(named.slice(opts.dataschemaBase.length));
  const version = Number.isInteger(id) ? binding.versions.get(id) : undefined;
  if (version === undefined) {
    problems.push({ attribute: 'dataschema', reason: `names a schema that is not a registered version of ${binding.kind.subject}; leave it out to use the latest` });
  }
  return version;
}

function complete(a: Attributes, kind: EventKind, v: SchemaVersion, key: string | undefined, opts: PrepareOptions): Attributes {
  return {
    ...a,
    correlationid: typeof a.correlationid === 'string' && a.correlationid !== '' ? a.correlationid : randomUUID(),
    eventname: kind.name,
    eventclass: kind.eventClass,
    schemaversion: v.schema.version,
    dataschema: `${opts.dataschemaBase}${v.schema.id}`,
    ...(key === undefined ? {} : { partitionkey: key }),
  };
}

function dataAsJson(env: Envelope, problems: Violation[]): JsonValue | undefined {
  const d = env.data;
  if (d === undefined) return undefined;
  if (d.kind === 'json') return d.value;
  const ct = env.attributes.datacontenttype ?? 'application/json';
  if (!JSON_MEDIA.test(ct)) {
    problems.push({ attribute: 'datacontenttype', reason: `data must be JSON (application/json), got ${ct}` });
    return undefined;
  }
  try {
    return JSON.parse(Buffer.from(d.bytes).toString('utf8')) as JsonValue;
  } catch {
    problems.push({ field: '/data', reason: 'data is not valid JSON' });
    return undefined;
  }
}

function violationsOf(err: GatewayError): Violation[] {
  const v = err.details.violations;
  return Array.isArray(v) ? (v as Violation[]) : [{ field: typeof err.details.field === 'string' ? err.details.field : '', reason: err.message }];
}
