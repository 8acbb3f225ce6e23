/**
 * Reader/writer schema resolution: can data written with `writer` be read with `reader`?
 * The rules are the Avro specification's, applied as Avro Java's SchemaCompatibility applies them
 * (what Confluent and Apicurio run): record, enum and fixed names compared unqualified, with the
 * reader's aliases; reader field aliases; promotions int→long/float/double, long→float/double,
 * float→double, string↔bytes; enum symbols with the reader's enum default; every branch of a
 * writer union must resolve; a reader union needs a matching branch; fixed sizes equal; a reader
 * field missing in the writer needs a default.
 * Stricter than Avro Java on purpose: decimal precision/scale must match (the spec: "two schemas
 * that are decimal logical types match if their scales and precisions match"), and a change of a
 * logical type that changes the meaning of the stored number (decimal added or removed,
 * timestamp-millis ↔ timestamp-micros, …) is refused. Those issues carry `registryAccepts: true`.
 * Spec: Avro 1.11 specification §"Schema Resolution", §"Aliases", §"Logical Types" → Decimal;
 * Avro Java org.apache.avro.SchemaCompatibility (ReaderWriterCompatibilityChecker).
 */
import { joinPath } from './model.js';
import type { AvroNode, EnumNode, FixedNode, LogicalInfo, NamedNode, PrimitiveName, RecordField, RecordNode } from './model.js';

/** Kinds of resolution failure. */
export type IssueKind =
  | 'type-mismatch'
  | 'name-mismatch'
  | 'fixed-size'
  | 'missing-enum-symbols'
  | 'missing-default'
  | 'missing-union-branch'
  | 'logical-type'
  | 'ambiguous-alias';

/** One reason data written with the writer schema cannot be read with the reader schema. */
export interface ResolutionIssue {
  readonly kind: IssueKind;
  /** Field path in the reader's terms: `/fields/price`, `/fields/tags/items`, `/` for the root. */
  readonly path: string;
  /** The reader's schema at that place (the reader union for a missing branch). */
  readonly reader: AvroNode;
  /** The writer's schema at that place (the offending writer branch for a missing branch). */
  readonly writer: AvroNode;
  /** missing-default: the reader field. */
  readonly field?: RecordField;
  /** missing-default: writer fields the reader does not know (a rename candidate). */
  readonly unmatchedWriterFields?: readonly string[];
  /** ambiguous-alias: the writer fields one reader field matches by name or alias (two or more). */
  readonly matchedWriterFields?: readonly string[];
  /** missing-enum-symbols: writer symbols the reader lacks. */
  readonly symbols?: readonly string[];
  /** true when Avro Java (and so Confluent and Apicurio) accepts this although the spec does not. */
  readonly registryAccepts: boolean;
}

const PROMOTIONS: Readonly<Record<PrimitiveName, readonly PrimitiveName[]>> = {
  null: [],
  boolean: [],
  int: [],
  long: ['int'],
  float: ['int', 'long'],
  double: ['int', 'long', 'float'],
  bytes: ['string'],
  string: ['bytes'],
};

/** true when a reader of primitive `reader` reads a writer's `writer` value (same type or a promotion). */
export function promotes(writer: PrimitiveName, reader: PrimitiveName): boolean {
  return writer === reader || PROMOTIONS[reader].includes(writer);
}

/** Spec §"Schema Resolution" + §"Aliases": unqualified names equal, or a reader alias names the writer. */
export function namesMatch(reader: NamedNode, writer: NamedNode): boolean {
  return reader.name === writer.name || reader.aliases.includes(writer.fullName);
}

/** Whether reader branch `r` "matches" writer `w` in the sense of the spec's union rules. */
function matches(r: AvroNode, w: AvroNode): boolean {
  if (r.kind === 'primitive' && w.kind === 'primitive') return promotes(w.type, r.type);
  if (r.kind !== w.kind) return false;
  if (r.kind === 'array' || r.kind === 'map') return true;
  if (r.kind === 'union' || r.kind === 'primitive') return false;
  return namesMatch(r, w as NamedNode);
}

const TIME_UNITS = new Set(['timestamp-millis', 'timestamp-micros', 'timestamp-nanos', 'local-timestamp-millis', 'local-timestamp-micros', 'local-timestamp-nanos', 'time-millis', 'time-micros', 'date']);

/** A logical-type change that changes the meaning of the stored value; undefined when harmless. */
function logicalChange(r: LogicalInfo | undefined, w: LogicalInfo | undefined): boolean {
  const rd = r?.logicalType === 'decimal';
  const wd = w?.logicalType === 'decimal';
  if (rd || wd) return !(rd && wd) || r?.precision !== w?.precision || (r?.scale ?? 0) !== (w?.scale ?? 0);
  if (r === undefined || w === undefined) return false;
  return TIME_UNITS.has(r.logicalType) && TIME_UNITS.has(w.logicalType) && r.logicalType !== w.logicalType;
}

class Checker {
  readonly issues: ResolutionIssue[] = [];
  readonly #inProgress = new Map<RecordNode, Set<RecordNode>>();

  add(issue: ResolutionIssue): void {
    this.issues.push(issue);
  }

  check(reader: AvroNode, writer: AvroNode, path: string): void {
    if (writer.kind === 'union') {
      // Spec: if the writer's is a union, each of its branches must resolve against the reader.
      for (const branch of writer.branches) {
        if (reader.kind === 'union') this.toUnion(reader, branch, path, true);
        else if (matches(reader, branch)) this.check(reader, branch, path);
        else this.add({ kind: 'missing-union-branch', path, reader, writer: branch, registryAccepts: false });
      }
      return;
    }
    if (reader.kind === 'union') {
      this.toUnion(reader, writer, path, false);
      return;
    }
    if (reader.kind === 'primitive' && writer.kind === 'primitive') {
      if (!promotes(writer.type, reader.type)) this.add({ kind: 'type-mismatch', path, reader, writer, registryAccepts: false });
      else if (logicalChange(reader.logical, writer.logical)) this.add({ kind: 'logical-type', path, reader, writer, registryAccepts: true });
      return;
    }
    if (reader.kind !== writer.kind) {
      this.add({ kind: 'type-mismatch', path, reader, writer, registryAccepts: false });
      return;
    }
    switch (reader.kind) {
      case 'array':
        this.check(reader.items, (writer as typeof reader).items, joinPath(path, 'items'));
        return;
      case 'map':
        this.check(reader.values, (writer as typeof reader).values, joinPath(path, 'values'));
        return;
      case 'record':
        this.record(reader, writer as RecordNode, path);
        return;
      case 'enum':
        this.enumType(reader, writer as EnumNode, path);
        return;
      case 'fixed':
        this.fixed(reader, writer as FixedNode, path);
        return;
      default:
        return;
    }
  }

  /**
   * Spec: the first branch of the reader union that matches the writer's schema is resolved
   * against it; no match is an error. (Avro Java tries every branch; with distinct branch types
   * the verdicts agree.)
   */
  toUnion(reader: Extract<AvroNode, { kind: 'union' }>, writer: AvroNode, path: string, fromWriterUnion: boolean): void {
    const branch = reader.branches.find((b) => matches(b, writer));
    if (branch !== undefined) this.check(branch, writer, path);
    else this.add({ kind: fromWriterUnion ? 'missing-union-branch' : 'type-mismatch', path, reader, writer, registryAccepts: false });
  }

  record(reader: RecordNode, writer: RecordNode, path: string): void {
    if (!namesMatch(reader, writer)) {
      this.add({ kind: 'name-mismatch', path, reader, writer, registryAccepts: false });
      return;
    }
    // Recursive records: a pair already being compared is assumed to resolve (co-inductively).
    const seen = this.#inProgress.get(reader) ?? new Set<RecordNode>();
    if (seen.has(writer)) return;
    seen.add(writer);
    this.#inProgress.set(reader, seen);
    const used = new Set<string>();
    const missing: RecordField[] = [];
    for (const rf of reader.fields) {
      // A reader field that matches two writer fields (its name one, an alias another) cannot be
      // resolved: Avro Java ("Found two different fields") and avsc ("ambiguous aliasing") refuse it.
      const matches = writer.fields.filter((f) => f.name === rf.name || rf.aliases.includes(f.name));
      if (matches.length > 1) {
        this.add({ kind: 'ambiguous-alias', path: joinPath(path, 'fields', rf.name), reader, writer, field: rf, matchedWriterFields: matches.map((f) => f.name), registryAccepts: false });
        for (const f of matches) used.add(f.name);
        continue;
      }
      const wf = matches[0];
      if (wf !== undefined) {
        used.add(wf.name);
        this.check(rf.type, wf.type, joinPath(path, 'fields', rf.name));
      } else if (!rf.hasDefault) missing.push(rf);
    }
    const unmatched = writer.fields.filter((f) => !used.has(f.name)).map((f) => f.name);
    for (const rf of missing) {
      this.add({ kind: 'missing-default', path: joinPath(path, 'fields', rf.name), reader, writer, field: rf, unmatchedWriterFields: unmatched, registryAccepts: false });
    }
  }

  enumType(reader: EnumNode, writer: EnumNode, path: string): void {
    if (!namesMatch(reader, writer)) {
      this.add({ kind: 'name-mismatch', path, reader, writer, registryAccepts: false });
      return;
    }
    const lacking = writer.symbols.filter((s) => !reader.symbols.includes(s));
    // Spec: a writer symbol unknown to the reader resolves to the reader's enum default, if any.
    if (lacking.length > 0 && reader.default === undefined) {
      this.add({ kind: 'missing-enum-symbols', path, reader, writer, symbols: lacking, registryAccepts: false });
    }
  }

  fixed(reader: FixedNode, writer: FixedNode, path: string): void {
    if (!namesMatch(reader, writer)) this.add({ kind: 'name-mismatch', path, reader, writer, registryAccepts: false });
    else if (reader.size !== writer.size) this.add({ kind: 'fixed-size', path, reader, writer, registryAccepts: false });
    else if (logicalChange(reader.logical, writer.logical)) this.add({ kind: 'logical-type', path, reader, writer, registryAccepts: true });
  }
}

/**
 * Every reason data written with `writer` cannot be read with `reader`; [] when it can.
 * Both graphs come from {@link buildAvroModel}. Pure; never throws.
 * Spec: Avro 1.11 §"Schema Resolution".
 */
export function resolutionIssues(reader: AvroNode, writer: AvroNode): ResolutionIssue[] {
  const c = new Checker();
  c.check(reader, writer, '/');
  return c.issues;
}
