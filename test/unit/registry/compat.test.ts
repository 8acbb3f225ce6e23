import { describe, expect, it } from 'vitest';
import { checkCompatibility, parseAvro } from '../../../src/registry/avro/index.js';
import type { CompatibilityLevel } from '../../../src/registry/port.js';

const rec = (fields: object[]) => JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'string' }, ...fields] });
const base = rec([]);
const addedRequired = rec([{ name: 'b', type: 'int' }]);
const addedOptional = rec([{ name: 'b', type: ['null', 'int'], default: null }]);

const findings = (candidate: string, previous: string[], level: CompatibilityLevel) =>
  checkCompatibility(candidate, previous.map((schema, i) => ({ version: i + 1, schema })), level);
const ok = (candidate: string, previous: string[], level: CompatibilityLevel): boolean => findings(candidate, previous, level).length === 0;

describe('checkCompatibility by level', () => {
  it('BACKWARD: the new schema must read old data', () => {
    expect(ok(addedRequired, [base], 'BACKWARD')).toBe(false);
    expect(ok(addedOptional, [base], 'BACKWARD')).toBe(true);
    expect(ok(base, [addedRequired], 'BACKWARD')).toBe(true); // dropping a field is backward compatible
  });

  it('FORWARD: old readers must read new data', () => {
    expect(ok(base, [addedRequired], 'FORWARD')).toBe(false);
    expect(ok(addedRequired, [base], 'FORWARD')).toBe(true);
  });

  it('FULL: both directions', () => {
    expect(ok(addedRequired, [base], 'FULL')).toBe(false);
    expect(ok(base, [addedRequired], 'FULL')).toBe(false);
    expect(ok(addedOptional, [base], 'FULL')).toBe(true);
  });

  it('transitive levels check every version; plain ones only the latest; NONE nothing', () => {
    const history = [base, rec([{ name: 'b', type: 'int', default: 0 }])];
    expect(ok(addedRequired, history, 'BACKWARD')).toBe(true);
    expect(ok(addedRequired, history, 'BACKWARD_TRANSITIVE')).toBe(false);
    expect(ok(addedRequired, history, 'NONE')).toBe(true);
    const found = findings(addedRequired, history, 'FULL_TRANSITIVE');
    expect(found.map((f) => [f.version, f.direction])).toEqual([[1, 'BACKWARD']]);
  });

  it('refuses an enum that loses a symbol old data may hold', () => {
    const e = (symbols: string[]) => JSON.stringify({ type: 'enum', name: 'E', symbols });
    expect(findings(e(['A']), [e(['A', 'B'])], 'BACKWARD')).toHaveLength(1);
    expect(findings(e(['A', 'B', 'C']), [e(['A', 'B'])], 'BACKWARD')).toHaveLength(0);
  });

  it('parseAvro refuses invalid text with CEG_SCHEMA_INVALID', () => {
    expect(() => parseAvro('{"type":"nope"}')).toThrow(expect.objectContaining({ code: 'CEG_SCHEMA_INVALID', retriable: false }) as Error);
  });
});

describe('schemas check: ambiguous alias', () => {
  it('a reader field whose alias matches a second writer field is incompatible (Avro Java and avsc refuse to decode with it)', async () => {
    const avsc = await import('avsc');
    const writer = { type: 'record', name: 'R', fields: [{ name: 'a', type: 'string' }, { name: 'b', type: 'string' }] };
    const reader = { type: 'record', name: 'R', fields: [{ name: 'a', type: 'string', aliases: ['b'] }] };
    const problems = findings(JSON.stringify(reader), [JSON.stringify(writer)], 'BACKWARD').map((f) => f.message);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/field "a" matches "a" and "b" .*cannot tell which one to read/);
    // The reference decoder agrees: it cannot build a resolver for the pair.
    expect(() => avsc.Type.forSchema(reader as never).createResolver(avsc.Type.forSchema(writer as never))).toThrow(/ambiguous/);
    // An alias that names a field the writer no longer has stays a plain rename.
    const renamed = { type: 'record', name: 'R', fields: [{ name: 'c', type: 'string', aliases: ['b'] }, { name: 'a', type: 'string' }] };
    expect(findings(JSON.stringify(renamed), [JSON.stringify(writer)], 'BACKWARD')).toEqual([]);
  });
});
