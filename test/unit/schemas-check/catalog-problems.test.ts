/**
 * Problems of catalog.yaml itself (break report finding 2): `schemas check` reports them as
 * problems of the file `catalog.yaml`, at their path in it, together with the invalid schema
 * files, and exits 1 (invalid input, docs/schema-evolution.md "Exit codes"); only a missing
 * catalog.yaml (a wrong --catalog) stays a usage error, exit 2.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { createMemoryRegistry } from '../../../src/registry/index.js';
import { caught } from '../../helpers/errors.js';
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

  /** Two kinds whose schema files are what `make` puts at t/one.avsc and t/two.avsc. */
  function linkedCatalog(make: (one: string, two: string) => void): string {
    const dir = mkdtempSync(join(tmpdir(), 'schemas-catalog-links-'));
    temps.push(dir);
    writeFileSync(join(dir, 'catalog.yaml'), ['version: 1', 'kinds:', ...kindYaml(ID, 'One', 't/one.avsc'), ...kindYaml('22222222-2222-4222-8222-222222222222', 'Two', 't/two.avsc'), ''].join('\n'));
    mkdirSync(join(dir, 't'));
    make(join(dir, 't/one.avsc'), join(dir, 't/two.avsc'));
    return dir;
  }

  it('a schema file that is a link loop or a link to nothing is named with its problem, not "not found"', () => {
    const dir = linkedCatalog((one, two) => {
      symlinkSync('one.avsc', one);
      symlinkSync('/nonexistent/two.avsc', two);
    });
    const err = caught(() => loadCatalog(dir));
    expect(err.code).toBe('CEG_CATALOG_INVALID');
    expect(err.retriable).toBe(false);
    expect(err.details['problems']).toEqual([
      { path: 'kinds[0].schema', problem: 'schema file "t/one.avsc": cannot be read: ELOOP' },
      { path: 'kinds[1].schema', problem: 'schema file "t/two.avsc": a symbolic link to nothing' },
    ]);
    expect(loadCatalogForCheck(dir).invalidFiles?.flatMap((f) => f.problems.map((p) => `${f.schemaFile} ${p.path}: ${p.message}`))).toEqual([
      'catalog.yaml kinds[0].schema: schema file "t/one.avsc": cannot be read: ELOOP',
      'catalog.yaml kinds[1].schema: schema file "t/two.avsc": a symbolic link to nothing',
    ]);
  });

  it('the CLI: a schema file or catalog.yaml that is a FIFO is reported naming it (it hung, waiting for a writer)', async () => {
    const dir = linkedCatalog((one, two) => {
      writeFileSync(one, record('One'));
      execFileSync('mkfifo', [two]);
    });
    const check = await schemasCli(dir, ['check', '--git', '--catalog', dir]);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('kinds[1].schema: schema file "t/two.avsc": not a regular file (a FIFO, socket or device)');
    const register = await schemasCli(dir, ['register', '--catalog', dir, '--registry', 'http://127.0.0.1:9']);
    expect(register.stdout + register.stderr).toContain('t/two.avsc');
    expect(register.code).not.toBeNull(); // ended on its own (null: killed at the helper's bound)

    const fifoCatalog = mkdtempSync(join(tmpdir(), 'schemas-catalog-fifo-'));
    temps.push(fifoCatalog);
    execFileSync('mkfifo', [join(fifoCatalog, 'catalog.yaml')]);
    const own = await schemasCli(fifoCatalog, ['check', '--git', '--catalog', fifoCatalog]);
    expect(own.code).toBe(1);
    expect(own.stdout).toContain('not a regular file (a FIFO, socket or device)');
  });
});
