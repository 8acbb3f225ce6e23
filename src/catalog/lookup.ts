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

/**
 * The first entry of `refs` that names a kind an earlier entry named already — the same text, or a
 * business name and its eventId: its index, the earlier entry's index and the kind; undefined when
 * each kind is named once. Entries the catalog does not know are passed over (they are refused as
 * unknown elsewhere). Pure. Used where a list of kinds is given (`ce-gateway tail`, `subscribe
 * --kind`, the library's `subscribe()`, `connectors check`; the subscription API checks every
 * entry itself), so that a kind listed twice is refused alike in the library, on the command line
 * and over HTTP.
 */
export function repeatedKind(catalog: Lookup, refs: readonly string[]): { readonly index: number; readonly first: number; readonly kind: EventKind } | undefined {
  const firstAt = new Map<string, number>();
  for (const [index, ref] of refs.entries()) {
    const kind = kindOf(catalog, ref);
    if (kind === undefined) continue;
    const first = firstAt.get(kind.eventId);
    if (first !== undefined) return { index, first, kind };
    firstAt.set(kind.eventId, index);
  }
  return undefined;
}

/**
 * `refs` with every entry {@link repeatedKind} finds dropped (each kind kept where first named);
 * the same list when each kind is named once. Pure. For lists a repeat must not stop (connector
 * files that started a gateway before the rule): the kinds subscribed to are the same.
 */
export function kindsOnce(catalog: Lookup, refs: readonly string[]): readonly string[] {
  let list = refs;
  for (let r = repeatedKind(catalog, list); r !== undefined; r = repeatedKind(catalog, list)) {
    const at = r.index;
    list = list.filter((_, i) => i !== at);
  }
  return list;
}
