/**
 * Stage 2: decode and validate. Binary- and structured-mode records alike go through the registry
 * and the kind's reader schema (EventCodec.fromRecord), then through CloudEvents envelope
 * validation. Shared by subscriptions, connectors, `tail` and `trace`, so that what a subscription
 * would dead-letter shows as invalid everywhere, with the same reason.
 * Spec: CloudEvents 1.0.2 §3 (attributes), Kafka binding §3.2/§3.3; bus spec S5 (poison), M4.
 */
import { GatewayError, errorMessage } from '../../../core/errors.js';
import type { EventCodec } from '../../../codec/event/index.js';
import { fromRecord } from '../../../codec/kafka/index.js';
import type { RecordEvent } from '../../../codec/kafka/index.js';
import { validateEnvelope } from '../../../envelope/index.js';
import type { Envelope } from '../../../envelope/types.js';
import type { TransportRecord } from '../../../transport/port.js';

/** A decoded record: the event, or why it is not a valid event of the catalog. */
export type Decoded =
  | { readonly ok: true; readonly event: Envelope }
  /** `retriable`: a failure that is not the record's (the registry unreachable or refusing the gateway) — try again, never dead-letter for it. */
  | { readonly ok: false; readonly reason: string; readonly code: string; readonly retriable: boolean };

/** The record's CloudEvent headers, or undefined when they do not parse (then decoding reports why). */
export function peekHeaders(record: TransportRecord): RecordEvent | undefined {
  try {
    return fromRecord(record);
  } catch {
    return undefined;
  }
}

/** The `type` of a binary-mode record without decoding its data; undefined for structured or unreadable records. */
export function peekType(headers: RecordEvent | undefined): string | undefined {
  return headers?.mode === 'binary' ? headers.attributes.type : undefined;
}

/**
 * Decodes the record into an envelope whose data is natural JSON in the catalog's reader schema,
 * then validates the envelope. Never throws.
 */
export async function decodeRecord(codec: EventCodec, record: TransportRecord, headers?: RecordEvent): Promise<Decoded> {
  try {
    return validated(await codec.fromRecord(record, 'catalog', headers));
  } catch (err) {
    return failed(err);
  }
}

/**
 * {@link decodeRecord} without waiting: the result when the codec can decode the record now (its
 * writer schema is known here: nearly every record), undefined when only decodeRecord can (a first
 * record of a schema, a structured-mode record). Never throws.
 */
export function decodeRecordNow(codec: EventCodec, record: TransportRecord, headers?: RecordEvent): Decoded | undefined {
  try {
    const event = codec.fromRecordNow(record, 'catalog', headers);
    return event === undefined ? undefined : validated(event);
  } catch (err) {
    return failed(err);
  }
}

function validated(event: Envelope): Decoded {
  const violations = validateEnvelope(event);
  if (violations.length > 0) {
    const list = violations.map((v) => `${v.attribute ?? v.field ?? 'event'}: ${v.reason}`).join('; ');
    return { ok: false, code: 'CEG_INVALID_EVENT', reason: `invalid CloudEvent: ${list}`, retriable: false };
  }
  return { ok: true, event };
}

function failed(err: unknown): Decoded {
  const code = err instanceof GatewayError ? err.code : 'CEG_DECODE_FAILED';
  // Any registry failure is the gateway's, never the record's: unreachable (retriable) or refusing
  // it (401/403, a 404 that is not the registry's own, an unexpected answer: not retriable for the
  // registry client, a configuration problem). Either way the record is not poison: it waits for
  // the registry, as for an outage, rather than being dead-lettered (or skipped) for it.
  const retriable = err instanceof GatewayError && (err.retriable || err.code === 'CEG_REGISTRY_UNAVAILABLE');
  return { ok: false, code, reason: describeDecodeError(err), retriable };
}

/** One line naming the attribute or data field at fault when the error says which. */
function describeDecodeError(err: unknown): string {
  if (!(err instanceof GatewayError)) return errorMessage(err);
  const d = err.details;
  const violations = Array.isArray(d.violations) ? (d.violations as readonly { field?: string; attribute?: string; reason?: string }[]) : [];
  if (violations.length === 0) return err.message;
  const list = violations.slice(0, 10).map((v) => `${v.field ?? v.attribute ?? 'data'}: ${v.reason ?? 'invalid'}`).join('; ');
  // Codec messages often name the violations already: say them once.
  return err.message.includes(violations[0]?.reason ?? '\u0000') ? err.message : `${err.message} (${list})`;
}

/**
 * Why a decoded event without data is poison here, or undefined when it is not: a tombstone means
 * something on a compacted topic only; elsewhere it is an event whose data is missing, which
 * ingress and the publisher refuse and a handler cannot read (`data` absent). Shared by the
 * subscriber and pull, so both dead-letter the same records with the same reason.
 */
export function missingDataProblem(codec: EventCodec, event: Envelope): string | undefined {
  if (event.data !== undefined) return undefined;
  const type = event.attributes.type;
  if (codec.catalog.byEventId(type)?.topic.cleanupPolicy.includes('compact') === true) return undefined;
  return `poison: event without data on a topic that is not compacted (${type}): its data is required`;
}
