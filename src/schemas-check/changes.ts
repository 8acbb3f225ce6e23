/**
 * What changed between two versions of a schema, field by field, for `schemas register` reports:
 * `added /fields/x (union [null, string], default null)`, `removed /fields/y`,
 * `changed /fields/z: int → long`, `renamed record A → B`, `enum Side: added symbols FLAT`.
 * Spec: Avro 1.11 §"Schema Declaration" (fields, names, enum symbols, fixed size).
 */
import { describeType } from '../registry/avro/index.js';
import type { AvroNode } from '../registry/avro/index.js';

function join(path: string, ...seg: string[]): string {
  return `${path === '/' ? '' : path}/${seg.join('/')}`;
}

/** The differences from `before` to `after`, one line each, in field order; [] when equivalent. */
export function schemaChanges(before: AvroNode, after: AvroNode): string[] {
  const out: string[] = [];
  const seen = new Set<AvroNode>();
  const walk = (a: AvroNode, b: AvroNode, path: string): void => {
    if (a.kind === 'record' && b.kind === 'record') {
      if (seen.has(b)) return;
      seen.add(b);
      if (a.fullName !== b.fullName) out.push(`renamed record ${path}: ${a.fullName} → ${b.fullName}`);
      for (const f of b.fields) {
        const old = a.fields.find((x) => x.name === f.name) ?? a.fields.find((x) => f.aliases.includes(x.name));
        const p = join(path, 'fields', f.name);
        if (old === undefined) out.push(`added ${p} (${describeType(f.type)}${f.hasDefault ? `, default ${JSON.stringify(f.default)}` : ', no default'})`);
        else {
          if (old.name !== f.name) out.push(`renamed field ${join(path, 'fields', old.name)} → ${f.name}`);
          if (old.hasDefault !== f.hasDefault || JSON.stringify(old.default) !== JSON.stringify(f.default)) {
            out.push(`default of ${p}: ${old.hasDefault ? JSON.stringify(old.default) : 'none'} → ${f.hasDefault ? JSON.stringify(f.default) : 'none'}`);
          }
          walk(old.type, f.type, p);
        }
      }
      for (const f of a.fields) {
        if (!b.fields.some((x) => x.name === f.name || x.aliases.includes(f.name))) out.push(`removed ${join(path, 'fields', f.name)}`);
      }
      return;
    }
    if (a.kind === 'enum' && b.kind === 'enum') {
      if (a.fullName !== b.fullName) out.push(`renamed enum ${path}: ${a.fullName} → ${b.fullName}`);
      const added = b.symbols.filter((s) => !a.symbols.includes(s));
      const removed = a.symbols.filter((s) => !b.symbols.includes(s));
      if (added.length > 0) out.push(`enum ${b.name} at ${path}: added symbols ${added.join(', ')}`);
      if (removed.length > 0) out.push(`enum ${b.name} at ${path}: removed symbols ${removed.join(', ')}`);
      if (a.default !== b.default) out.push(`enum ${b.name} at ${path}: default ${a.default ?? 'none'} → ${b.default ?? 'none'}`);
      return;
    }
    if (a.kind === 'array' && b.kind === 'array') return walk(a.items, b.items, join(path, 'items'));
    if (a.kind === 'map' && b.kind === 'map') return walk(a.values, b.values, join(path, 'values'));
    if (a.kind === 'union' && b.kind === 'union' && a.branches.length === b.branches.length) {
      const same = a.branches.every((x, i) => {
        const y = b.branches[i] as AvroNode;
        return x.kind === y.kind && (x.kind === 'record' || describeType(x) === describeType(y));
      });
      if (same) {
        a.branches.forEach((x, i) => walk(x, b.branches[i] as AvroNode, path));
        return;
      }
    }
    const da = describeType(a);
    const db = describeType(b);
    if (da !== db) out.push(`changed ${path}: ${da} → ${db}`);
  };
  walk(before, after, '/');
  return out;
}
