/**
 * One-line explanations of resolution issues for schema owners: where (field path), what changed
 * (old → new), who breaks (new readers of old data, or old readers of new data) and what change
 * would be compatible.
 * Spec: Confluent Schema Registry docs, "Schema Evolution and Compatibility" (BACKWARD: new
 * readers, old data; FORWARD: old readers, new data).
 */
import { describeType } from './model.js';
import type { AvroNode, NamedNode } from './model.js';
import { promotes } from './resolution.js';
import type { ResolutionIssue } from './resolution.js';

/** Which check found the issue: BACKWARD (reader = new schema, writer = an earlier version) or FORWARD. */
export type CheckDirection = 'BACKWARD' | 'FORWARD';

/** What the earlier version is called in messages, e.g. `version 3` or `git 1a2b3c4`. */
export interface ExplainContext {
  readonly direction: CheckDirection;
  readonly previous: string;
}

function unionList(node: AvroNode): string {
  return describeType(node);
}

/** `a long`, `an int`, `an enum Side`. */
function withArticle(text: string): string {
  return /^[aeiou]/i.test(text) ? `an ${text}` : `a ${text}`;
}

/**
 * The one-line message for `issue` found by the `ctx.direction` check against `ctx.previous`.
 * Format: `<path>: <what changed> — <who cannot read what> (<why>); <what would be compatible>`.
 */
export function explainIssue(issue: ResolutionIssue, ctx: ExplainContext): string {
  const back = ctx.direction === 'BACKWARD';
  const { reader, writer } = issue;
  const oldNode = back ? writer : reader;
  const newNode = back ? reader : writer;
  const readers = back ? 'new readers' : `readers of ${ctx.previous}`;
  const data = back ? `old data (${ctx.previous})` : 'new data';
  const registryNote = issue.registryAccepts ? '; a schema registry (Avro Java) would accept this change, this check does not' : '';
  const path = issue.path;
  switch (issue.kind) {
    case 'type-mismatch': {
      const o = describeType(oldNode);
      const n = describeType(newNode);
      let why = '';
      let fix = `keep ${o} or add a new field with a default`;
      if (reader.kind === 'primitive' && writer.kind === 'primitive' && promotes(reader.type, writer.type)) {
        why = back ? ', narrowing' : `, ${o}→${n} is a widening only new readers can follow`;
        if (!back) fix = `keep ${o}, or add a new ${n} field with a default (widening is only BACKWARD compatible)`;
      } else if (reader.kind === 'union') {
        why = ', no branch of the reader union accepts it';
      }
      return `${path}: type changed from ${o} to ${n} — ${readers} (${describeType(reader)}) cannot read ${data} written as ${describeType(writer)}${why}; ${fix}`;
    }
    case 'missing-union-branch': {
      const b = describeType(writer);
      if (back) {
        const change = reader.kind === 'union' ? `union branch ${b} removed (now ${unionList(reader)})` : `type changed from a union with ${b} to ${describeType(reader)}`;
        return `${path}: ${change} — new readers cannot read ${data} holding ${withArticle(b)}; keep the ${b} branch`;
      }
      const change = reader.kind === 'union' ? `union branch ${b} added (${unionList(reader)} before)` : `type changed from ${describeType(reader)} to a union with ${b}`;
      return `${path}: ${change} — readers of ${ctx.previous} cannot read new data holding ${withArticle(b)}; do not add union branches under a FORWARD or FULL level, add a new field with a default instead`;
    }
    case 'missing-default': {
      const f = issue.field?.name ?? path;
      if (back) {
        const unmatched = issue.unmatchedWriterFields ?? [];
        const rename = unmatched.length > 0 ? ` (if it renames ${unmatched.map((u) => `"${u}"`).join(' or ')}, add "aliases": ["${unmatched[0] ?? ''}"])` : '';
        return `${path}: field "${f}" added without a default — new readers cannot fill it in when reading ${data}, which lacks it; give it a default, e.g. type ["null", …] with "default": null${rename}`;
      }
      return `${path}: field "${f}" removed (or renamed) — readers of ${ctx.previous} require it (it has no default there) and cannot read new data without it; keep the field (deprecate it in its doc), removal is compatible only for fields that had a default in every earlier version`;
    }
    case 'name-mismatch': {
      const kind = reader.kind as NamedNode['kind'];
      const o = oldNode as NamedNode;
      const n = newNode as NamedNode;
      if (back) {
        return `${path}: ${kind} renamed from ${o.fullName} to ${n.fullName} — new readers expect ${n.name} and cannot read ${data} written as ${o.name}; keep the name, or add "aliases": ["${o.fullName}"] to the new ${kind} (BACKWARD only)`;
      }
      return `${path}: ${kind} renamed from ${o.fullName} to ${n.fullName} — readers of ${ctx.previous} expect ${o.name} and cannot read new data written as ${n.name} (an alias helps only new readers); keep the name ${o.name}`;
    }
    case 'fixed-size': {
      const o = oldNode as Extract<AvroNode, { kind: 'fixed' }>;
      const n = newNode as Extract<AvroNode, { kind: 'fixed' }>;
      return `${path}: fixed ${n.name} size changed from ${o.size} to ${n.size} bytes — ${readers} (${(reader as typeof o).size} bytes) cannot read ${data} written with ${(writer as typeof o).size} bytes; keep size ${o.size} or add a new field with a default`;
    }
    case 'missing-enum-symbols': {
      const e = reader as Extract<AvroNode, { kind: 'enum' }>;
      const list = (issue.symbols ?? []).join(', ');
      if (back) {
        return `${path}: enum ${e.name} lost symbol(s) ${list} — new readers cannot read ${data} holding ${list} (the new enum has no "default"); keep ${list}, or give the enum a "default" symbol`;
      }
      return `${path}: enum ${e.name} gained symbol(s) ${list} — readers of ${ctx.previous} have no enum "default" and cannot read new data holding ${list}; do not add symbols to an enum whose earlier versions lack a "default" (add a default first: only readers that have it tolerate new symbols)`;
    }
    case 'ambiguous-alias': {
      const f = issue.field?.name ?? path;
      const matched = (issue.matchedWriterFields ?? []).map((m) => `"${m}"`).join(' and ');
      return `${path}: field "${f}" matches ${matched} of ${back ? ctx.previous : 'the new schema'} by name or alias — ${readers} cannot tell which one to read (Avro Java and avsc refuse the schema pair); remove the alias that names a field the writer still has`;
    }
    case 'logical-type': {
      const o = describeType(oldNode);
      const n = describeType(newNode);
      return `${path}: logical type changed from ${o} to ${n} — ${readers} would misread ${data} written as ${describeType(writer)} (the stored number means something else)${registryNote}; keep ${o} or add a new field with a default`;
    }
  }
}
