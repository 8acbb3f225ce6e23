/**
 * Problems of catalog.yaml itself (break report finding 2): `schemas check` reports them as
 * problems of the file `catalog.yaml`, at their path in it, together with the invalid schema
 * files, and exits 1 (invalid input, docs/schema-evolution.md "Exit codes"); only a missing
 * catalog.yaml (a wrong --catalog) stays a usage error, exit 2.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createMemoryRegistry } from '../../../src/registry/index.js';
import { loadCatalogForCheck, loadCatalogForRegister, registerSchemas } from '../../../src/schemas-check/index.js';
import { schemasCli } from '../../helpers/schemas-cli.js';

vi.setConfig({ testTimeout: 60_000 });
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

const ID = '11111111-1111-4111-8111-111111111111';
function kindYaml(eventId: string, name: string, schema: string): string[] {
  return [`  - eventId: ${eventId}`, `    name: ${name}`, '    description: test kind', `    topic: reg.${name.toLowerCase()}`, `    schema: ${schema}`, '    key: [k]', '    publish: true', '    owner: test'];
}
const record = (name: string, fields: object[] = []): string => JSON.stringify({ type: 'record', name, namespace: 'reg', fields: [{ name: 'k', type: 'string' }, ...fields] });

/** Two kinds with one eventId; the second's schema has a union default that does not match the first branch. */
function duplicateIdCatalog(): string {
  const dir = mkdtempSync(join(tmpdir(), 'schemas-catalog-problems-'));
  temps.push(dir);
  writeFileSync(join(dir, 'catalog.yaml'), ['version: 1', 'kinds:', ...kindYaml(ID, 'One', 't/one.avsc'), ...kindYaml(ID, 'Two', 't/two.avsc'), ''].join('\n'));
  mkdirSync(join(dir, 't'));
  writeFileSync(join(dir, 't/one.avsc'), record('One'));
  writeFileSync(join(dir, 't/two.avsc'), record('Two', [{ name: 'a', type: ['string', 'null'], default: null }]));
  return dir;
}

describe('catalog.yaml problems in schemas check and register', () => {
  it('are returned as the invalid file catalog.yaml, at their path, before the schema files', () => {
    const loaded = loadCatalogForCheck(duplicateIdCatalog());
    expect(loaded.catalog).toBeUndefined();
    expect(loaded.invalidFiles?.map((f) => [f.schemaFile, f.problems.map((p) => p.path)])).toEqual([
      ['catalog.yaml', ['kinds[1].eventId']],
      ['t/two.avsc', ['/fields/a']],
    ]);
    expect(loaded.invalidFiles?.[0]?.problems[0]?.message).toBe('duplicate eventId, also kinds[0]');
  });

  it('register: nothing registered, catalog.yaml listed as an invalid file', async () => {
    const loaded = loadCatalogForRegister(duplicateIdCatalog());
    const registry = createMemoryRegistry();
    const report = await registerSchemas(loaded.catalog, registry, 'test registry', loaded.invalidFiles);
    expect(report.ok).toBe(false);
    expect(report.invalidFiles.map((f) => f.schemaFile)).toEqual(['catalog.yaml', 't/two.avsc']);
    expect(await registry.versions('reg.one-value')).toEqual([]);
  });

  it('a missing catalog.yaml still throws (a usage error)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'schemas-catalog-missing-'));
    temps.push(dir);
    expect(() => loadCatalogForCheck(dir)).toThrow(/no catalog\.yaml/);
  });

  it('the CLI: exit 1, both files reported on stdout; a directory without catalog.yaml: exit 2', async () => {
    const dir = duplicateIdCatalog();
    const r = await schemasCli(dir, ['check', '--git', '--catalog', dir]);
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n')).toEqual(
      expect.arrayContaining([
        'INVALID       catalog.yaml: the catalog cannot load it',
        '    kinds[1].eventId: duplicate eventId, also kinds[0]',
        'INVALID       t/two.avsc: the catalog cannot load it',
        'FAILED: 0 compatible, 0 new, 0 incompatible, 2 invalid',
      ]),
    );
    const json = await schemasCli(dir, ['check', '--git', '--catalog', dir, '--json']);
    expect(json.code).toBe(1);
    expect((JSON.parse(json.stdout) as { invalidFiles: { schemaFile: string }[] }).invalidFiles.map((f) => f.schemaFile)).toEqual(['catalog.yaml', 't/two.avsc']);
    const empty = mkdtempSync(join(tmpdir(), 'schemas-catalog-missing-'));
    temps.push(empty);
    expect((await schemasCli(empty, ['check', '--git', '--catalog', empty])).code).toBe(2);
  });
});
