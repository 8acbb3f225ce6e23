/**
 * A pulled event as the partner gets it: one object of the CloudEvents JSON event format (an entry
 * of an `application/cloudevents-batch+json` array, or the `data:` of one SSE message).
 * - `data: json`: the data decoded from Avro with the catalog's reader schema, as JSON, with
 *   `datacontenttype: application/json` (the record said `application/avro`, which no longer
 *   describes `data` as carried) — what a push subscription's structured body holds.
 * - `data: avro`: the record's own Confluent-framed Avro bytes as `data_base64`, with
 *   `datacontenttype: application/avro`; `dataschema` names the schema. A record written in
 *   structured mode (JSON data) is encoded with the kind's current schema.
 * Spec: CloudEvents JSON format 1.0.2 §3.1 (data, data_base64), CloudEvents 1.0.2 §3.1.1
 *   (`datacontenttype` describes `data` as carried).
 */
import { GatewayError } from '../../../core/errors.js';
import { AVRO_CONTENT_TYPE } from '../../../codec/event/index.js';
import type { EventCodec } from '../../../codec/event/index.js';
import { declaresJson, toStructuredJson } from '../../../codec/json/index.js';
import type { Envelope, JsonValue } from '../../../envelope/index.js';
import type { TransportRecord } from '../../../transport/port.js';

// ignoreBOM: a leading U+FEFF in a header value or key is part of it (CloudEvents attributes may start with one).
const dec = new TextDecoder('utf-8', { ignoreBOM: true });

/** JSON view: decoded JSON data under a non-JSON media type becomes `application/json`. */
function jsonData(event: Envelope): Envelope {
  const d = event.data;
  if (d === undefined || d.kind !== 'json') return event;
  const ct = event.attributes.datacontenttype;
  if (declaresJson(typeof ct === 'string' ? ct : undefined)) return event;
  if (typeof d.value === 'string' && ct !== AVRO_CONTENT_TYPE) return event;
  return { attributes: { ...event.attributes, datacontenttype: 'application/json' }, data: d };
}

/** The record's value when it is Confluent-framed Avro under `content-type: application/avro`. */
function avroValue(record: TransportRecord): Uint8Array | undefined {
  if (record.value === null || record.value.length < 5 || record.value[0] !== 0) return undefined;
  const ct = record.headers.find(([n]) => n === 'content-type');
  return ct !== undefined && dec.decode(ct[1]) === AVRO_CONTENT_TYPE ? record.value : undefined;
}

/**
 * The JSON-format object of a decoded event.
 * Errors: CEG_INVALID_DATA (not retriable) when the data cannot be written as asked (JSON data of a
 *   kind this gateway did not register, for `avro`; non-string data under a non-JSON type).
 */
export function pulledEventJson(event: Envelope, record: TransportRecord, data: 'json' | 'avro', codec: EventCodec): Record<string, JsonValue> {
  if (data === 'json' || event.data === undefined) return toStructuredJson(jsonData(event));
  const raw = avroValue(record);
  if (raw !== undefined) return toStructuredJson({ attributes: { ...event.attributes, datacontenttype: AVRO_CONTENT_TYPE }, data: { kind: 'binary', bytes: raw } });
  const binding = codec.binding(event.attributes.type);
  if (binding === undefined || event.data.kind !== 'json') {
    throw new GatewayError('CEG_INVALID_DATA', 'data: avro needs data of a kind this gateway registered', { retriable: false, details: { field: 'delivery.data' } });
  }
  return toStructuredJson({ attributes: { ...event.attributes, datacontenttype: AVRO_CONTENT_TYPE }, data: { kind: 'binary', bytes: codec.encodeData(binding, event.data.value) } });
}
