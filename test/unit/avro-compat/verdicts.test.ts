import { describe, expect, it } from 'vitest';
import { analyzeAvroSchema, checkCompatibility, parseAvro } from '../../../src/registry/avro/index.js';
import { historyRows, invalidRows, pairRows } from './table.js';

const text = (s: unknown): string => JSON.stringify(s);

describe('Avro compatibility table: reader/writer pairs (BACKWARD: reader = new, writer = version 1)', () => {
  it('has at least 40 pairs and unique ids', () => {
    expect(pairRows.length).toBeGreaterThanOrEqual(40);
    expect(new Set([...pairRows, ...historyRows].map((r) => r.id)).size).toBe(pairRows.length + historyRows.length);
  });

  for (const row of pairRows) {
    it(`${row.compatible ? 'compatible' : 'incompatible'}: ${row.id}`, () => {
      const findings = checkCompatibility(text(row.reader), [{ version: 1, schema: text(row.writer) }], 'BACKWARD');
      expect(findings.map((f) => f.message)).toEqual(row.compatible ? [] : expect.arrayContaining([expect.stringContaining(row.explain ?? '')]));
      for (const f of findings) {
        expect(f.message).not.toMatch(/\n/);
        expect(f.message.startsWith(`${f.path}: `)).toBe(true);
        expect(f).toMatchObject({ version: 1, label: 'version 1', direction: 'BACKWARD' });
      }
    });
  }
});

describe('Avro compatibility table: multi-version and transitive cases', () => {
  for (const row of historyRows) {
    it(`${row.level} ${row.compatible ? 'compatible' : 'incompatible'}: ${row.id}`, () => {
      const previous = row.history.map((s, i) => ({ version: i + 1, schema: text(s) }));
      const findings = checkCompatibility(text(row.candidate), previous, row.level);
      expect(findings.map((f) => f.message)).toEqual(row.compatible ? [] : expect.arrayContaining([expect.stringContaining(row.explain ?? '')]));
    });
  }
});

describe('schema validation before registration', () => {
  for (const row of invalidRows) {
    it(`refuses: ${row.id}`, () => {
      const a = analyzeAvroSchema(text(row.schema));
      expect(a.schema).toBeUndefined();
      expect(a.problems).toEqual(expect.arrayContaining([{ path: row.path, message: expect.stringContaining(row.explain) }]));
    });
  }

  it('accepts every schema of the table and the project catalog shapes', () => {
    for (const row of pairRows) {
      expect(analyzeAvroSchema(text(row.writer)).problems).toEqual([]);
      expect(analyzeAvroSchema(text(row.reader)).problems).toEqual([]);
    }
  });

  it('parseAvro throws CEG_SCHEMA_INVALID naming the field', () => {
    const bad = invalidRows[0]!;
    expect(() => parseAvro(text(bad.schema))).toThrow(expect.objectContaining({ code: 'CEG_SCHEMA_INVALID', retriable: false, details: expect.objectContaining({ field: '/fields/b' }) }) as Error);
    expect(analyzeAvroSchema('{"type": ').problems[0]?.message).toMatch(/^not JSON/);
  });
});

describe('levels and findings', () => {
  const v1 = text({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }] });
  const v2 = text({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'long' }] });

  it('FULL reports each direction separately, with the version label', () => {
    const findings = checkCompatibility(v2, [{ version: 7, schema: v1, label: 'git 1a2b3c4' }], 'FULL');
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ version: 7, label: 'git 1a2b3c4', direction: 'FORWARD', kind: 'type-mismatch', path: '/fields/a', registryAccepts: false });
    expect(findings[0]!.message).toBe(
      '/fields/a: type changed from int to long — readers of git 1a2b3c4 (int) cannot read new data written as long, int→long is a widening only new readers can follow; keep int, or add a new long field with a default (widening is only BACKWARD compatible)',
    );
  });

  it('transitive levels report one finding per failing earlier version', () => {
    const noB = text({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }] });
    const withB = text({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }, { name: 'b', type: 'int' }] });
    const findings = checkCompatibility(withB, [{ version: 1, schema: noB }, { version: 2, schema: noB }], 'BACKWARD_TRANSITIVE');
    expect(findings.map((f) => [f.version, f.path])).toEqual([[1, '/fields/b'], [2, '/fields/b']]);
    expect(checkCompatibility(withB, [{ version: 1, schema: noB }, { version: 2, schema: noB }], 'BACKWARD').map((f) => f.version)).toEqual([2]);
  });

  it('marks the spec-only refusals as accepted by registries', () => {
    const d = (scale: number) => text({ type: 'record', name: 'R', fields: [{ name: 'p', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale } }] });
    const [f] = checkCompatibility(d(3), [{ version: 1, schema: d(2) }], 'FULL');
    expect(f).toMatchObject({ kind: 'logical-type', registryAccepts: true, path: '/fields/p' });
  });

  it('no earlier version, or NONE, is compatible', () => {
    expect(checkCompatibility(v2, [], 'FULL_TRANSITIVE')).toEqual([]);
    expect(checkCompatibility('"int"', [{ version: 1, schema: '"string"' }], 'NONE')).toEqual([]);
  });
});
