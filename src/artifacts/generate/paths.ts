/**
 * Where `ce-gateway catalog generate` reads and writes. Both folders are the caller's project's:
 * `--catalog` defaults to `<cwd>/schemas`, `--out` to `<cwd>/src/catalog/generated` (in this
 * repository's root those are the package's own). Output never goes into `node_modules`: an
 * installed package is not a place to write, and its copy is replaced on the next install.
 * Spec: bus spec X1 (code generated from the model, checked for staleness in CI).
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../../core/errors.js';
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
 * Resolves `--catalog` and `--out` against `cwd` and picks the target. The node_modules rule is
 * checked on the path as written and on where it leads (a symbolic link into node_modules).
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false), `details.field` naming the option,
 *   when the output folder is inside a `node_modules` folder, or when the catalog folder has no
 *   catalog.yaml (the message says to pass `--catalog`).
 */
export function resolveGeneratePaths(opts: { readonly catalog?: string; readonly out?: string }, cwd: string): GeneratePaths {
  const catalogDir = resolve(cwd, opts.catalog ?? DEFAULT_CATALOG_SUBDIR);
  const outDir = resolve(cwd, opts.out ?? DEFAULT_OUT_SUBDIR);
  const real = realLocation(outDir);
  if (outDir.split(sep).includes('node_modules') || real.split(sep).includes('node_modules')) {
    const where = real === outDir ? outDir : `${outDir} (through a symbolic link: ${real})`;
    throw new GatewayError('CEG_INVALID_OPTIONS', `--out ${where} is inside node_modules: generate into your own project (e.g. --out src/catalog/generated)`, {
      retriable: false,
      details: { field: 'out', dir: outDir },
    });
  }
  if (!existsSync(join(catalogDir, 'catalog.yaml'))) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `no catalog.yaml in ${catalogDir}: pass --catalog DIR (your catalog folder; the package's own is node_modules/ce-gateway/schemas)`, {
      retriable: false,
      details: { field: 'catalog', dir: catalogDir },
    });
  }
  return { catalogDir, outDir, target: outDir === defaultGeneratedDir() ? 'package' : 'consumer' };
}
