/**
 * The HTTP request of one push delivery, in the CloudEvents HTTP binding: binary content mode by
 * default (one `ce-` header per attribute, percent-encoded; the data as the body), structured mode
 * on request (`application/cloudevents+json`). The data is JSON decoded from Avro (`data: json`,
 * `datacontenttype: application/json`) or the Avro bytes as they are on Kafka (`data: avro`:
 * the Confluent frame — magic byte, schema id, Avro binary — with `datacontenttype:
 * application/avro`; `dataschema` names the schema). The Kafka key and the record's other headers
 * never become HTTP headers: only the event's attributes do.
 * Spec: CloudEvents HTTP binding 1.0.2 §3.1 (binary; §3.1.3.2 percent-encoding), §3.2 (structured);
 *   JSON format §3.1 (data_base64 for binary data).
 */
import type { EventCodec } from '../../../codec/event/index.js';
import { AVRO_CONTENT_TYPE } from '../../../codec/event/index.js';
import { toBinaryHttp, toStructuredHttp } from '../../../codec/http/index.js';
import type { HttpMessage } from '../../../codec/http/index.js';
import { GatewayError } from '../../../core/errors.js';
import type { Envelope } from '../../../envelope/types.js';
import type { TransportRecord } from '../../../transport/port.js';
import { jsonView } from '../../event-view.js';

export interface MessageOptions {
  readonly contentMode: 'binary' | 'structured';
  readonly data: 'json' | 'avro';
}

const dec = new TextDecoder();

/** The record's value when it is Confluent-framed Avro under `content-type: application/avro`. */
function avroValue(record: TransportRecord | undefined): Uint8Array | undefined {
  if (record?.value == null || record.value.length < 5 || record.value[0] !== 0) return undefined;
  const ct = record.headers.find(([n]) => n === 'content-type');
  return ct !== undefined && dec.decode(ct[1]) === AVRO_CONTENT_TYPE ? record.value : undefined;
}

/**
 * The envelope to send: for `avro`, the record's own Avro bytes (or, for a record that was written
 * in structured mode, the data encoded with the kind's current schema).
 * Errors: CEG_INVALID_DATA (retriable false) when JSON data cannot be encoded for `avro`.
 */
export function outgoingEnvelope(event: Envelope, record: TransportRecord | undefined, o: MessageOptions, codec: EventCodec | undefined): Envelope {
  if (o.data === 'json' || event.data === undefined) return jsonView(event);
  const raw = avroValue(record);
  if (raw !== undefined) return { attributes: { ...event.attributes, datacontenttype: AVRO_CONTENT_TYPE }, data: { kind: 'binary', bytes: raw } };
  const binding = codec?.binding(event.attributes.type);
  if (binding === undefined || event.data.kind !== 'json') {
    throw new GatewayError('CEG_INVALID_DATA', 'data: avro needs data of a kind this gateway registered', { retriable: false, details: { field: 'delivery.data' } });
  }
  return { attributes: { ...event.attributes, datacontenttype: AVRO_CONTENT_TYPE }, data: { kind: 'binary', bytes: codec!.encodeData(binding, event.data.value) } };
}

/** Headers and body of the delivery (before signing). Errors: as {@link outgoingEnvelope}. */
export function deliveryMessage(event: Envelope, record: TransportRecord | undefined, o: MessageOptions, codec?: EventCodec): HttpMessage {
  const env = outgoingEnvelope(event, record, o, codec);
  return o.contentMode === 'structured' ? toStructuredHttp(env) : toBinaryHttp(env);
}
