/**
 * `schemas register` with one invalid schema file among valid ones: the others still register
 * (docs/schema-evolution.md "register … does not register one that is invalid or incompatible
 * (the others still are)"), on the in-memory registry.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryRegistry } from '../../../src/registry/index.js';
import { checkCatalog, createRegistryHistory, formatCheckReport, formatRegisterReport, loadCatalogForRegister, registerSchemas } from '../../../src/schemas-check/index.js';
import type { SchemaHistory } from '../../../src/schemas-check/index.js';

const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function kindYaml(eventId: string, name: string, topic: string, schema: string): string[] {
  return [`  - eventId: ${eventId}`, `    name: ${name}`, '    description: test kind', `    topic: ${topic}`, `    schema: ${schema}`, '    key: [k]', '    publish: true', '    owner: test'];
}

function catalogDir(kinds: string[][], files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'schemas-register-'));
  temps.push(dir);
  writeFileSync(join(dir, 'catalog.yaml'), ['version: 1', 'kinds:', ...kinds.flat(), ''].join('\n'));
  mkdirSync(join(dir, 't'));
  for (const [file, json] of Object.entries(files)) writeFileSync(join(dir, file), JSON.stringify(json));
  return dir;
}

const record = (name: string, namespace: string, fields: object[] = []): object => ({ type: 'record', name, namespace, fields: [{ name: 'k', type: 'string' }, ...fields] });
/** A union default must match the FIRST branch: `["string","null"]` with default null is invalid. */
const BAD_FIELD = { name: 'a', type: ['string', 'null'], default: null };

describe('schemas register with an invalid schema file', () => {
  it('registers the valid kinds; the invalid one is reported invalid, naming the file and field', async () => {
    const dir = catalogDir(
      [kindYaml('11111111-1111-4111-8111-111111111111', 'Good', 'reg.good', 't/good.avsc'), kindYaml('22222222-2222-4222-8222-222222222222', 'Bad', 'reg.bad', 't/bad.avsc')],
      { 't/good.avsc': record('Good', 'reg'), 't/bad.avsc': record('Bad', 'reg', [BAD_FIELD]) },
    );
    const loaded = loadCatalogForRegister(dir);
    expect(loaded.invalidFiles.map((f) => f.schemaFile)).toEqual(['t/bad.avsc']);
    const registry = createMemoryRegistry();
    const report = await registerSchemas(loaded.catalog, registry, 'test registry', loaded.invalidFiles);
    expect(report.ok).toBe(false);
    expect(report.kinds.map((k) => [k.name, k.subject, k.status])).toEqual([
      ['Good', 'reg.good-value', 'registered'],
      ['Bad', 'reg.bad-value', 'invalid'],
    ]);
    expect(await registry.versions('reg.good-value')).toEqual([1]);
    expect(await registry.versions('reg.bad-value')).toEqual([]);
    const text = formatRegisterReport(report).split('\n');
    expect(text[0]).toBe('schemas register: test registry');
    expect(text).toContain('INVALID       Bad (subject reg.bad-value, FULL_TRANSITIVE): not registered');
    expect(text).toContain('    t/bad.avsc is not a valid Avro schema');
    expect(text.some((l) => l.startsWith('    /fields/a: ') && l.includes('FIRST branch'))).toBe(true);
    expect(text.at(-1)).toBe('FAILED: 1 registered, 0 unchanged, 1 not registered');
  });

  it('on a shared topic the valid kind keeps its <topic>-<record> subject', async () => {
    const dir = catalogDir(
      [kindYaml('33333333-3333-4333-8333-333333333333', 'Good', 'reg.shared', 't/good.avsc'), kindYaml('44444444-4444-4444-8444-444444444444', 'Bad', 'reg.shared', 't/bad.avsc')],
      { 't/good.avsc': record('Good', 'reg'), 't/bad.avsc': record('Bad', 'reg', [BAD_FIELD]) },
    );
    const loaded = loadCatalogForRegister(dir);
    const report = await registerSchemas(loaded.catalog, createMemoryRegistry(), 'test registry', loaded.invalidFiles);
    expect(report.kinds.map((k) => [k.subject, k.status])).toEqual([
      ['reg.shared-reg.Good', 'registered'],
      ['reg.shared-reg.Bad', 'invalid'],
    ]);
  });
});

describe('schemas register and check with a schema reverted to an older registered version', () => {
  // Break report finding 1: the registry returns the existing version 1 and leaves "latest" on 2.
  const OPTIONAL = { name: 'note', type: ['null', 'string'], default: null };

  it('register reports not-latest (not ok), naming both versions; check against the registry flags it too', async () => {
    const yaml = [kindYaml('55555555-5555-4555-8555-555555555555', 'Rev', 'reg.rev', 't/rev.avsc')];
    const registry = createMemoryRegistry();
    await registry.register('reg.rev-value', JSON.stringify(record('Rev', 'reg')));
    await registry.register('reg.rev-value', JSON.stringify(record('Rev', 'reg', [OPTIONAL])));
    const dir = catalogDir(yaml, { 't/rev.avsc': record('Rev', 'reg') });
    const loaded = loadCatalogForRegister(dir);
    const report = await registerSchemas(loaded.catalog, registry, 'test registry', loaded.invalidFiles);
    expect(report.ok).toBe(false);
    expect(report.kinds.map((k) => [k.status, k.version, k.latestVersion])).toEqual([['not-latest', 1, 2]]);
    expect(report.kinds[0]?.reasons).toEqual([expect.stringContaining('matches version 1, but the subject\'s latest is version 2')]);
    expect(report.kinds[0]?.reasons[0]).toContain('delete versions 2..2 of the subject');
    const text = formatRegisterReport(report).split('\n');
    expect(text).toContain('NOT-LATEST    Rev (subject reg.rev-value, FULL_TRANSITIVE): matches version 1 (id 1), but the subject\'s latest is version 2');
    expect(text.at(-1)).toBe('FAILED: 0 registered, 0 unchanged, 1 not latest, 0 not registered');
    expect(await registry.versions('reg.rev-value')).toEqual([1, 2]);

    const checked = await checkCatalog(loaded.catalog!, createRegistryHistory(registry, 'test registry'));
    expect(checked.ok).toBe(false);
    expect(checked.kinds.map((k) => [k.status, k.notLatest])).toEqual([['not-latest', { matches: 'version 1', latest: 'version 2' }]]);
    const lines = formatCheckReport(checked).split('\n');
    expect(lines[1]).toBe('NOT-LATEST    Rev (t/rev.avsc, subject reg.rev-value, FULL_TRANSITIVE): identical to version 1, but the subject\'s latest is version 2');
    expect(lines.at(-1)).toBe('FAILED: 0 compatible, 0 new, 0 incompatible, 0 invalid, 1 not latest');
  });

  it('the latest version itself stays unchanged (ok); git history does not flag a revert', async () => {
    const registry = createMemoryRegistry();
    await registry.register('reg.same-value', JSON.stringify(record('Same', 'reg')));
    await registry.register('reg.same-value', JSON.stringify(record('Same', 'reg', [OPTIONAL])));
    const dir = catalogDir([kindYaml('66666666-6666-4666-8666-666666666666', 'Same', 'reg.same', 't/same.avsc')], { 't/same.avsc': record('Same', 'reg', [OPTIONAL]) });
    const loaded = loadCatalogForRegister(dir);
    const report = await registerSchemas(loaded.catalog, registry, 'test registry', loaded.invalidFiles);
    expect(report.ok).toBe(true);
    expect(report.kinds.map((k) => [k.status, k.version])).toEqual([['unchanged', 2]]);
    const kind = loaded.catalog!.kinds[0]!;
    const old = JSON.stringify(record('Same', 'reg'));
    const git: SchemaHistory = { source: 'git', description: 'git', versions: () => Promise.resolve([{ version: 1, label: 'commit a', schema: kind.schema }, { version: 2, label: 'commit b', schema: old }]) };
    // In git the file is the latest: going back to an earlier commit's schema is a change like any other.
    const g = await checkCatalog(loaded.catalog!, git);
    expect(g.kinds.map((k) => k.status)).toEqual(['compatible']);
  });
});
