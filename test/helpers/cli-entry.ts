/**
 * The node arguments that run the `ce-gateway` CLI in a child process: the compiled
 * `dist/cli/main.js` when dist is up to date with src, otherwise `src/cli/main.ts` through tsx.
 *
 * Why: about fifty test files start the CLI, several hundred times per run; tsx's loader costs
 * each start about a second of CPU on a 2-core CI machine (`node --import tsx src/cli/main.ts
 * --help`: 1.8 s user; `node dist/cli/main.js --help`: 0.9 s), which kept the whole suite above
 * its 30-minute budget. The CI builds before it tests, so there dist is always current; locally
 * a src file edited since the last build makes every child run the source through tsx, so a test
 * never runs stale code. `CE_GATEWAY_TEST_CLI=tsx` or `=dist` forces one or the other.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');

/** tsx's loader by absolute URL: `--import tsx` resolves the package from the child's cwd, which tests set to temporary folders. */
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

/** The first src file whose compiled form is missing or older than it, or undefined when dist is up to date. */
export function staleDistFile(src = SRC, dist = DIST): string | undefined {
  const walk = (dir: string): string | undefined => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        const stale = walk(path);
        if (stale !== undefined) return stale;
        continue;
      }
      if (!entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      const compiled = join(dist, relative(src, path)).replace(/\.ts$/, '.js');
      let compiledMs: number;
      try {
        compiledMs = statSync(compiled).mtimeMs;
      } catch {
        return path;
      }
      if (statSync(path).mtimeMs > compiledMs) return path;
    }
    return undefined;
  };
  return walk(src);
}

function useDist(): boolean {
  const forced = process.env.CE_GATEWAY_TEST_CLI;
  return forced === 'dist' || (forced !== 'tsx' && staleDistFile() === undefined);
}

/**
 * Whether child processes run the compiled dist (true) or src through tsx (false): the choice
 * CLI_ENTRY made, for helpers that start the gateway another way (`startGatewayProcess`'s `preferTsx`
 * is its negation). Decided once per test worker.
 */
export const CLI_FROM_DIST: boolean = useDist();

/** `node ...CLI_ENTRY <command> …` runs the CLI (absolute paths: any cwd). Decided once per test worker. */
export const CLI_ENTRY: readonly string[] = Object.freeze(CLI_FROM_DIST ? [join(DIST, 'cli', 'main.js')] : ['--import', TSX_LOADER, join(SRC, 'cli', 'main.ts')]);
