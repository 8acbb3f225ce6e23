/** The answer to an unknown CloudEvents `type`: the eventId for a business name, else the known kinds and /catalog. */
import { describe, expect, it } from 'vitest';
import { loadCatalog, parseCatalog, unknownTypeReason } from '../../../src/catalog/index.js';

describe('unknownTypeReason', () => {
  const catalog = loadCatalog();

  it('a business name gets its eventId and why type is the eventId', () => {
    const kind = catalog.byName('StrategySignal')!;
    expect(unknownTypeReason(catalog, 'StrategySignal')).toBe(
      `unknown event type "StrategySignal": that is the business name of a kind; type takes its eventId ${kind.eventId} (a stable id survives renames; names are labels, sent as eventname)`,
    );
  });

  it('anything else gets the kinds of the catalog as name = eventId and the /catalog link', () => {
    const reason = unknownTypeReason(catalog, 'com.example.unknown');
    expect(reason.startsWith('unknown event type "com.example.unknown": not an eventId of the catalog; known kinds: PriceLoadingCompleted = 78b8fd47-3ff3-4881-9419-7bfe84ce89cb, ')).toBe(true);
    expect(reason.endsWith(' (GET /catalog lists them)')).toBe(true);
    for (const k of catalog.kinds) expect(reason).toContain(`${k.name} = ${k.eventId}`);
  });

  it('lists at most ten kinds and cuts a long type', () => {
    const kinds = Array.from({ length: 12 }, (_, i) => ({
      eventId: `00000000-0000-4000-8000-0000000000${String(i).padStart(2, '0')}`,
      name: `Kind${i}`,
      description: 'k',
      topic: `t.k${i}`,
      schema: 's.avsc',
      key: ['a'],
      publish: true,
      owner: 'o',
    }));
    const big = parseCatalog(JSON.stringify({ version: 1, kinds }), () => JSON.stringify({ type: 'record', name: 'S', fields: [{ name: 'a', type: 'string' }] }), '/fixture');
    const reason = unknownTypeReason(big, 'x'.repeat(500));
    expect(reason).toContain(`"${'x'.repeat(100)}"`);
    expect(reason).toContain('Kind9 = ');
    expect(reason).not.toContain('Kind10 = ');
    expect(reason).toContain(', and 2 more (GET /catalog lists them)');
  });
});

describe('unknownTypeReason and internal kinds', () => {
  const kinds = [
    { eventId: '00000000-0000-4000-8000-000000000001', name: 'Public', description: 'k', topic: 't.p', schema: 's.avsc', key: ['a'], publish: true, owner: 'o' },
    { eventId: '00000000-0000-4000-8000-000000000002', name: 'Hidden', description: 'k', topic: 't.h', schema: 's.avsc', key: ['a'], publish: true, owner: 'o', internal: true },
  ];
  const catalog = parseCatalog(JSON.stringify({ version: 1, kinds }), () => JSON.stringify({ type: 'record', name: 'S', fields: [{ name: 'a', type: 'string' }] }), '/fixture');

  it('the business name of an internal kind is answered as any unknown text, and the list leaves internal kinds out', () => {
    const reason = unknownTypeReason(catalog, 'Hidden');
    expect(reason).toBe(unknownTypeReason(catalog, 'Nothing').replace('"Nothing"', '"Hidden"'));
    expect(reason).not.toContain('00000000-0000-4000-8000-000000000002');
    expect(reason).toContain('known kinds: Public = 00000000-0000-4000-8000-000000000001 (GET /catalog lists them)');
  });
});
