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
import { attributeEntries, checkAttributeLimits, limitBreachError } from '../envelope/index.js';
import { utf8Length } from '../core/utf8.js';
import { partitionKey } from '../catalog/index.js';
import { checkPublishOptions } from './publisher/attributes.js';
import type { PublishOptions } from './publisher/index.js';
import { kindOf } from '../catalog/lookup.js';

/**
 * The kind named by eventId or business name, after checking `data` against its Avro schema from
 * the catalog (types are parsed once per schema text) and its size bound. Without a registry no
 * record is built, so the bound is applied to the Avro data alone; a publisher also counts the
 * attributes (what this refuses, a publisher refuses too).
 * Errors (retriable: false): CEG_UNKNOWN_TYPE (details.attribute = 'type') for a kind the catalog
 *   does not have; CEG_INVALID_ATTRIBUTE naming `subject`, `correlationid` or `time` of `opts`;
 *   CEG_INVALID_DATA (details name every field; an empty partition-key field too) as
 *   Publisher.publish throws it;
 *   CEG_ATTRIBUTES_TOO_LARGE (`details.limit`) when the caller's attributes alone break the
 *   envelope limits; CEG_PAYLOAD_TOO_LARGE (`details.field` `/data` or `attributes`, the larger
 *   part; `max`, `actual`, `dataBytes`, `attributeBytes`) over the kind's `maxDataBytes` (bus spec M6).
 */
export function checkPublishable(catalog: Catalog, kind: string, data: JsonValue, opts: PublishOptions = {}): EventKind {
  const found = kindOf(catalog, kind);
  if (found === undefined) {
    throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${kind}"`, { retriable: false, details: { attribute: 'type' } });
  }
  // In the publisher's order (prepareEvent): the caller's attributes, the data, its partition key.
  checkPublishOptions(opts);
  const bytes = encodeAvro(avroType(found.schema), data).length;
  const key = partitionKey(found, data);
  // The attributes the caller chose count as a publisher counts them (name + value, UTF-8); the
  // ones a publisher adds need the registry (dataschema, schemaversion), so they are left out.
  const given: Record<string, string> = {
    ...(opts.subject === undefined ? {} : { subject: opts.subject }),
    ...(opts.correlationid === undefined ? {} : { correlationid: opts.correlationid }),
    ...(key === undefined ? {} : { partitionkey: key }),
  };
  const breach = checkAttributeLimits(given);
  if (breach !== undefined) throw limitBreachError(breach, { field: 'attributes' });
  let attributeBytes = 0;
  for (const [name, value] of attributeEntries(given)) attributeBytes += utf8Length(name) + utf8Length(value);
  const eventBytes = bytes + attributeBytes;
  if (eventBytes > found.maxDataBytes) {
    throw new GatewayError('CEG_PAYLOAD_TOO_LARGE', `the event is larger than the ${found.eventClass} bound of ${found.name}: ${bytes} bytes of data (Avro) + ${attributeBytes} bytes of attributes given = ${eventBytes} > ${found.maxDataBytes} bytes`, {
      retriable: false,
      details: { field: bytes >= attributeBytes ? '/data' : 'attributes', limit: 'maxDataBytes', max: found.maxDataBytes, actual: eventBytes, dataBytes: bytes, attributeBytes },
    });
  }
  return found;
}
