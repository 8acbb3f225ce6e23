/**
 * Where `ce-gateway catalog generate` reads and writes, and which catalog `catalog export` reads.
 * The catalog: `--catalog`, else CATALOG_DIR, else `<cwd>/schemas` when it holds a catalog.yaml,
 * else the package's own (the order `schemas check` uses: {@link resolveCatalogDir}). `--out`
 * defaults to `<cwd>/src/catalog/generated` (in this repository's root both are the package's own). Output never goes into `node_modules`: an
 * installed package is not a place to write, and its copy is replaced on the next install.
 * Spec: bus spec X1 (code generated from the model, checked for staleness in CI).
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../../core/errors.js';
import { CATALOG_FILE, defaultCatalogDir } from '../../catalog/index.js';
import type { GenerateTarget } from './kinds-module.js';

/** Resolved folders and the target of one `catalog generate` run. */
export interface GeneratePaths {
  /** Absolute catalog directory (holds catalog.yaml). */
  readonly catalogDir: string;
  /** Absolute output directory. */
  readonly outDir: string;
  /** `package` only for this package's own source folder; see {@link GenerateTarget}. */
  readonly target: GenerateTarget;
}

/** Default `--catalog`, relative to the working directory. */
export const DEFAULT_CATALOG_SUBDIR = 'schemas';
/** Default `--out`, relative to the working directory. */
export const DEFAULT_OUT_SUBDIR = join('src', 'catalog', 'generated');

/**
 * The catalog folder the `catalog generate` and `catalog export` commands read (absolute), by one
 * rule, the one `schemas check` follows: `option` (`--catalog`), else `configured` (CATALOG_DIR),
 * both relative to `cwd`; else `<cwd>/schemas` when it holds a catalog.yaml; else the package's
 * own catalog ({@link defaultCatalogDir}). Whether the chosen folder holds a catalog is not checked
 * here. Pure apart from one existence check.
 */
export function resolveCatalogDir(option: string | undefined, configured: string | undefined, cwd: string): string {
  if (option !== undefined) return resolve(cwd, option);
  if (configured !== undefined) return resolve(cwd, configured);
  const local = resolve(cwd, DEFAULT_CATALOG_SUBDIR);
  return existsSync(join(local, CATALOG_FILE)) ? local : defaultCatalogDir();
}

/**
 * This package's own `src/catalog/generated/` (exists only in a source checkout). This module sits
 * three levels under the package root both as src/artifacts/generate/paths.ts and as
 * dist/artifacts/generate/paths.js.
 */
export function defaultGeneratedDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src', 'catalog', 'generated');
}

/**
 * Where `dir` really is: the real path (symbolic links followed) of its nearest existing ancestor,
 * with the part that does not exist yet appended, so a link anywhere on the way counts.
 */
function realLocation(dir: string): string {
  const rest: string[] = [];
  let at = dir;
  for (;;) {
    try {
      return join(realpathSync(at), ...rest.reverse());
    } catch {
      const up = dirname(at);
      if (up === at) return dir;
      rest.push(basename(at));
      at = up;
    }
  }
}

/**
 * Resolves `--catalog` (with `configuredCatalogDir`, CATALOG_DIR: see {@link resolveCatalogDir})
 * and `--out` against `cwd` and picks the target. The node_modules rule is checked on the path as
 * written and on where it leads (a symbolic link into node_modules).
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false), `details.field` naming the option
 *   (`out`, `catalog`, or `CATALOG_DIR`), when the output folder is inside a `node_modules` folder,
 *   or when the chosen catalog folder has no catalog.yaml (the message says to pass `--catalog`).
 */
export function resolveGeneratePaths(opts: { readonly catalog?: string; readonly out?: string }, cwd: string, configuredCatalogDir?: string): GeneratePaths {
  const catalogDir = resolveCatalogDir(opts.catalog, configuredCatalogDir, cwd);
  const outDir = resolve(cwd, opts.out ?? DEFAULT_OUT_SUBDIR);
  const real = realLocation(outDir);
  if (outDir.split(sep).includes('node_modules') || real.split(sep).includes('node_modules')) {
    const where = real === outDir ? outDir : `${outDir} (through a symbolic link: ${real})`;
    throw new GatewayError('CEG_INVALID_OPTIONS', `--out ${where} is inside node_modules: generate into your own project (e.g. --out src/catalog/generated)`, {
      retriable: false,
      details: { field: 'out', dir: outDir },
    });
  }
  if (!existsSync(join(catalogDir, CATALOG_FILE))) {
    const fromEnv = opts.catalog === undefined && configuredCatalogDir !== undefined;
    throw new GatewayError(
      'CEG_INVALID_OPTIONS',
      `no catalog.yaml in ${catalogDir}${fromEnv ? ' (CATALOG_DIR)' : ''}: pass --catalog DIR (your catalog folder; the package's own is node_modules/ce-gateway/schemas)`,
      { retriable: false, details: { field: fromEnv ? 'CATALOG_DIR' : 'catalog', dir: catalogDir } },
    );
  }
  return { catalogDir, outDir, target: outDir === defaultGeneratedDir() ? 'package' : 'consumer' };
}
