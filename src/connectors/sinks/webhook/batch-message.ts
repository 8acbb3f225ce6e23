/**
 * The request of a batched push delivery: the CloudEvents HTTP binding's batched content mode, a
 * JSON array of events in the JSON event format (`content-type: application/cloudevents-batch+json`).
 * Each event is encoded once, when it joins a batch (its bytes count towards `maxBytes`); the body
 * is the encoded events joined, in the batch's order. Data as for single deliveries
 * ({@link outgoingEnvelope}): JSON decoded from Avro, or for `data: avro` the record's Avro bytes
 * as `data_base64` with `datacontenttype: application/avro`.
 * The `webhook-id` of a batch is derived from its events (see {@link batchMessageId}).
 * Spec: CloudEvents HTTP binding 1.0.2 §3.3 (batched content mode); JSON event format 1.0.2 §4
 *   (batch), §3.1.1 (data_base64); Standard Webhooks 1.0.0 ("webhook-id").
 */
import { hash } from 'node:crypto';
import type { EventCodec } from '../../../codec/event/index.js';
import { BATCH_JSON, structuredJsonText } from '../../../codec/http/index.js';
import type { Envelope } from '../../../envelope/types.js';
import type { TransportRecord } from '../../../transport/port.js';
import { outgoingEnvelope } from './message.js';
import type { MessageOptions } from './message.js';

/** `content-type` of a batch request. */
export const BATCH_CONTENT_TYPE = `${BATCH_JSON}; charset=utf-8`;

/** One element of a batch: its JSON text and that text's UTF-8 size in bytes. */
export interface BatchElement {
  readonly json: string;
  readonly bytes: number;
}

/**
 * One event of a batch as JSON (an element of the array), with its size. Text, not bytes: the
 * body is written once from all elements ({@link batchBody}), so no buffer per event.
 * Errors: as {@link outgoingEnvelope}, and CEG_INVALID_DATA when the data cannot be written as JSON.
 */
export function batchElement(event: Envelope, record: TransportRecord | undefined, o: Pick<MessageOptions, 'data'>, codec?: EventCodec): BatchElement {
  const json = structuredJsonText(outgoingEnvelope(event, record, { contentMode: 'structured', data: o.data }, codec));
  return { json, bytes: Buffer.byteLength(json, 'utf8') };
}

const OPEN = 0x5b; // [
const COMMA = 0x2c; // ,
const CLOSE = 0x5d; // ]

/** The body of a batch: `[` elements joined by `,` `]`, in the given order, written into one buffer. */
export function batchBody(elements: readonly BatchElement[]): Buffer {
  let size = 2 + Math.max(0, elements.length - 1);
  for (const e of elements) size += e.bytes;
  const body = Buffer.allocUnsafe(size);
  let at = 0;
  body[at++] = OPEN;
  for (let i = 0; i < elements.length; i++) {
    if (i > 0) body[at++] = COMMA;
    at += body.write(elements[i]!.json, at, 'utf8');
  }
  body[at++] = CLOSE;
  return at === size ? body : body.subarray(0, at);
}

/**
 * The `webhook-id` of a batch: `msg_` + base64url of SHA-256 over the events' `source` and `id`
 * in the batch's order, 22 characters. The same events in the same order (a batch sent again as it
 * was) get the same id; a batch composed differently on retry (events join other batches) gets
 * another, so sinks drop redeliveries per event, by `source` + `id` (docs/subscriptions.md).
 */
export function batchMessageId(events: readonly { readonly source: string; readonly id: string }[]): string {
  // One update of one text (the same bytes as an update per part): a native call per part cost
  // four per event (issue 8 profile).
  let text = 'batch\0';
  for (const e of events) text += `${e.source}\0${e.id}\0`;
  return `msg_${hash('sha256', text, 'base64url').slice(0, 22)}`;
}
