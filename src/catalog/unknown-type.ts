/**
 * What to tell a sender whose CloudEvents `type` is not an eventId of the catalog. `type` carries
 * the kind's eventId, not its business name: the eventId is stable forever, while a name is a
 * label that may be corrected or renamed (bus spec M3: the wire discriminator; DESIGN "The
 * envelope": `eventname` is never used for routing). A business name sent as `type` is the usual
 * slip — Knative, Confluent and Dapr users expect names there — so the answer gives its eventId.
 * Internal kinds (catalog `internal: true`) are never named, neither by their business name nor in
 * the list: to a partner they are as unknown as a type the catalog lacks, as `/catalog`, AsyncAPI
 * and the JSON Schemas hide them (issue 11; docs/security.md "Internal kinds"). Over HTTP they are
 * never accepted anyway, so listing them would not help a sender.
 */
import type { Catalog } from './types.js';

/** Kinds listed by name in the answer; beyond this, `GET /catalog` has the rest. */
export const LISTED_KINDS = 10;

/**
 * The reason text for an unknown `type`: the eventId to use when `type` is a business name of the
 * catalog, otherwise the known kinds as `Name = eventId` (at most {@link LISTED_KINDS}) and where
 * the full list is (`GET /catalog`). `type` is quoted cut to 100 characters. Internal kinds are
 * left out: the business name of one gets the same answer as any unknown text.
 */
export function unknownTypeReason(catalog: Pick<Catalog, 'byName' | 'kinds'>, type: string): string {
  const quoted = JSON.stringify(type.slice(0, 100));
  const named = catalog.byName(type);
  if (named !== undefined && !named.internal) {
    return `unknown event type ${quoted}: that is the business name of a kind; type takes its eventId ${named.eventId} (a stable id survives renames; names are labels, sent as eventname)`;
  }
  const kinds = catalog.kinds.filter((k) => !k.internal);
  const listed = kinds.slice(0, LISTED_KINDS).map((k) => `${k.name} = ${k.eventId}`);
  const more = kinds.length > LISTED_KINDS ? `, and ${kinds.length - LISTED_KINDS} more` : '';
  return `unknown event type ${quoted}: not an eventId of the catalog; known kinds: ${listed.join(', ')}${more} (GET /catalog lists them)`;
}
