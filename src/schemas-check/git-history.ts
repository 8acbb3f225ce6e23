/**
 * Earlier versions of schema files from git history: every commit that changed the file
 * (`git log --follow`, so renames are followed) up to a base revision, read with `git show`.
 * A missing or shallow history is an error, never an empty (passing) history.
 * Spec: git-log(1) `--follow`, git-rev-parse(1) `--is-shallow-repository`, git-show(1) `<rev>:<path>`.
 */
import { execFile } from 'node:child_process';
import { relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { GatewayError } from '../core/errors.js';
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

  return {
    source: 'git',
    description: `git history of ${catalogDir} up to ${base}${baseline === undefined ? '' : `, from baseline ${baseline}`}`,
    async versions(kind: EventKind): Promise<readonly HistoricVersion[]> {
      ready ??= prepare();
      const { top, commit, baselineCommit } = await ready;
      const path = relative(top, resolve(catalogDir, kind.schemaFile)).split('\\').join('/');
      let log: string;
      try {
        log = await git(top, ['log', '--follow', '--format=%x00%H', '--name-only', '--diff-filter=AMRC', commit, '--', path]);
      } catch (err) {
        throw historyError(`git log of ${path} failed: ${stderrOf(err)}`, { repository: top, path }, err);
      }
      // Newest first: "\0<hash>\n\n<path at that commit>\n" per commit.
      const entries: { hash: string; path: string }[] = [];
      for (const chunk of log.split('\0').slice(1)) {
        const [hash, ...rest] = chunk.split('\n').map((l) => l.trim()).filter((l) => l !== '');
        if (hash !== undefined) entries.push({ hash, path: rest[0] ?? path });
      }
      if (baselineCommit !== undefined) {
        // Keep the version in effect at the baseline (the newest commit at or before it) and later ones.
        let keep = entries.length;
        for (let i = 0; i < entries.length; i++) {
          if (await isAncestor(top, entries[i]!.hash, baselineCommit)) {
            keep = i + 1;
            break;
          }
        }
        entries.splice(keep);
      }
      entries.reverse();
      const out: HistoricVersion[] = [];
      for (const e of entries) {
        let schema: string;
        try {
          schema = await git(top, ['show', `${e.hash}:${e.path}`]);
        } catch (err) {
          throw historyError(`git show ${e.hash.slice(0, 7)}:${e.path} failed: ${stderrOf(err)}`, { repository: top, path: e.path }, err);
        }
        out.push(Object.freeze({ version: out.length + 1, label: `commit ${e.hash.slice(0, 7)}`, schema }));
      }
      return Object.freeze(out);
    },
  };
}
