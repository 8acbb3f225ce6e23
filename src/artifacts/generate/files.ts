/**
 * The generated folder as a list of files, written to disk or compared with it (the staleness
 * check CI runs: `ce-gateway catalog generate --check`).
 * Spec: bus spec X1 (generated code used by the project, stale output fails CI); STYLE "a
 * `catalog/` integrity test (regenerate, then compare)".
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GatewayError } from '../../core/errors.js';
import type { Catalog } from '../../catalog/index.js';
import { eventsModule, GENERATED_HEADER } from './typescript.js';
import { indexModule, kindsModule } from './kinds-module.js';
import type { GenerateTarget } from './kinds-module.js';

/** One generated file: `path` relative to the output directory, `content` its exact text. */
export interface GeneratedFile {
  readonly path: string;
  readonly content: string;
}

/** Result of comparing generated files with a directory. */
export interface GeneratedCheck {
  /** Files whose content differs from the regenerated text. */
  readonly changed: readonly string[];
  /** Files that should exist and do not. */
  readonly missing: readonly string[];
  /** Generated-looking `.ts` files in the directory that generation no longer produces. */
  readonly extra: readonly string[];
}

/**
 * Every file of the generated folder for `catalog`, in a fixed order. Pure and deterministic.
 * `target`: see {@link GenerateTarget}; default `package` (this package's own folder).
 * Errors: those of {@link eventsModule}.
 */
export function generateCatalogFiles(catalog: Catalog, target: GenerateTarget = 'package'): readonly GeneratedFile[] {
  return [
    { path: 'events.ts', content: eventsModule(catalog) },
    { path: 'kinds.ts', content: kindsModule(catalog, target) },
    { path: 'index.ts', content: indexModule(target) },
  ];
}

/**
 * Writes `files` under `dir` (created when missing), only those whose content changed. A file that
 * already exists is replaced only when it starts with {@link GENERATED_HEADER} (an earlier run
 * wrote it); any other existing file is the user's, and nothing at all is written then (every file
 * is checked before the first write).
 * Returns the paths written.
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false, `details: { field: 'out', file }`)
 *   naming the first existing file without the header, saying to pick an empty folder or delete
 *   it; Node fs errors (EACCES, EISDIR, …).
 */
export function writeGeneratedFiles(dir: string, files: readonly GeneratedFile[]): readonly string[] {
  const current = new Map<string, string>();
  for (const f of files) {
    const path = join(dir, f.path);
    if (!existsSync(path)) continue;
    const text = readFileSync(path, 'utf8');
    if (!text.startsWith(GENERATED_HEADER)) {
      throw new GatewayError(
        'CEG_INVALID_OPTIONS',
        `${path} exists and was not written by ce-gateway catalog generate (it does not start with "${GENERATED_HEADER}"): nothing was written; pick an empty folder for --out, or delete the file`,
        { retriable: false, details: { field: 'out', file: path } },
      );
    }
    current.set(f.path, text);
  }
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const f of files) {
    const path = join(dir, f.path);
    if (current.get(f.path) === f.content) continue;
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, f.content);
    written.push(f.path);
  }
  return written;
}

/** Compares `files` with the content of `dir` without writing anything. */
export function checkGeneratedFiles(dir: string, files: readonly GeneratedFile[]): GeneratedCheck {
  const changed: string[] = [];
  const missing: string[] = [];
  for (const f of files) {
    const path = join(dir, f.path);
    if (!existsSync(path)) missing.push(f.path);
    else if (readFileSync(path, 'utf8') !== f.content) changed.push(f.path);
  }
  const expected = new Set(files.map((f) => f.path));
  const extra = existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => n.endsWith('.ts') && !expected.has(n))
        .filter((n) => readFileSync(join(dir, n), 'utf8').startsWith(GENERATED_HEADER))
        .sort()
    : [];
  return { changed, missing, extra };
}

/** true when a {@link GeneratedCheck} found nothing stale. */
export function isUpToDate(check: GeneratedCheck): boolean {
  return check.changed.length === 0 && check.missing.length === 0 && check.extra.length === 0;
}
