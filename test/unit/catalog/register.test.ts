import { describe, expect, it } from 'vitest';
import { loadCatalog, parseCatalog, registerCatalog } from '../../../src/catalog/index.js';
import { createMemoryRegistry } from '../../../src/registry/index.js';

describe('registerCatalog', () => {
  it('registers every kind under its subject and returns eventId → schema; a rerun is idempotent', async () => {
    const catalog = loadCatalog();
    const registry = createMemoryRegistry();
    const first = await registerCatalog(registry, catalog);
    expect(first.size).toBe(6);
    for (const kind of catalog.kinds) {
      const r = first.get(kind.eventId);
      expect(r?.subject).toBe(kind.subject);
      expect(r?.version).toBe(1);
      expect(r?.schema).toBe(kind.schema);
      expect(await registry.schemaById(r!.id)).toBe(kind.schema);
    }
    expect(new Set([...first.values()].map((r) => r.id)).size).toBe(6);
    const again = await registerCatalog(registry, catalog);
    expect([...again.values()].map((r) => [r.id, r.version])).toEqual([...first.values()].map((r) => [r.id, r.version]));
  });

  it('sets the compatibility level first, so a breaking change is refused', async () => {
    const schema = (fields: object[]) => JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'instrument', type: 'string' }, ...fields] });
    const yaml = JSON.stringify({
      version: 1,
      kinds: [{ eventId: '78b8fd47-3ff3-4881-9419-7bfe84ce89cb', name: 'R', description: 'r', topic: 't.r', schema: 'r.avsc', key: ['instrument'], publish: true, owner: 'o', compatibility: 'FORWARD' }],
    });
    const registry = createMemoryRegistry({ defaultCompatibility: 'NONE' });
    await registerCatalog(registry, parseCatalog(yaml, () => schema([{ name: 'a', type: 'int' }]), '/x'));
    // Removing a field without default breaks FORWARD (old readers need it).
    await expect(registerCatalog(registry, parseCatalog(yaml, () => schema([]), '/x'))).rejects.toMatchObject({ code: 'CEG_SCHEMA_INCOMPATIBLE' });
    // Adding an optional field is fine.
    const ok = await registerCatalog(registry, parseCatalog(yaml, () => schema([{ name: 'a', type: 'int' }, { name: 'b', type: ['null', 'int'], default: null }]), '/x'));
    expect(ok.get('78b8fd47-3ff3-4881-9419-7bfe84ce89cb')?.version).toBe(2);
  });
});
