/**
 * Looking a kind up by how users name it. Everywhere a kind is named (a request's `type`, a
 * subscription's `kinds`, a partners file's permissions, `publish(kind, …)`), either its `eventId`
 * (the CloudEvents `type`, DESIGN "The envelope") or its business name is accepted; the eventId wins
 * when a string is both.
 */
import type { Catalog, EventKind } from './types.js';

type Lookup = Pick<Catalog, 'byEventId' | 'byName'>;

/** The kind `ref` names (an eventId or a business name); undefined when the catalog has neither. */
export function kindOf(catalog: Lookup, ref: string): EventKind | undefined {
  return catalog.byEventId(ref) ?? catalog.byName(ref);
}

/** The business name of the kind `ref` names, or `ref` itself when the catalog does not know it. */
export function kindNameOf(catalog: Lookup, ref: string): string {
  return kindOf(catalog, ref)?.name ?? ref;
}

/** The topics of the kinds `refs` name, each once, in the order first named; unknown refs are left out. */
export function topicsOfKinds(catalog: Lookup, refs: readonly string[]): string[] {
  const topics = new Set<string>();
  for (const ref of refs) {
    const kind = kindOf(catalog, ref);
    if (kind !== undefined) topics.add(kind.topic.name);
  }
  return [...topics];
}
