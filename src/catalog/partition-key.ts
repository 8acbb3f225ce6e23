/**
 * The partition key of an event: the Kafka record key and the `partitionkey` extension.
 * Spec: DESIGN "The envelope" (`partitionkey` computed from the catalog's key fields, e.g.
 * `EUR-USD_H4`) and "Kafka mapping" (strict charset before key material becomes a header).
 */
import { GatewayError } from '../core/errors.js';
import type { JsonValue } from '../envelope/types.js';
import { MAX_PARTITION_KEY_LENGTH } from '../envelope/attribute-types.js';
import type { EventKind } from './types.js';

const NON_ALNUM = /[^A-Za-z0-9]/g;

/** One key part: every character outside [A-Za-z0-9] becomes `-` (`EUR/USD` → `EUR-USD`). */
export function sanitizeKeyPart(value: string): string {
  return value.replace(NON_ALNUM, '-');
}

function missing(kind: EventKind, field: string, reason: string): GatewayError {
  return new GatewayError('CEG_INVALID_DATA', `partition-key field "${field}" of ${kind.name}: ${reason}`, {
    retriable: false,
    details: { field: `/${field}`, eventId: kind.eventId, violations: [{ field: `/${field}`, reason }] },
  });
}

/**
 * Computes the partition key from `data` (natural JSON of the kind): each key field's value
 * sanitised by {@link sanitizeKeyPart}, joined with `_`. The result matches [A-Za-z0-9._-]+.
 * Example: instrument "EUR/USD", timeframe "H4" → `EUR-USD_H4`.
 * Errors: GatewayError CEG_INVALID_DATA (retriable: false) naming the field (`details.field`, a JSON
 *   pointer) when data is not an object or a key field is absent, not a string, or empty; or when
 *   the key would be longer than {@link MAX_PARTITION_KEY_LENGTH} (249) characters, naming the
 *   field that took it past: every reader refuses such a `partitionkey` (envelope/attribute-types
 *   `PARTITION_KEY_PATTERN`), so the event must not be accepted in the first place.
 */
export function partitionKey(kind: EventKind, data: JsonValue | undefined): string {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw missing(kind, kind.keyFields[0] ?? '', 'data must be a JSON object to compute the partition key');
  }
  const record = data as { readonly [key: string]: JsonValue };
  let key = '';
  for (let i = 0; i < kind.keyFields.length; i++) {
    const field = kind.keyFields[i] as string;
    const value = record[field];
    if (value === undefined || value === null) throw missing(kind, field, 'required for the partition key but absent');
    if (typeof value !== 'string') throw missing(kind, field, 'partition-key field must be a string');
    if (value.length === 0) throw missing(kind, field, 'partition-key field must not be empty');
    key += (i === 0 ? '' : '_') + sanitizeKeyPart(value);
    if (key.length > MAX_PARTITION_KEY_LENGTH) {
      throw missing(kind, field, `the partition key built from ${kind.keyFields.join(', ')} would be longer than ${MAX_PARTITION_KEY_LENGTH} characters (it becomes the Kafka record key and the partitionkey attribute)`);
    }
  }
  return key;
}
