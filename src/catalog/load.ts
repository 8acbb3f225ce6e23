/**
 * Loads the catalog from a directory: `<dir>/catalog.yaml` plus the schema files it names.
 * Spec: DESIGN "The model is the schema registry".
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../core/errors.js';
import { regularFileState } from '../core/regular-file.js';
import { parseCatalog } from './parse.js';
import type { SchemaReader } from './parse.js';
import type { Catalog } from './types.js';

/** The catalog file's name inside a catalog directory. */
export const CATALOG_FILE = 'catalog.yaml';

/**
 * The package's own `schemas/` directory. This module sits two levels under the package root
 * both as src/catalog/load.ts and as dist/catalog/load.js, so the path holds in both.
 */
export function defaultCatalogDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'schemas');
}

/**
 * A file of the catalog directory `root` by its relative path: its text; undefined when nothing is
 * there; `{ problem }` when what is there is no regular file — a FIFO (reading it would wait for a
 * writer for ever: `schemas check` hung), a link loop or a link this process may not follow (read
 * as "not found" before), a dangling link, a directory. Checked before it is opened (stat only).
 * Errors: those of reading a regular file (EACCES on the file itself) are thrown.
 */
export function readCatalogFile(root: string, relative: string): ReturnType<SchemaReader> {
  const path = join(root, relative);
  const state = regularFileState(path);
  if (state === 'missing') return undefined;
  if (state === 'directory') return { problem: 'a directory, not a file' };
  if (state !== 'file') return state;
  return readFileSync(path, 'utf8');
}

/**
 * Loads and validates the catalog in `dir` (default: {@link defaultCatalogDir}; the app passes
 * env CATALOG_DIR here). Synchronous: it runs once at startup.
 * Errors: GatewayError CEG_CATALOG_INVALID (retriable: false) with `details.problems`, also when
 *   `dir/catalog.yaml` is missing or no regular file (a FIFO, a link loop: the problem names it),
 *   and when a schema file is (problem at `kinds[i].schema` naming the file; {@link readCatalogFile}).
 */
export function loadCatalog(dir: string = defaultCatalogDir()): Catalog {
  const root = resolve(dir);
  const text = readCatalogFile(root, CATALOG_FILE);
  if (text === undefined) {
    throw new GatewayError('CEG_CATALOG_INVALID', `no ${CATALOG_FILE} in ${root}`, {
      retriable: false,
      details: { dir: root, problems: [{ path: CATALOG_FILE, problem: 'file not found' }] },
    });
  }
  if (typeof text !== 'string') {
    throw new GatewayError('CEG_CATALOG_INVALID', `${join(root, CATALOG_FILE)}: ${text.problem}`, {
      retriable: false,
      details: { dir: root, problems: [{ path: CATALOG_FILE, problem: text.problem }] },
    });
  }
  return parseCatalog(text, (relative) => readCatalogFile(root, relative), root);
}
