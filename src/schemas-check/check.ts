/**
 * `schemas check`: every kind's schema against its earlier versions (registered, or in git
 * history) under the kind's compatibility level.
 * Spec: Confluent "Schema Evolution and Compatibility" (levels); Avro 1.11 §"Schema Resolution";
 * DESIGN "The model is the schema registry" (CI runs the check and fails on a breaking change).
 */
import { existsSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { isGatewayError } from '../core/errors.js';
import { CATALOG_FILE, loadCatalog, looseKinds, parseCatalog, readCatalogFile } from '../catalog/index.js';
import type { Catalog, CatalogProblem, EventKind, LooseKind, SchemaReader } from '../catalog/index.js';
import { analyzeAvroSchema, checkCompatibility, levelPlan } from '../registry/avro/index.js';
import type { PreviousSchema } from '../registry/avro/index.js';
import { nestingProblem } from './depth.js';
import { parseEarlier } from './lenient.js';
import type { CheckReport, HistoricVersion, InvalidSchemaFile, KindCheck, SchemaHistory } from './types.js';

/** Sorted-key compact JSON of `text` (whitespace and key order do not matter); the trimmed text when it is not JSON. */
function canonical(text: string): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (typeof v !== 'object' || v === null) return v;
    const o = v as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, sortKeys(o[k])]));
  };
  try {
    return JSON.stringify(sortKeys(JSON.parse(text)));
  } catch {
    return text.trim();
  }
}

/** Options of {@link checkKind}. */
export interface CheckKindOptions {
  /**
   * The history may already hold the current schema as its newest version(s) (git history up to
   * a base that contains the change): leave out the newest versions identical to it, so that the
   * "latest version" the plain levels compare with is the latest one that differs. Default false
   * (a registry: a schema identical to the latest registered version is already registered).
   */
  readonly latestDistinct?: boolean;
  /**
   * The history is a registry subject's: a compatible schema identical (as sorted-key JSON) to one
   * of the kind's own registered versions other than the latest is status `not-latest`, since
   * registering it would return that version and leave the subject's "latest" on the newer one
   * (Confluent Schema Registry API, POST /subjects/{s}/versions). Default false (git history: the
   * file is the latest, whatever an older commit held).
   */
  readonly flagNotLatest?: boolean;
}

/**
 * The earlier versions a check compares with: consecutive identical versions (same schema as
 * sorted-key JSON, whatever the whitespace) collapsed into the first of them, and with
 * `latestDistinct` the newest ones identical to `current` left out — unless every version is
 * identical to it (then the one left is the schema itself: unchanged).
 */
export function distinctEarlier(current: string, earlier: readonly HistoricVersion[], latestDistinct: boolean): HistoricVersion[] {
  const out: { v: HistoricVersion; c: string }[] = [];
  for (const v of earlier) {
    const c = canonical(v.schema);
    if (out.at(-1)?.c !== c) out.push({ v, c });
  }
  if (latestDistinct) {
    const cur = canonical(current);
    if (out.length > 1 && out.at(-1)?.c === cur) out.pop();
  }
  return out.map((x) => x.v);
}

/**
 * Checks one kind's current schema against `earlier` (oldest first). Pure.
 * The plain levels (BACKWARD, FORWARD, FULL) compare with the latest version that differs from
 * the one before it (and, with `options.latestDistinct`, from the current schema); the transitive
 * ones with every distinct version. A plain level whose latest version does not parse (not JSON,
 * or nested too deep) compares
 * with the newest earlier one that parses, and says so in `notes`. `changed` compares with the
 * newest entry of `earlier` as given.
 */
export function checkKind(kind: EventKind, schemaText: string, earlier: readonly HistoricVersion[], options: CheckKindOptions = {}): KindCheck {
  const base = { eventId: kind.eventId, name: kind.name, subject: kind.subject, schemaFile: kind.schemaFile, level: kind.compatibility };
  const latest = earlier.at(-1);
  const changed = latest === undefined || canonical(latest.schema) !== canonical(schemaText);
  const analysis = analyzeAvroSchema(schemaText);
  if (analysis.schema === undefined) {
    return Object.freeze({ ...base, status: 'invalid', changed, compared: [], problems: analysis.problems, findings: [], notes: [] });
  }
  if (earlier.length === 0) return Object.freeze({ ...base, status: 'new', changed, compared: [], problems: [], findings: [], notes: [] });
  const plan = levelPlan(kind.compatibility);
  const distinct = distinctEarlier(schemaText, earlier, options.latestDistinct === true);
  const notes: string[] = [];
  const from = [...new Set(earlier.map((v) => v.subject).filter((x): x is string => x !== undefined && x !== kind.subject))];
  if (from.length > 0) {
    const hasOwn = earlier.some((v) => v.subject === undefined || v.subject === kind.subject);
    notes.push(
      hasOwn
        ? `the history of subject ${kind.subject} includes the versions of subject ${from.join(' and ')}, where this kind's record was registered before its subject changed`
        : `subject ${kind.subject} has no versions yet; compared with the versions of subject ${from.join(' and ')}, where this kind's record was registered before its subject changed`,
    );
  }
  const previous: PreviousSchema[] = [];
  let against: HistoricVersion[] = [];
  if (plan.directions.length > 0 && plan.transitive) {
    against = distinct;
    for (const v of against) {
      const p = parseEarlier(v.schema, v.label);
      if (p.note !== undefined) notes.push(p.note);
      if (p.schema !== undefined) previous.push({ version: v.version, label: v.label, schema: p.schema });
    }
  } else if (plan.directions.length > 0) {
    // The latest version; when it is not even JSON, the newest one that parses instead.
    const skipped: string[] = [];
    for (let i = distinct.length - 1; i >= 0; i--) {
      const v = distinct[i] as HistoricVersion;
      const p = parseEarlier(v.schema, v.label);
      if (p.schema === undefined) {
        skipped.push(p.note ?? `${v.label} was not compared`);
        continue;
      }
      if (skipped.length > 0) notes.push(`${skipped.join('; ')}; compared with ${v.label} instead, the newest earlier version that parses`);
      if (p.note !== undefined) notes.push(p.note);
      previous.push({ version: v.version, label: v.label, schema: p.schema });
      against = [v];
      break;
    }
    if (against.length === 0) notes.push(`${skipped.join('; ')}; no earlier version parses, nothing was compared`);
  }
  const findings = checkCompatibility(analysis.schema, previous, kind.compatibility);
  if (findings.length === 0 && options.flagNotLatest === true) {
    const own = earlier.filter((v) => v.subject === undefined || v.subject === kind.subject);
    const newest = own.at(-1);
    const cur = canonical(schemaText);
    const match = newest === undefined || canonical(newest.schema) === cur ? undefined : own.findLast((v) => canonical(v.schema) === cur);
    if (newest !== undefined && match !== undefined) {
      notes.push(
        `identical to ${match.label}, but the subject's latest is ${newest.label}: registering it would return ${match.label} and not move "latest", so readers of "latest" would get ${newest.label} while producers write ${match.label}; to make it the latest, change it (e.g. edit a doc) so it registers as a new version, or delete the newer versions of the subject`,
      );
      return Object.freeze({
        ...base,
        status: 'not-latest',
        changed,
        compared: against.map((v) => ({ version: v.version, label: v.label })),
        problems: [],
        findings,
        notes,
        notLatest: Object.freeze({ matches: match.label, latest: newest.label }),
      });
    }
  }
  return Object.freeze({
    ...base,
    status: findings.length > 0 ? 'incompatible' : 'compatible',
    changed,
    compared: against.map((v) => ({ version: v.version, label: v.label })),
    problems: [],
    findings,
    notes,
  });
}

/**
 * Checks every kind of `catalog` (its schema as loaded, compact JSON) against its earlier versions
 * from `history`, in catalog order. For git history, which may already hold the current schema
 * (committed up to the base revision), the plain levels compare with the latest version that
 * differs from it ({@link CheckKindOptions.latestDistinct}); for a registry, a schema identical to
 * a registered version other than the latest is `not-latest` ({@link CheckKindOptions.flagNotLatest}).
 * Errors: those of {@link SchemaHistory.versions} (exit 2 for the CLI).
 */
export async function checkCatalog(catalog: Catalog, history: SchemaHistory): Promise<CheckReport> {
  const kinds: KindCheck[] = [];
  for (const kind of catalog.kinds) {
    const earlier = await history.versions(kind);
    kinds.push(checkKind(kind, kind.schema, earlier, { latestDistinct: history.source === 'git', flagNotLatest: history.source === 'registry' }));
  }
  const ok = kinds.every((k) => k.status === 'compatible' || k.status === 'new');
  return Object.freeze({ source: history.source, against: history.description, catalogDir: catalog.dir, ok, kinds, invalidFiles: [] });
}

/** The catalog, or the schema files that stop it from loading (reported like invalid schemas). */
export type CatalogLoad = { readonly catalog: Catalog; readonly invalidFiles?: undefined } | { readonly catalog?: undefined; readonly invalidFiles: readonly InvalidSchemaFile[] };

function schemaFileOf(p: CatalogProblem): string | undefined {
  const file = p.path.split('#')[0] ?? '';
  return file.endsWith('.avsc') ? file : undefined;
}

/** The schema files catalog.yaml in `dir` names that exist, with their text; [] when catalog.yaml is missing or not YAML with kinds. */
function schemaFilesOf(dir: string): { file: string; text: string }[] {
  const root = resolve(dir);
  let kinds: readonly LooseKind[] | undefined;
  try {
    const text = readCatalogFile(root, CATALOG_FILE);
    if (typeof text !== 'string') return []; // missing or no regular file: the catalog load reports it
    kinds = looseKinds(text);
  } catch {
    return [];
  }
  const out: { file: string; text: string }[] = [];
  for (const { schema: file } of kinds ?? []) {
    if (file === undefined || out.some((f) => f.file === file)) continue;
    const path = join(root, file);
    if (!path.startsWith(root + sep)) continue;
    try {
      // Not a regular file (a FIFO would hang the read), missing, unreadable: the catalog load reports it.
      const text = readCatalogFile(root, file);
      if (typeof text === 'string') out.push({ file, text });
    } catch {
      // unreadable: the catalog load reports it
    }
  }
  return out;
}

/** The catalog's schema files nested deeper than MAX_SCHEMA_NESTING (depth.ts), as invalid files. */
function tooDeepFiles(dir: string): InvalidSchemaFile[] {
  const out: InvalidSchemaFile[] = [];
  for (const f of schemaFilesOf(dir)) {
    const problem = nestingProblem(f.text);
    if (problem !== undefined) out.push({ schemaFile: f.file, problems: [{ path: '/', message: problem }] });
  }
  return out;
}

/**
 * Loads the catalog in `dir`. When it does not load, returns the files that stop it — catalog.yaml
 * itself (first; its problems at their path in it, e.g. `kinds[1].eventId`) and each schema file
 * with field paths (from this project's Avro validation) — instead of throwing, so that `schemas
 * check` reports invalid input as a failed check (exit 1) rather than a usage error. A schema file nested
 * deeper than MAX_SCHEMA_NESTING (depth.ts, 1000) levels is such an invalid file (checked before loading,
 * so the recursive checks never overflow the stack; an overflow that happens anyway is reported
 * against the file that causes it).
 * Errors: GatewayError CEG_CATALOG_INVALID (retriable: false) when `dir` holds no catalog.yaml
 *   (a usage error: exit 2).
 */
export function loadCatalogForCheck(dir: string): CatalogLoad {
  const tooDeep = tooDeepFiles(dir);
  if (tooDeep.length > 0) return { invalidFiles: tooDeep };
  try {
    return { catalog: loadCatalog(dir) };
  } catch (err) {
    if (err instanceof RangeError) {
      // A stack overflow the nesting limit did not foresee: name the files that cause it.
      const overflowing = schemaFilesOf(dir).filter((f) => {
        try {
          analyzeAvroSchema(f.text);
          return false;
        } catch (e) {
          return e instanceof RangeError;
        }
      });
      if (overflowing.length === 0) throw err;
      return { invalidFiles: overflowing.map((f) => ({ schemaFile: f.file, problems: [{ path: '/', message: `too deeply nested to check (${err.message})` }] })) };
    }
    if (!isGatewayError(err, 'CEG_CATALOG_INVALID')) throw err;
    const problems = (err.details['problems'] ?? []) as CatalogProblem[];
    // No catalog.yaml at all: a wrong --catalog or CATALOG_DIR, a usage error (exit 2).
    if (problems.length === 0 || !existsSync(join(resolve(dir), CATALOG_FILE))) throw err;
    const byFile = new Map<string, InvalidSchemaFile>();
    // Problems of catalog.yaml itself (a duplicate eventId, not YAML, …): reported as that file's, at their path in it.
    const own = problems.filter((p) => schemaFileOf(p) === undefined);
    if (own.length > 0) {
      byFile.set(CATALOG_FILE, { schemaFile: CATALOG_FILE, problems: own.map((p) => ({ path: p.path === CATALOG_FILE ? '(root)' : p.path, message: p.problem })) });
    }
    for (const p of problems) {
      if (schemaFileOf(p) === undefined) continue;
      const file = schemaFileOf(p) as string;
      if (byFile.has(file)) continue;
      const text = readCatalogFile(resolve(dir), file);
      const own = typeof text !== 'string' ? [] : analyzeAvroSchema(text).problems;
      const fromCatalog = problems.filter((q) => schemaFileOf(q) === file).map((q) => ({ path: q.path.includes('#') ? q.path.slice(q.path.indexOf('#') + 1) : '/', message: q.problem }));
      byFile.set(file, { schemaFile: file, problems: own.length > 0 ? own : fromCatalog });
    }
    return { invalidFiles: [...byFile.values()] };
  }
}

/** The report for a catalog that did not load because of invalid schema files. */
export function invalidFilesReport(history: SchemaHistory, dir: string, invalidFiles: readonly InvalidSchemaFile[]): CheckReport {
  return Object.freeze({ source: history.source, against: history.description, catalogDir: resolve(dir), ok: false, kinds: [], invalidFiles });
}

/** The catalog with every loadable kind, and the schema files that are invalid. */
export interface PartialCatalogLoad {
  /**
   * The catalog, in which each kind whose file is in `invalidFiles` has a stand-in schema (a
   * record of the same name, when the file names a valid one, holding just the key fields) and
   * must not be used; undefined when even that does not load.
   */
  readonly catalog?: Catalog;
  readonly invalidFiles: readonly InvalidSchemaFile[];
}

const AVRO_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A valid record standing in for an invalid schema file, keeping its name when it can (a shared topic's subject depends on it). */
function standIn(text: string | undefined, keys: readonly string[], n: number): string {
  let name = `CegInvalidSchema${n}`;
  let namespace: string | undefined;
  try {
    const json = JSON.parse(text ?? '') as { name?: unknown; namespace?: unknown };
    if (typeof json.name === 'string') {
      const parts = json.name.split('.');
      if (parts.every((p) => AVRO_NAME.test(p))) name = json.name;
    }
    if (typeof json.namespace === 'string' && json.namespace.split('.').every((p) => AVRO_NAME.test(p))) namespace = json.namespace;
  } catch {
    // not JSON: the generic name
  }
  return JSON.stringify({ type: 'record', name, ...(namespace === undefined ? {} : { namespace }), fields: keys.map((k) => ({ name: k, type: 'string' })) });
}

/**
 * Loads the catalog in `dir` for `schemas register`: like {@link loadCatalogForCheck}, but when
 * only schema files are invalid, the other kinds still load (the invalid ones get a stand-in
 * schema, so the subjects of the others — which depend on how many kinds share a topic — are
 * those of the full catalog), so that one invalid schema does not stop the others from
 * registering.
 * catalog.yaml's own problems are such an invalid file too (nothing registers: the catalog does not load).
 * Errors: GatewayError CEG_CATALOG_INVALID (retriable: false) when `dir` holds no catalog.yaml.
 */
export function loadCatalogForRegister(dir: string): PartialCatalogLoad {
  const first = loadCatalogForCheck(dir);
  if (first.catalog !== undefined) return { catalog: first.catalog, invalidFiles: [] };
  const invalidFiles = first.invalidFiles;
  const root = resolve(dir);
  try {
    const yamlText = readCatalogFile(root, CATALOG_FILE);
    // Missing or no regular file (a FIFO would hang the read): nothing loads.
    if (typeof yamlText !== 'string') return { invalidFiles };
    const keysOf = new Map<string, readonly string[]>();
    for (const k of looseKinds(yamlText) ?? []) {
      if (k.schema !== undefined && k.key !== undefined) keysOf.set(k.schema, k.key);
    }
    const invalid = new Set(invalidFiles.map((f) => f.schemaFile));
    let n = 0;
    const readSchema = (relative: string): ReturnType<SchemaReader> => {
      const text = readCatalogFile(root, relative);
      return invalid.has(relative) ? standIn(typeof text === 'string' ? text : undefined, keysOf.get(relative) ?? [], ++n) : text;
    };
    return { catalog: parseCatalog(yamlText, readSchema, root), invalidFiles };
  } catch {
    return { invalidFiles };
  }
}
