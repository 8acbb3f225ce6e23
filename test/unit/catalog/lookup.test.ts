import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { kindNameOf, kindOf, kindsOnce, repeatedKind, repeatedKindReason, repeatedKinds, topicsOfKinds } from '../../../src/catalog/lookup.js';
import { repeatedKindError } from '../../../src/bus/subscriber/options.js';

const catalog = loadCatalog();
const [first, second] = catalog.kinds;

describe('catalog lookup by eventId or business name', () => {
  it('finds a kind by either name, and nothing for an unknown one', () => {
    expect(first).toBeDefined();
    expect(kindOf(catalog, first!.eventId)).toBe(first);
    expect(kindOf(catalog, first!.name)).toBe(first);
    expect(kindOf(catalog, 'NoSuchKind')).toBeUndefined();
    expect(kindNameOf(catalog, first!.eventId)).toBe(first!.name);
    expect(kindNameOf(catalog, 'NoSuchKind')).toBe('NoSuchKind');
  });

  it('lists each topic once, in the order first named, leaving unknown kinds out', () => {
    expect(second).toBeDefined();
    const refs = [second!.name, 'NoSuchKind', first!.eventId, second!.eventId, first!.name];
    const expected = [...new Set([second!.topic.name, first!.topic.name])];
    expect(topicsOfKinds(catalog, refs)).toEqual(expected);
    expect(topicsOfKinds(catalog, [])).toEqual([]);
  });

  it('finds every repeated kind (the same text, or a name and its eventId) with its first index, passing over unknown and non-text entries; one rule and one wording for the library, the CLI and the subscriptions API', () => {
    const refs: unknown[] = [first!.name, 'NoSuchKind', second!.name, first!.eventId, 7, 'NoSuchKind', second!.name, undefined, first!.name];
    const repeats = repeatedKinds(catalog, refs);
    expect(repeats.map((r) => [r.index, r.first, r.kind.name])).toEqual([[3, 0, first!.name], [6, 2, second!.name], [8, 0, first!.name]]);
    expect(repeatedKind(catalog, [first!.name, second!.name, first!.eventId])).toMatchObject({ index: 2, first: 0, kind: first });
    expect(repeatedKind(catalog, [first!.name, second!.name])).toBeUndefined();
    expect(repeatedKindReason(refs, repeats[0]!)).toBe(`${JSON.stringify(first!.eventId)} is kinds[0] again (${first!.name}, eventId ${first!.eventId}): list each kind once`);
    // The library's CEG_INVALID_OPTIONS says the same after the field (docs/subscriptions.md: the API's problem reason).
    const kinds = [first!.name, second!.name, first!.eventId];
    expect(repeatedKindError(catalog, kinds)?.message).toBe(`kinds[2]: ${repeatedKindReason(kinds, repeatedKind(catalog, kinds)!)}`);
    expect(kindsOnce(catalog, [first!.name, second!.name, first!.eventId, second!.name, 'NoSuchKind'])).toEqual([first!.name, second!.name, 'NoSuchKind']);
  });
});
