/**
 * What to tell a sender whose CloudEvents `type` is not an eventId of the catalog. `type` carries
 * the kind's eventId, not its business name: the eventId is stable forever, while a name is a
 * label that may be corrected or renamed (bus spec M3: the wire discriminator; DESIGN "The
 * envelope": `eventname` is never used for routing). A business name sent as `type` is the usual
 * slip — Knative, Confluent and Dapr users expect names there — so the answer gives its eventId.
 */
import type { Catalog } from './types.js';

/** Kinds listed by name in the answer; beyond this, `GET /catalog` has the rest. */
export const LISTED_KINDS = 10;

/**
 * The reason text for an unknown `type`: the eventId to use when `type` is a business name of the
 * catalog, otherwise the known kinds as `Name = eventId` (at most {@link LISTED_KINDS}) and where
 * the full list is (`GET /catalog`). `type` is quoted cut to 100 characters.
 */
export function unknownTypeReason(catalog: Pick<Catalog, 'byName' | 'kinds'>, type: string): string {
  const quoted = JSON.stringify(type.slice(0, 100));
  const named = catalog.byName(type);
  if (named !== undefined) {
    return `unknown event type ${quoted}: that is the business name of a kind; type takes its eventId ${named.eventId} (a stable id survives renames; names are labels, sent as eventname)`;
  }
  const listed = catalog.kinds.slice(0, LISTED_KINDS).map((k) => `${k.name} = ${k.eventId}`);
  const more = catalog.kinds.length > LISTED_KINDS ? `, and ${catalog.kinds.length - LISTED_KINDS} more` : '';
  return `unknown event type ${quoted}: not an eventId of the catalog; known kinds: ${listed.join(', ')}${more} (GET /catalog lists them)`;
}
