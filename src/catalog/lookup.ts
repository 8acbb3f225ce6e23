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

/** An entry of a list of kinds that names a kind an earlier entry named: its index, the earlier entry's index and the kind. */
export interface RepeatedKind {
  readonly index: number;
  readonly first: number;
  readonly kind: EventKind;
}

/**
 * Every entry of `refs` that names a kind an earlier entry named already — the same text, or a
 * business name and its eventId — in the order of `refs`, each with the index of the entry that
 * named the kind first; empty when each kind is named once. Entries that are not strings or that
 * the catalog does not know are passed over (they are refused as such elsewhere; a caller passes
 * `undefined` for an entry it refused already). Pure. The one rule for a kind listed twice, so that
 * it is refused alike over HTTP (`POST`/`PATCH /subscriptions`: every repeat a problem), in the
 * library (`subscribe()`) and on the command line (`ce-gateway tail`, `subscribe --kind`), and
 * warned on by `connectors check`: a repeat is most often a slip for another kind.
 */
export function repeatedKinds(catalog: Lookup, refs: readonly unknown[]): RepeatedKind[] {
  const firstAt = new Map<string, number>();
  const repeats: RepeatedKind[] = [];
  for (const [index, ref] of refs.entries()) {
    const kind = typeof ref === 'string' ? kindOf(catalog, ref) : undefined;
    if (kind === undefined) continue;
    const first = firstAt.get(kind.eventId);
    if (first === undefined) firstAt.set(kind.eventId, index);
    else repeats.push({ index, first, kind });
  }
  return repeats;
}

/** The first of {@link repeatedKinds}; undefined when each kind is named once. Pure. */
export function repeatedKind(catalog: Lookup, refs: readonly string[]): RepeatedKind | undefined {
  return repeatedKinds(catalog, refs)[0];
}

/**
 * Why repeat `r` of `refs` (a subscription's `kinds`) is refused, as the subscriptions API's
 * problem `reason` for field `kinds[<r.index>]` and the library's CEG_INVALID_OPTIONS message
 * (after `kinds[<r.index>]: `): `"<entry, at most 100 characters>" is kinds[<first>] again
 * (<name>, eventId <eventId>): list each kind once` (docs/subscriptions.md). Pure.
 */
export function repeatedKindReason(refs: readonly unknown[], r: RepeatedKind): string {
  return `${JSON.stringify(String(refs[r.index]).slice(0, 100))} is kinds[${r.first}] again (${r.kind.name}, eventId ${r.kind.eventId}): list each kind once`;
}

/**
 * `refs` with every entry {@link repeatedKinds} finds dropped (each kind kept where first named);
 * the same list when each kind is named once. Pure. For lists a repeat must not stop (connector
 * files that started a gateway before the rule): the kinds subscribed to are the same.
 */
export function kindsOnce(catalog: Lookup, refs: readonly string[]): readonly string[] {
  const repeats = new Set(repeatedKinds(catalog, refs).map((r) => r.index));
  return repeats.size === 0 ? refs : refs.filter((_, i) => !repeats.has(i));
}
