/**
 * Loads the catalog from a directory: `<dir>/catalog.yaml` plus the schema files it names.
 * Spec: DESIGN "The model is the schema registry".
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../core/errors.js';
import { parseCatalog } from './parse.js';
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
 * Loads and validates the catalog in `dir` (default: {@link defaultCatalogDir}; the app passes
 * env CATALOG_DIR here). Synchronous: it runs once at startup.
 * Errors: GatewayError CEG_CATALOG_INVALID (retriable: false) with `details.problems`, also when
 *   `dir/catalog.yaml` is missing.
 */
export function loadCatalog(dir: string = defaultCatalogDir()): Catalog {
  const root = resolve(dir);
  const file = join(root, CATALOG_FILE);
  if (!existsSync(file)) {
    throw new GatewayError('CEG_CATALOG_INVALID', `no ${CATALOG_FILE} in ${root}`, {
      retriable: false,
      details: { dir: root, problems: [{ path: CATALOG_FILE, problem: 'file not found' }] },
    });
  }
  const readSchema = (relative: string): string | undefined => {
    const path = join(root, relative);
    return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  };
  return parseCatalog(readFileSync(file, 'utf8'), readSchema, root);
}
