/**
 * Earlier versions of each kind's schema from git history, up to a base revision. A kind is
 * followed by its eventId through catalog.yaml at every commit that changed the catalog directory:
 * the version at a commit is the file that catalog.yaml named for the kind then, so a schema file
 * that was moved or renamed (and catalog.yaml updated) keeps its history. Files are read as blobs
 * (`git cat-file`), so any file name works (no core.quotePath quoting).
 * A missing or shallow history is an error, never an empty (passing) history.
 * Spec: git-log(1), git-cat-file(1) `--batch-check` with `<rev>:<path>` names,
 * git-rev-parse(1) `--is-shallow-repository`; DESIGN "The model is the schema registry" (a kind is
 * identified by its eventId).
 */
import { execFile, spawn } from 'node:child_process';
import { posix, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { GatewayError } from '../core/errors.js';
import { looseKinds } from '../catalog/index.js';
import type { EventKind } from '../catalog/index.js';
import type { HistoricVersion, SchemaHistory } from './types.js';

const run = promisify(execFile);

/** Options of {@link createGitHistory}. */
export interface GitHistoryOptions {
  /** The catalog directory (inside a git work tree). */
  readonly catalogDir: string;
  /** History up to this revision (default `HEAD`); e.g. `HEAD~1` or `origin/main`. */
  readonly base?: string;
  /**
   * Accepted state: a revision (an ancestor of `base`, e.g. a tag set when a breaking change was
   * accepted) whose schema versions are the oldest compared. Versions committed before it are
   * left out, so a break accepted at or before it stops failing the check; changes after it are
   * checked as usual. Default: none (the whole history).
   */
  readonly baseline?: string;
}

function historyError(message: string, details: Record<string, unknown>, cause?: unknown): GatewayError {
  return new GatewayError('CEG_INVALID_OPTIONS', message, { retriable: false, details, ...(cause === undefined ? {} : { cause }) });
}

async function git(cwd: string, args: readonly string[]): Promise<string> {
  const { stdout } = await run('git', [...args], { cwd, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' });
  return stdout;
}

/** Runs git with `input` on stdin; resolves stdout (exit 0), rejects with `{ code, stderr }` otherwise. */
function gitWithInput(cwd: string, args: readonly string[], input: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('git', [...args], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise(Buffer.concat(out).toString('utf8'));
      else reject(Object.assign(new Error(`git ${args.join(' ')} exited with ${String(code)}`), { code, stderr: Buffer.concat(err).toString('utf8') }));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/** eventId → schema path (relative to the catalog directory) in one catalog.yaml text; undefined when it is not YAML with a kinds list. */
function schemaPathsOf(yamlText: string): Map<string, string> | undefined {
  const kinds = looseKinds(yamlText);
  if (kinds === undefined) return undefined;
  const out = new Map<string, string>();
  for (const { eventId, schema } of kinds) {
    if (eventId !== undefined && schema !== undefined) out.set(eventId, posix.normalize(schema));
  }
  return out;
}

function stderrOf(err: unknown): string {
  const e = err as { stderr?: unknown; message?: unknown };
  const text = typeof e.stderr === 'string' && e.stderr.trim() !== '' ? e.stderr : String(e.message ?? err);
  return text.trim().split('\n')[0] ?? '';
}

/**
 * A {@link SchemaHistory} over git. Checks once, on first use, that `catalogDir` is in a git work
 * tree, that the clone is not shallow and that `base` names a commit.
 * Errors (from `versions`): GatewayError CEG_INVALID_OPTIONS (retriable: false) when git is
 *   missing, the directory is not in a repository, the repository has no commits or is a shallow
 *   clone, or `base` is unknown — a missing history is never taken as "no earlier versions".
 */
export function createGitHistory(options: GitHistoryOptions): SchemaHistory {
  const catalogDir = resolve(options.catalogDir);
  const base = options.base ?? 'HEAD';
  const baseline = options.baseline;
  let ready: Promise<{ top: string; commit: string; baselineCommit?: string }> | undefined;

  const commitOf = async (top: string, rev: string, what: string): Promise<string> => {
    try {
      return (await git(top, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`])).trim();
    } catch (err) {
      throw historyError(`git revision "${rev}" (${what}) is not a commit in ${top}${rev === 'HEAD' ? ' (the repository has no commits yet)' : ''}`, { repository: top, [what]: rev }, err);
    }
  };

  /** true when `ancestor` is `descendant` or one of its ancestors. */
  const isAncestor = async (top: string, ancestor: string, descendant: string): Promise<boolean> => {
    try {
      await git(top, ['merge-base', '--is-ancestor', ancestor, descendant]);
      return true;
    } catch (err) {
      if ((err as { code?: unknown }).code === 1) return false;
      throw historyError(`git merge-base failed: ${stderrOf(err)}`, { repository: top }, err);
    }
  };

  const prepare = async (): Promise<{ top: string; commit: string; baselineCommit?: string }> => {
    let top: string;
    try {
      top = (await git(catalogDir, ['rev-parse', '--show-toplevel'])).trim();
    } catch (err) {
      throw historyError(`no git history for ${catalogDir}: ${stderrOf(err)}; run the check in a git clone, or use --registry`, { catalogDir }, err);
    }
    const shallow = (await git(top, ['rev-parse', '--is-shallow-repository'])).trim();
    if (shallow === 'true') {
      throw historyError(
        `the git clone at ${top} is shallow, so earlier schema versions may be missing; fetch the whole history (git fetch --unshallow, or fetch-depth: 0 in CI)`,
        { repository: top },
      );
    }
    const commit = await commitOf(top, base, 'base');
    if (baseline === undefined) return { top, commit };
    const baselineCommit = await commitOf(top, baseline, 'baseline');
    if (!(await isAncestor(top, baselineCommit, commit))) {
      throw historyError(`baseline "${baseline}" is not an ancestor of "${base}" in ${top}`, { repository: top, baseline, base });
    }
    return { top, commit, baselineCommit };
  };

  let commits: Promise<readonly string[]> | undefined;
  let catalogs: Promise<readonly (Map<string, string> | undefined)[]> | undefined;

  /**
   * Commits that changed the catalog directory, newest first, up to `commit`; with a baseline,
   * those after it and then the baseline itself (the state in effect at the baseline).
   */
  const listCommits = async (top: string, dirRel: string, commit: string, baselineCommit: string | undefined): Promise<readonly string[]> => {
    const range = baselineCommit === undefined ? commit : `${baselineCommit}..${commit}`;
    let log: string;
    try {
      log = await git(top, ['log', '--format=%H', range, '--', dirRel]);
    } catch (err) {
      throw historyError(`git log of ${dirRel} failed: ${stderrOf(err)}`, { repository: top, path: dirRel }, err);
    }
    const list = log.split('\n').map((l) => l.trim()).filter((l) => l !== '');
    return baselineCommit === undefined ? list : [...list, baselineCommit];
  };

  /** The blob id of each `<rev>:<path>` name (undefined for undefined names and missing files). */
  const blobIds = async (top: string, names: readonly (string | undefined)[]): Promise<(string | undefined)[]> => {
    const asked = names.filter((n): n is string => n !== undefined);
    if (asked.some((n) => n.includes('\n'))) throw historyError('a schema path holds a line break; git cat-file cannot read it', { repository: top });
    let text = '';
    if (asked.length > 0) {
      try {
        text = await gitWithInput(top, ['cat-file', '--batch-check=%(objectname) %(objecttype)'], `${asked.join('\n')}\n`);
      } catch (err) {
        throw historyError(`git cat-file failed: ${stderrOf(err)}`, { repository: top }, err);
      }
    }
    const lines = text.split('\n');
    let j = 0;
    return names.map((n) => {
      if (n === undefined) return undefined;
      const line = lines[j++] ?? '';
      const m = /^([0-9a-f]{40,64}) blob$/.exec(line);
      return m === null ? undefined : m[1];
    });
  };

  /** The parsed catalog.yaml (eventId → schema path) at each of `revs`; undefined where missing or unreadable. */
  const catalogsAt = async (top: string, revs: readonly string[], catalogPath: string): Promise<readonly (Map<string, string> | undefined)[]> => {
    const oids = await blobIds(top, revs.map((r) => `${r}:${catalogPath}`));
    const parsed = new Map<string, Map<string, string> | undefined>();
    for (const oid of oids) {
      if (oid === undefined || parsed.has(oid)) continue;
      try {
        parsed.set(oid, schemaPathsOf(await git(top, ['cat-file', 'blob', oid])));
      } catch (err) {
        throw historyError(`git cat-file of ${catalogPath} failed: ${stderrOf(err)}`, { repository: top, path: catalogPath }, err);
      }
    }
    return oids.map((oid) => (oid === undefined ? undefined : parsed.get(oid)));
  };

  return {
    source: 'git',
    description: `git history of ${catalogDir} up to ${base}${baseline === undefined ? '' : `, from baseline ${baseline}`}`,
    async versions(kind: EventKind): Promise<readonly HistoricVersion[]> {
      ready ??= prepare();
      const { top, commit, baselineCommit } = await ready;
      const dirRel = relative(top, catalogDir).split('\\').join('/');
      const inDir = (file: string): string => (dirRel === '' ? file : `${dirRel}/${file}`);
      commits ??= listCommits(top, dirRel === '' ? '.' : dirRel, commit, baselineCommit);
      const revs = await commits;
      catalogs ??= catalogsAt(top, revs, inDir('catalog.yaml'));
      const cats = await catalogs;
      // The kind's schema path at each commit, by its eventId in catalog.yaml then. When that
      // catalog is missing or unreadable, or does not list the kind while no other kind claims
      // the current path, the current path (so that no version is lost).
      const current = posix.normalize(kind.schemaFile);
      const paths = revs.map((_, i) => {
        const cat = cats[i];
        const named = cat?.get(kind.eventId);
        if (named !== undefined) return named;
        if (cat !== undefined && [...cat.values()].includes(current)) return undefined;
        return current;
      });
      const names = revs.map((rev, i) => (paths[i] === undefined ? undefined : `${rev}:${inDir(paths[i])}`));
      const oids = await blobIds(top, names);
      // Newest first → oldest first; a version is a blob, labelled with the first commit that has it.
      const entries: { hash: string; oid: string; path: string }[] = [];
      for (let i = revs.length - 1; i >= 0; i--) {
        const oid = oids[i];
        if (oid === undefined) continue;
        if (entries.at(-1)?.oid === oid) continue;
        entries.push({ hash: revs[i] as string, oid, path: paths[i] as string });
      }
      const out: HistoricVersion[] = [];
      for (const e of entries) {
        let schema: string;
        try {
          schema = await git(top, ['cat-file', 'blob', e.oid]);
        } catch (err) {
          throw historyError(`git cat-file of ${e.hash.slice(0, 7)}:${inDir(e.path)} failed: ${stderrOf(err)}`, { repository: top, path: inDir(e.path) }, err);
        }
        out.push(Object.freeze({ version: out.length + 1, label: `commit ${e.hash.slice(0, 7)}`, schema }));
      }
      return Object.freeze(out);
    },
  };
}
