/**
 * Field defaults of recursive types are judged in time linear in the default's size (break report
 * hE, 2026-12-07): a union holding two records that both hold the union (`A { x: ["null", A, B] }`,
 * `B { x: ["null", A, B] }`) made the default check try every branch again at every level of a
 * wrong default, 2^levels calls — a 24-level default held `schemas check` for a minute, 30 levels
 * for hours, from a 700-byte .avsc file. The work is counted as the reads of the default's
 * objects (a Proxy), not timed.
 * Spec: Avro 1.11 §"Complex Types" → Records (field defaults; a union's default matches its first
 * branch), §"Names" (a record may refer to itself and to records defined before it).
 */
import { describe, expect, it } from 'vitest';
import { analyzeAvroSchema, buildAvroModel, defaultValueProblem } from '../../../src/registry/avro/index.js';
import type { AvroNode } from '../../../src/registry/avro/index.js';

/** `A { x: ["null", A, B { x: ["null", A, B] }] }` and a field `r` of type `[A, B, "null"]` with `rDefault`. */
function schemaWith(rDefault: unknown): Record<string, unknown> {
  const a = {
    type: 'record',
    name: 'A',
    fields: [{ name: 'x', type: ['null', 'A', { type: 'record', name: 'B', fields: [{ name: 'x', type: ['null', 'A', 'B'], default: null }] }], default: null }],
  };
  return { type: 'record', name: 'Top', namespace: 't', fields: [{ name: 'a', type: a }, { name: 'r', type: ['A', 'B', 'null'], default: rDefault }] };
}

/** `{ x: { x: … leaf … } }`, `levels` deep. */
function nested(levels: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = { x: v };
  return v;
}

/** `value` with every object wrapped so that each property read counts. */
function counted(value: unknown, reads: { n: number }): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const inner = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, counted(v, reads)]));
  return new Proxy(inner, {
    get(target, key, receiver) {
      reads.n++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

describe('defaults of mutually recursive records', () => {
  it('a wrong default 20 levels deep is judged with reads linear in its depth, not 2^depth', () => {
    const model = buildAvroModel(schemaWith(null));
    expect(model.problems).toEqual([]);
    const root = model.root as Extract<AvroNode, { kind: 'record' }>;
    const r = root.fields.find((f) => f.name === 'r')!.type;
    const reads = { n: 0 };
    const problem = defaultValueProblem(r, counted(nested(20, 1), reads));
    expect(problem).toContain('is not a null');
    // Each object is read a few times per type that may hold it (A, B), and once more by each
    // message quoting it: 840 reads here; the old check read them about 2^20 times.
    expect(reads.n).toBeLessThan(5000);
  });

  it('a 60-level wrong default is reported at its field; the one right default passes', () => {
    const bad = analyzeAvroSchema(JSON.stringify(schemaWith(nested(60, 1))));
    expect(bad.problems).toEqual([{ path: '/fields/r', message: expect.stringMatching(/^invalid default: field "x": .* is not a null$/) }]);
    // A's `x` is a union whose first branch is null: its default, nested or not, is null.
    const good = analyzeAvroSchema(JSON.stringify(schemaWith({ x: null })));
    expect(good.problems).toEqual([]);
  });
});
