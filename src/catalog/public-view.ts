/**
 * The catalog as partners may see it: without the kinds marked `internal` (issue 11: "never
 * offered to partners without an explicit permission"). The public documents (`/catalog`,
 * AsyncAPI, JSON Schemas) are built from this view; topics only internal kinds use are left out too.
 */
import type { Catalog } from './types.js';

/** The same catalog when no kind is internal, else a frozen view without the internal kinds. */
export function publicCatalog(catalog: Catalog): Catalog {
  if (!catalog.kinds.some((k) => k.internal)) return catalog;
  const kinds = Object.freeze(catalog.kinds.filter((k) => !k.internal));
  const used = new Set(kinds.map((k) => k.topic.name));
  const topics = Object.freeze(catalog.topics.filter((t) => used.has(t.name)));
  return Object.freeze({
    dir: catalog.dir,
    kinds,
    topics,
    byEventId: (eventId: string) => {
      const k = catalog.byEventId(eventId);
      return k?.internal === true ? undefined : k;
    },
    byName: (name: string) => {
      const k = catalog.byName(name);
      return k?.internal === true ? undefined : k;
    },
  });
}
