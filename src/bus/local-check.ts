/**
 * What a bus that does not publish (role `none` or `subscriber`) checks before handing an event to
 * in-process handlers: the same refusals a publisher makes, without a broker or a registry, so a
 * test or a process run with the bus disabled sees bad data exactly where a publishing process
 * would (bus spec T1: a disabled bus never throws for a valid call; X1: data follows the model).
 */
import { GatewayError } from '../core/errors.js';
import type { Catalog, EventKind } from '../catalog/index.js';
import { avroType, encodeAvro } from '../codec/data/index.js';
import type { JsonValue } from '../envelope/types.js';

/**
 * The kind named by eventId or business name, after checking `data` against its Avro schema from
 * the catalog (types are parsed once per schema text) and its size bound. Without a registry no
 * record is built, so the bound is applied to the Avro data alone; a publisher also counts the
 * attributes (what this refuses, a publisher refuses too).
 * Errors (retriable: false): CEG_UNKNOWN_TYPE (details.attribute = 'type') for a kind the catalog
 *   does not have; CEG_INVALID_DATA (details name every field) as Publisher.publish throws it;
 *   CEG_PAYLOAD_TOO_LARGE when the Avro data alone is over the kind's `maxDataBytes` (bus spec M6).
 */
export function checkPublishable(catalog: Catalog, kind: string, data: JsonValue): EventKind {
  const found = catalog.byEventId(kind) ?? catalog.byName(kind);
  if (found === undefined) {
    throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${kind}"`, { retriable: false, details: { attribute: 'type' } });
  }
  const bytes = encodeAvro(avroType(found.schema), data).length;
  if (bytes > found.maxDataBytes) {
    throw new GatewayError('CEG_PAYLOAD_TOO_LARGE', `data is larger than the ${found.eventClass} bound of ${found.name}: ${bytes} > ${found.maxDataBytes} bytes (Avro)`, {
      retriable: false,
      details: { field: '/data', bytes, maxDataBytes: found.maxDataBytes },
    });
  }
  return found;
}
