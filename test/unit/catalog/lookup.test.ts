import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { kindNameOf, kindOf, topicsOfKinds } from '../../../src/catalog/lookup.js';

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
});
