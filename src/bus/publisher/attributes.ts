/**
 * Builds a complete, validated event for one kind from the model and the process: the envelope
 * attributes a publisher fills and the Confluent-framed Avro value. Shared by the direct publish
 * path ({@link Publisher}) and the transactional outbox (bus/outbox), so both emit identical
 * envelopes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { GatewayError } from '../../core/errors.js';
import { partitionKey } from '../../catalog/index.js';
import { completeOutbound } from '../../codec/event/index.js';
import type { EventCodec, KindBinding } from '../../codec/event/index.js';
import type { Attributes, JsonValue } from '../../envelope/types.js';
import { ViolationCollector, checkAttribute, violationsError } from '../../envelope/index.js';
import type { OutboundRecord } from '../../transport/port.js';
import { currentHandling } from '../correlation/index.js';
import { kindOf } from '../../catalog/lookup.js';

/** One value per process run (bus spec M1 `correlationAssemblyId` → extension `runid`). */
export const processRunId: string = randomUUID();

export interface PublishOptions {
  /** CloudEvents `subject`. */
  readonly subject?: string;
  /** Overrides the inherited or new correlation id. */
  readonly correlationid?: string;
  /** Publish even when the catalog declares `publish: false` (bus spec P1: explicit run-time override). */
  readonly overridePublishPolicy?: boolean;
  /** Event time; default now (UTC). */
  readonly time?: Date;
}

export interface PublisherIdentity {
  readonly service: string;
  readonly instance: string;
  readonly dataschemaBase: string;
}

/** A fully built event, ready to become a record. */
export interface PreparedEvent {
  readonly binding: KindBinding;
  /** Topic of the kind (catalog). */
  readonly topic: string;
  readonly attributes: Attributes;
  /** Confluent-framed Avro data. */
  readonly value: Uint8Array;
  /** The record (binary content mode), built once here. */
  readonly record: OutboundRecord;
}

/** `source` of a publisher identity: `urn:<service>:<instance>` (bus spec T1: endpoint = service + instance). */
const TRACEPARENT = /^00-([0-9a-f]{32})-[0-9a-f]{16}-([0-9a-f]{2})$/;

/**
 * W3C Trace Context for an emitted event: inside a handler the trace continues (same trace-id, a
 * new parent-id, the same flags); outside one a new trace starts (sampled).
 * Spec: W3C Trace Context §3.2 (traceparent: version-traceid-parentid-flags); CloudEvents
 * distributed-tracing extension.
 */
export function childTraceparent(parent: string | undefined): string {
  const span = randomBytes(8).toString('hex');
  const m = parent === undefined ? null : TRACEPARENT.exec(parent);
  if (m !== null && !/^0+$/.test(m[1]!)) return `00-${m[1]}-${span}-${m[2]}`;
  return `00-${randomBytes(16).toString('hex')}-${span}-01`;
}

export function sourceOf(identity: PublisherIdentity): string {
  return `urn:${identity.service}:${identity.instance}`;
}

/**
 * The attributes a caller gives (`subject`, `correlationid`, `time`) by the rules ingress applies:
 * an empty `correlationid` was taken and inherited by every event of the chain, which then shared
 * no trace (bus spec M2, T15), and an invalid `time` threw a bare RangeError.
 * Errors: CEG_INVALID_ATTRIBUTE (retriable: false) naming each attribute.
 */
export function checkPublishOptions(opts: PublishOptions): void {
  if (opts.subject === undefined && opts.correlationid === undefined && opts.time === undefined) return;
  const out = new ViolationCollector();
  if (opts.subject !== undefined) checkAttribute('subject', opts.subject, out);
  if (opts.correlationid !== undefined) checkAttribute('correlationid', opts.correlationid, out);
  if (opts.time !== undefined && !(opts.time instanceof Date && Number.isFinite(opts.time.getTime()) && opts.time.getUTCFullYear() >= 1 && opts.time.getUTCFullYear() <= 9999)) {
    out.attribute('time', 'must be a valid Date within years 0001–9999');
  }
  if (out.size > 0) throw violationsError('CEG_INVALID_ATTRIBUTE', out.items);
}

/**
 * Resolves the kind (eventId or business name), applies the publication policy, encodes and
 * size-checks the data, and fills the envelope: `id`, `source`, `time` (UTC), `correlationid` /
 * `causationid` / `traceparent` (inherited while handling an event), `runid`, `eventname`,
 * `eventclass`, `schemaversion`, `dataschema`, `partitionkey`.
 * Returns undefined when the catalog says `publish: false` and no override was asked for.
 * Errors: CEG_UNKNOWN_TYPE, CEG_INVALID_ATTRIBUTE (`subject`, `correlationid`, `time` of `opts`),
 * CEG_INVALID_DATA, CEG_PAYLOAD_TOO_LARGE (retriable: false).
 * Spec: bus spec M1–M6, P1, S2; DESIGN "The envelope".
 */
export function prepareEvent(codec: EventCodec, identity: PublisherIdentity, kind: string, data: JsonValue, opts: PublishOptions = {}): PreparedEvent | undefined {
  const found = kindOf(codec.catalog, kind);
  const binding = found && codec.binding(found.eventId);
  if (binding === undefined) throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${kind}"`, { retriable: false, details: { attribute: 'type' } });
  if (!binding.kind.publish && opts.overridePublishPolicy !== true) return undefined;
  checkPublishOptions(opts);
  const value = codec.encodeData(binding, data);
  const handling = currentHandling();
  const base: Attributes = {
    specversion: '1.0',
    id: randomUUID(),
    source: sourceOf(identity),
    type: binding.kind.eventId,
    time: (opts.time ?? new Date()).toISOString(),
    ...(opts.subject === undefined ? {} : { subject: opts.subject }),
    correlationid: opts.correlationid ?? handling?.correlationid ?? randomUUID(),
    ...(handling === undefined ? {} : { causationid: handling.eventId }),
    traceparent: childTraceparent(handling?.traceparent),
    runid: processRunId,
  };
  // The gateway attributes, the size bound (M6, attributes included) and the record: as at HTTP ingress.
  const event = completeOutbound(codec, base, { binding, value, partitionkey: partitionKey(binding.kind, data), dataschemaBase: identity.dataschemaBase });
  return { binding, topic: event.topic, attributes: event.attributes, value, record: event.record };
}
