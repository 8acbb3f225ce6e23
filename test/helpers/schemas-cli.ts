/**
 * `ce-gateway schemas …` as a process, and git, for the tests that run the check on temporary
 * repositories (test/unit/schemas-check/git-cli.test.ts, test/integration/schemas-cli.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runProcess } from './spawn-node.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ENTRY = join(ROOT, 'test', 'fixtures', 'schemas-cli-entry.ts');
/** tsx's loader by absolute URL: the CLI runs in temporary directories, where `--import tsx` would not resolve. */
const TSX = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * `ce-gateway schemas <args>` in `cwd`, without the registry, catalog and env-file settings of this
 * process. Asynchronous (./spawn-node.ts says why); `git` below is quick and stays synchronous.
 */
export async function schemasCli(cwd: string, args: readonly string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
  delete env.SCHEMA_REGISTRY_URL;
  delete env.CATALOG_DIR;
  delete env.CE_GATEWAY_ENV_FILE;
  const r = await runProcess(process.execPath, ['--import', TSX, ENTRY, 'schemas', ...args], { cwd, env, timeoutMs: 60_000 });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

/** `git <args>` in `cwd` with a fixed author, its output. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.org', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.org' } });
}
