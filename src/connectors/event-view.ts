/**
 * The form in which sinks hand an event to the outside world. A subscriber receives records'
 * data decoded from Avro into natural JSON while `datacontenttype` still says
 * `application/avro` (the record's media type); outside the bus the event is JSON, so its
 * `datacontenttype` becomes `application/json`. Everything else is unchanged.
 * Spec: CloudEvents 1.0.2 §3.1.1 `datacontenttype` (describes `data` as carried); JSON format
 * 1.0.2 §3.1.1 (JSON data is a JSON value only with a JSON media type).
 */
import { AVRO_CONTENT_TYPE } from '../codec/event/index.js';
import { declaresJson } from '../codec/json/index.js';
import type { Envelope } from '../envelope/types.js';

/** Media type of event data as sinks write it. */
export const JSON_CONTENT_TYPE = 'application/json';

/**
 * `event` with `datacontenttype: application/json` when its data is decoded JSON under a non-JSON
 * media type (Avro records; or a JSON object/array under any other type); else `event` itself.
 * A string value under a textual media type (text/plain…) stays as it is.
 */
export function jsonView(event: Envelope): Envelope {
  const d = event.data;
  if (d === undefined || d.kind !== 'json') return event;
  const ct = event.attributes.datacontenttype;
  if (declaresJson(typeof ct === 'string' ? ct : undefined)) return event;
  if (typeof d.value === 'string' && ct !== AVRO_CONTENT_TYPE) return event;
  return Object.freeze({ attributes: Object.freeze({ ...event.attributes, datacontenttype: JSON_CONTENT_TYPE }), data: d });
}
