import { describe, expect, it } from 'vitest';
import { parseCatalog } from '../../../src/catalog/index.js';
import { analyzeAvroSchema } from '../../../src/registry/avro/index.js';
import { checkCatalog, checkKind, formatCheckReport, schemaChanges } from '../../../src/schemas-check/index.js';
import type { HistoricVersion, SchemaHistory } from '../../../src/schemas-check/index.js';

const schema = (fields: object[], name = 'Probe'): string => JSON.stringify({ type: 'record', name, namespace: 'test.sc', fields: [{ name: 'id', type: 'string' }, ...fields] });

function catalog(level: string | undefined, text: string) {
  const yaml = [
    'version: 1',
    'kinds:',
    '  - eventId: 0f8e3c1a-4d2b-4c6e-9a7f-1b2c3d4e5f60',
    '    name: Probe',
    '    description: probe kind',
    '    topic: test.probe',
    '    schema: probe.avsc',
    '    key: [id]',
    '    publish: true',
    '    owner: test',
    ...(level === undefined ? [] : [`    compatibility: ${level}`]),
  ].join('\n');
  return parseCatalog(yaml, () => text, '/virtual');
}

const versions = (...texts: string[]): HistoricVersion[] => texts.map((s, i) => ({ version: i + 1, label: `version ${i + 1}`, schema: s }));

describe('checkKind', () => {
  const v1 = schema([{ name: 'amount', type: 'long' }]);
  const v2 = schema([{ name: 'amount', type: 'long' }, { name: 'note', type: ['null', 'string'], default: null }]);

  it('uses the kind\'s level (default FULL_TRANSITIVE) and reports every finding', () => {
    const cat = catalog(undefined, schema([]));
    const kind = cat.kinds[0]!;
    expect(kind.compatibility).toBe('FULL_TRANSITIVE');
    const r = checkKind(kind, kind.schema, versions(v1, v2));
    expect(r).toMatchObject({ status: 'incompatible', changed: true, level: 'FULL_TRANSITIVE', compared: [{ version: 1 }, { version: 2 }] });
    expect(r.findings.map((f) => [f.direction, f.version, f.path])).toEqual([
      ['FORWARD', 1, '/fields/amount'],
      ['FORWARD', 2, '/fields/amount'],
    ]);
  });

  it('a level of BACKWARD lets the same removal pass; no history is "new"; an invalid schema is "invalid"', () => {
    const kind = catalog('BACKWARD', schema([])).kinds[0]!;
    expect(checkKind(kind, kind.schema, versions(v1, v2)).status).toBe('compatible');
    expect(checkKind(kind, kind.schema, []).status).toBe('new');
    const bad = checkKind(kind, schema([{ name: 'n', type: ['null', 'int'], default: 3 }]), versions(v1));
    expect(bad.status).toBe('invalid');
    expect(bad.problems[0]?.path).toBe('/fields/n');
  });

  it('plain levels compare with the latest version that differs: git history holding the current schema (latestDistinct) and identical versions', () => {
    const kind = catalog('FORWARD', schema([])).kinds[0]!;
    const reformatted = JSON.stringify(JSON.parse(kind.schema), null, 2);
    // Git up to a base that holds the change: the newest version is the schema itself.
    const r = checkKind(kind, kind.schema, versions(v1, kind.schema, reformatted), { latestDistinct: true });
    expect(r).toMatchObject({ status: 'incompatible', changed: false, compared: [{ version: 1 }] });
    expect(r.findings.map((f) => [f.direction, f.path])).toEqual([['FORWARD', '/fields/amount']]);
    // Only the schema itself: unchanged, compatible.
    expect(checkKind(kind, kind.schema, versions(kind.schema), { latestDistinct: true })).toMatchObject({ status: 'compatible', changed: false, compared: [{ version: 1 }] });
    // A registry: the latest registered version identical to the schema is already registered.
    expect(checkKind(kind, kind.schema, versions(v1, kind.schema)).status).toBe('compatible');
    // Transitive: identical versions are compared once.
    const t = catalog('FULL_TRANSITIVE', schema([])).kinds[0]!;
    expect(checkKind(t, t.schema, versions(v1, v1, JSON.stringify(JSON.parse(v1), null, 1)), { latestDistinct: true }).compared).toEqual([{ version: 1, label: 'version 1' }]);
  });

  it('a plain level whose latest version is not JSON compares with the newest one that parses', () => {
    const kind = catalog('BACKWARD', schema([{ name: 'x', type: 'string' }])).kinds[0]!;
    const r = checkKind(kind, kind.schema, versions(v1, '{"type": "record",', 'not json either'));
    expect(r).toMatchObject({ status: 'incompatible', compared: [{ version: 1 }] });
    expect(r.notes).toEqual(['version 3 is not JSON and was not compared; version 2 is not JSON and was not compared; compared with version 1 instead, the newest earlier version that parses']);
  });

  it('compares an earlier version that today\'s validation refuses, with a note', () => {
    const kind = catalog('FULL', v2).kinds[0]!;
    const old = schema([{ name: 'amount', type: 'long' }, { name: 'legacy', type: ['null', 'int'], default: 1 }]);
    const r = checkKind(kind, kind.schema, versions(old));
    expect(r.status).toBe('compatible');
    expect(r.notes).toEqual([expect.stringContaining('version 1 is not valid Avro today (/fields/legacy:')]);
  });
});

describe('checkCatalog and the human report', () => {
  it('prints one line per kind, the findings indented, and a summary', async () => {
    const cat = catalog(undefined, schema([{ name: 'amount', type: 'int' }]));
    const history: SchemaHistory = { source: 'git', description: 'test history', versions: () => Promise.resolve(versions(schema([{ name: 'amount', type: 'long' }]))) };
    const report = await checkCatalog(cat, history);
    expect(report.ok).toBe(false);
    expect(formatCheckReport(report).split('\n')).toEqual([
      'schemas check: /virtual against the test history',
      'INCOMPATIBLE  Probe (probe.avsc, subject test.probe-value, FULL_TRANSITIVE): 1 problem(s) against version 1',
      '    [BACKWARD vs version 1] /fields/amount: type changed from long to int — new readers (int) cannot read old data (version 1) written as long, narrowing; keep long or add a new field with a default',
      'FAILED: 0 compatible, 0 new, 1 incompatible, 0 invalid',
    ]);
  });
});

describe('schemaChanges', () => {
  const root = (s: string) => analyzeAvroSchema(s).schema!.root;
  it('lists added, removed, changed and renamed fields, enum symbols and defaults', () => {
    const before = schema([
      { name: 'a', type: 'int' },
      { name: 'gone', type: 'string' },
      { name: 'old', type: 'long' },
      { name: 'side', type: { type: 'enum', name: 'Side', symbols: ['BUY', 'SELL'] } },
    ]);
    const after = schema([
      { name: 'a', type: 'long', default: 0 },
      { name: 'renamed', type: 'long', aliases: ['old'] },
      { name: 'side', type: { type: 'enum', name: 'Side', symbols: ['BUY', 'SELL', 'FLAT'] } },
      { name: 'note', type: ['null', 'string'], default: null },
    ]);
    expect(schemaChanges(root(before), root(after))).toEqual([
      'default of /fields/a: none → 0',
      'changed /fields/a: int → long',
      'renamed field /fields/old → renamed',
      'enum Side at /fields/side: added symbols FLAT',
      'added /fields/note (union [null, string], default null)',
      'removed /fields/gone',
    ]);
    expect(schemaChanges(root(before), root(before))).toEqual([]);
  });
});
