/**
 * A reader union with two branches that match the writer by (unqualified) name: this checker
 * resolves against the FIRST such branch, as the Avro 1.11 spec says (§"Schema Resolution": "the
 * first schema in the reader's union that matches the writer's schema is recursively resolved
 * against it"); Avro Java's SchemaCompatibility (the registries) accepts when ANY branch is
 * compatible. A documented difference (docs/schema-evolution.md "Known differences"; break report
 * finding 5): this test pins our verdict.
 */
import { describe, expect, it } from 'vitest';
import { checkCompatibility } from '../../../src/registry/avro/index.js';

const a = (namespace: string, fields: string[]): object => ({ type: 'record', name: 'A', namespace, fields: fields.map((name) => ({ name, type: 'int' })) });
const outer = (x: unknown): string => JSON.stringify({ type: 'record', name: 'R', namespace: 'test', fields: [{ name: 'x', type: x }] });

describe('reader union with several branches matching by name', () => {
  const writer = outer(a('ns', ['a']));

  it('BACKWARD: resolved against the first branch of that name (other.A, needing b) — incompatible, although ns.A, later, would read it', () => {
    const findings = checkCompatibility(outer([a('other', ['a', 'b']), a('ns', ['a'])]), [{ version: 1, schema: writer }], 'BACKWARD');
    expect(findings.map((f) => [f.direction, f.kind, f.path])).toEqual([['BACKWARD', 'missing-default', '/fields/x/fields/b']]);
    expect(findings[0]?.registryAccepts).toBe(false);
  });

  it('with the compatible branch first, compatible', () => {
    expect(checkCompatibility(outer([a('ns', ['a']), a('other', ['a', 'b'])]), [{ version: 1, schema: writer }], 'BACKWARD')).toEqual([]);
  });
});
