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
import { formatRegisterReport, loadCatalogForRegister, registerSchemas } from '../../../src/schemas-check/index.js';

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
