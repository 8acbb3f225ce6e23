/**
 * Registry history when a kind's subject changed (shared topics use `<topic>-<record full name>`,
 * a kind alone on its topic `<topic>-value`): the check compares with the earlier subject's
 * versions instead of passing the kind as new, and fails when the earlier subject is ambiguous.
 * In-memory registry; the subject listing is a stub.
 */
import { describe, expect, it } from 'vitest';
import { parseCatalog } from '../../../src/catalog/index.js';
import { createMemoryRegistry } from '../../../src/registry/index.js';
import { checkCatalog, createRegistryHistory, formatCheckReport, registerSchemas } from '../../../src/schemas-check/index.js';

const record = (name: string, namespace: string, fields: object[] = []): string => JSON.stringify({ type: 'record', name, namespace, fields: [{ name: 'k', type: 'string' }, ...fields] });
const AMOUNT = { name: 'amount', type: 'long' };

function catalog(kinds: { name: string; topic: string; schema: string; compatibility?: string }[]) {
  const files = new Map(kinds.map((k) => [`${k.name}.avsc`, k.schema]));
  const yaml = [
    'version: 1',
    'kinds:',
    ...kinds.flatMap((k, i) => [
      `  - eventId: 0f8e3c1a-4d2b-4c6e-9a7f-1b2c3d4e5f6${i}`, `    name: ${k.name}`, '    description: kind', `    topic: ${k.topic}`, `    schema: ${k.name}.avsc`, '    key: [k]', '    publish: true', '    owner: test',
      ...(k.compatibility === undefined ? [] : [`    compatibility: ${k.compatibility}`]),
    ]),
  ].join('\n');
  return parseCatalog(yaml, (p) => files.get(p), '/virtual');
}

describe('registry history across a subject change', () => {
  it('a second kind added to a topic: the first kind moves from <topic>-value to <topic>-<record>, and is checked against <topic>-value', async () => {
    const registry = createMemoryRegistry();
    await registry.register('t.shared-value', record('Alpha', 'ns', [AMOUNT]));
    const cat = catalog([
      { name: 'Alpha', topic: 't.shared', schema: record('Alpha', 'ns') },
      { name: 'Beta', topic: 't.shared', schema: record('Beta', 'ns') },
    ]);
    expect(cat.kinds.map((k) => k.subject)).toEqual(['t.shared-ns.Alpha', 't.shared-ns.Beta']);
    const report = await checkCatalog(cat, createRegistryHistory(registry, 'test registry'));
    expect(report.kinds.map((k) => [k.name, k.status])).toEqual([
      ['Alpha', 'incompatible'],
      ['Beta', 'new'],
    ]);
    const text = formatCheckReport(report);
    expect(text).toContain('[FORWARD vs t.shared-value version 1] /fields/amount: field "amount" removed');
    expect(text).toContain('note: subject t.shared-ns.Alpha has no versions yet; compared with the versions of subject t.shared-value');

    const reg = await registerSchemas(cat, registry, 'test registry');
    expect(reg.kinds.map((k) => [k.name, k.status])).toEqual([
      ['Alpha', 'incompatible'],
      ['Beta', 'registered'],
    ]);
    expect(await registry.versions('t.shared-ns.Alpha')).toEqual([]);
  });

  it('a compatible change after the move registers as a new version of the new subject', async () => {
    const registry = createMemoryRegistry();
    await registry.register('t.two-value', record('Alpha', 'ns', [AMOUNT]));
    const cat = catalog([
      { name: 'Alpha', topic: 't.two', schema: record('Alpha', 'ns', [AMOUNT]) },
      { name: 'Beta', topic: 't.two', schema: record('Beta', 'ns') },
    ]);
    const reg = await registerSchemas(cat, registry, 'test registry');
    expect(reg.kinds[0]).toMatchObject({ name: 'Alpha', subject: 't.two-ns.Alpha', status: 'registered', version: 1 });
  });

  it('once registered under its new subject, a moved kind keeps the earlier subject\'s versions in its history (a transitive level still compares with them)', async () => {
    const registry = createMemoryRegistry();
    const V1 = record('Alpha', 'ns', [{ name: 'amount', type: 'long', default: 0 }]);
    await registry.register('t.kept-value', V1);
    const moved = (schema: string) => catalog([
      { name: 'Alpha', topic: 't.kept', schema, compatibility: 'FULL_TRANSITIVE' },
      { name: 'Beta', topic: 't.kept', schema: record('Beta', 'ns') },
    ]);
    // v2 drops `amount` (it had a default: FULL compatible with v1) and is registered under the new subject.
    const V2 = record('Alpha', 'ns');
    const reg = await registerSchemas(moved(V2), registry, 'test registry');
    expect(reg.kinds[0]).toMatchObject({ subject: 't.kept-ns.Alpha', status: 'registered', version: 1 });
    // v3 adds `amount` back as a string without a default: compatible with v2 alone, not with v1.
    const V3 = record('Alpha', 'ns', [{ name: 'amount', type: ['null', 'string'], default: null }]);
    const report = await checkCatalog(moved(V3), createRegistryHistory(registry, 'test registry', { catalog: moved(V3) }));
    expect(report.kinds[0]).toMatchObject({ name: 'Alpha', status: 'incompatible' });
    expect(report.kinds[0]!.compared.map((c) => c.label)).toEqual(['t.kept-value version 1', 'version 1']);
    expect(formatCheckReport(report)).toContain('the history of subject t.kept-ns.Alpha includes the versions of subject t.kept-value');
  });

  it('a namespace changed on a shared topic: found through the subject listing; two candidates → an error, not "new"', async () => {
    const registry = createMemoryRegistry();
    await registry.register('t.ns-old.Alpha', record('Alpha', 'old', [AMOUNT]));
    await registry.register('t.ns-old.Beta', record('Beta', 'old'));
    const cat = catalog([
      { name: 'Alpha', topic: 't.ns', schema: record('Alpha', 'new') },
      { name: 'Beta', topic: 't.ns', schema: record('Beta', 'old') },
    ]);
    const subjects = () => Promise.resolve(['t.ns-old.Alpha', 't.ns-old.Beta', 't.nsx-other.Alpha']);
    const report = await checkCatalog(cat, createRegistryHistory(registry, 'test registry', { subjects }));
    expect(report.kinds[0]).toMatchObject({ status: 'incompatible', compared: [{ label: 't.ns-old.Alpha version 1' }] });
    expect(report.kinds[1]).toMatchObject({ status: 'compatible' });

    await registry.register('t.ns-other.Alpha', record('Alpha', 'other'));
    const both = () => Promise.resolve(['t.ns-old.Alpha', 't.ns-other.Alpha', 't.ns-old.Beta']);
    await expect(checkCatalog(cat, createRegistryHistory(registry, 'test registry', { subjects: both }))).rejects.toMatchObject({
      code: 'CEG_INVALID_OPTIONS',
      message: expect.stringContaining('could be under any of the subjects t.ns-old.Alpha, t.ns-other.Alpha'),
    });
  });
});
