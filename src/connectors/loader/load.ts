/**
 * Loads the connector files of a directory: every `*.yaml` / `*.yml` directly in it (not in
 * sub-folders, so `connectors/examples/` is never loaded by pointing at `connectors/`), in name
 * order. All files are checked before anything starts, and every problem of every file is
 * reported at once.
 * Spec: DESIGN "Connectors"; bus spec S1 (one subscription name, one durable consumer).
 */
import { accessSync, constants, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { topicSpelling } from '../names.js';
import { GatewayError } from '../../core/errors.js';
import { regularFileState } from '../../core/regular-file.js';
import type { Catalog } from '../../catalog/index.js';
import { parseConnectorText } from './parse.js';
import type { ParseContext, ResolvedSink } from './parse.js';
import type { ConnectorDefinition, ConnectorProblem } from './types.js';

const CONNECTOR_FILE = /^[A-Za-z0-9][A-Za-z0-9._-]*\.ya?ml$/;
/** A name that looks meant as a connector file (any case of the extension): not matching CONNECTOR_FILE is reported, never skipped silently. */
const YAML_LIKE = /\.ya?ml$/i;

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** What {@link loadConnectors} checks against besides the files. */
export interface LoadContext extends ParseContext {
  /** When given, every kind an enabled connector names must be in it (else a problem naming the file). */
  readonly catalog?: Pick<Catalog, 'byName' | 'byEventId' | 'kinds'>;
}

/** Problems only the file system can show: a missing or non-executable script, a missing folder. */
function fileSystemProblems(file: string, d: ResolvedSink, prefix = ''): ConnectorProblem[] {
  const out: ConnectorProblem[] = [];
  const at = (path: string, problem: string): void => void out.push({ file, path: `${prefix}${path}`, problem });
  if (d.kind === 'shell-hook') {
    const file = d.sink.command[0]!;
    if (isAbsolute(file)) {
      if (!isExecutableFile(file)) at('sink.command[0]', `${file} is not an executable file`);
    } else if (!d.sink.env.path.split(':').some((dir) => isExecutableFile(join(dir, file)))) {
      at('sink.command[0]', `${file} is not an executable on the hook's PATH (${d.sink.env.path})`);
    }
    if (!isDirectory(d.sink.cwd)) at('sink.workingDirectory', `${d.sink.cwd} is not a directory`);
  } else if (!isDirectory(d.sink.directory)) {
    if (!d.sink.createDirectories) at('sink.directory', `${d.sink.directory} is not a directory (and createDirectories is false)`);
    else {
      const problem = creatableProblem(d.sink.directory);
      if (problem !== undefined) at('sink.directory', problem);
    }
  }
  return out;
}

/**
 * Why `dir` (missing) cannot be created by this process, else undefined: its nearest existing
 * ancestor must be a directory this process may write into and enter (an immutable folder, one of
 * another user, or a file in the way would fail the first event instead of the check).
 */
function creatableProblem(dir: string): string | undefined {
  let parent = dirname(dir);
  while (!existsSync(parent) && dirname(parent) !== parent) parent = dirname(parent);
  if (!isDirectory(parent)) return `${dir} cannot be created: ${parent} is not a directory`;
  try {
    accessSync(parent, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (err) {
    return `${dir} cannot be created: ${parent} is not writable by this process (${(err as NodeJS.ErrnoException).code ?? 'denied'})`;
  }
}

/** File-system problems of a connector's host sink (a subscription file's `delivery.sink` too; push has none). */
function hostSinkProblems(file: string, d: ConnectorDefinition): ConnectorProblem[] {
  if (d.kind !== 'subscription') return fileSystemProblems(file, d);
  const delivery = d.runtime.delivery;
  if (delivery.mode === 'shell-hook') return fileSystemProblems(file, { kind: 'shell-hook', sink: delivery.sink, enabled: true }, 'delivery.');
  if (delivery.mode === 'file-drop') return fileSystemProblems(file, { kind: 'file-drop', sink: delivery.sink, enabled: true }, 'delivery.');
  return [];
}

/** Kinds the catalog does not have, each as a problem at `kinds[i]` listing the known names. */
function kindProblems(file: string, kinds: readonly (readonly [index: number, kind: string])[], catalog: NonNullable<LoadContext['catalog']>): ConnectorProblem[] {
  return kinds.flatMap(([i, k]) =>
    catalog.byName(k) ?? catalog.byEventId(k)
      ? []
      : [{ file, path: `kinds[${i}]`, problem: `unknown event kind "${k}"; the catalog has ${catalog.kinds.map((c) => c.name).join(', ')} (business name or eventId)` }],
  );
}

function invalid(dir: string, problems: readonly ConnectorProblem[]): GatewayError {
  const list = problems.map((p) => `${p.file}: ${p.path}: ${p.problem}`).join('; ');
  return new GatewayError('CEG_INVALID_OPTIONS', `connectors in ${dir} are invalid (${problems.length} problem(s)): ${list}`, {
    retriable: false,
    details: { dir, problems },
  });
}

/**
 * What `serve` and `config check` say about a `CONNECTORS_DIR` with no connector file directly in
 * it: valid (nothing starts), but rarely meant, so the warning names the sub-folders that hold
 * `*.yaml` / `*.yml` files (`subs`, from connectorFilesInSubfolders) and the command that checks
 * one. Without such sub-folders it still says the folder is empty of connectors: `serve` pointed at
 * `connectors/` started nothing without a word (the examples are one level down).
 * Source: `ce-gateway serve`, `ce-gateway config check`; spec DESIGN "Connectors".
 */
export function noConnectorFilesWarning(dir: string, subs: readonly { readonly folder: string; readonly files: number }[]): string {
  const head = `CONNECTORS_DIR ${dir} has no connector files (*.yaml / *.yml directly in it), so serve starts no connector from it`;
  if (subs.length === 0) return head;
  return `${head} (sub-folders are not read): ${subs.map((x) => `${x.folder} holds ${x.files}`).join(', ')}; check one with \`ce-gateway connectors check ${subs[0]?.folder ?? dir}\``;
}

/**
 * The sub-folders directly in `dir` that hold connector-like files (`*.yaml` / `*.yml`, any case)
 * directly in them, with their counts, in name order: what `connectors check` names when `dir`
 * itself has none, so a user pointing at `connectors/` learns that the examples are one level
 * down instead of reading "0 valid". One level only, like the loader, which never recurses.
 * Unreadable sub-folders are left out (this is a hint, never a check). Synchronous, bounded by one
 * `readdir` per sub-folder.
 * Source: `ce-gateway connectors check`; spec DESIGN "Connectors".
 */
export function connectorFilesInSubfolders(dir: string): { readonly folder: string; readonly files: number }[] {
  const root = resolve(dir);
  const out: { folder: string; files: number }[] = [];
  let entries;
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (!e.isDirectory()) continue;
    let files = 0;
    try {
      for (const f of readdirSync(join(root, e.name), { withFileTypes: true })) if (f.isFile() && YAML_LIKE.test(f.name)) files++;
    } catch {
      continue;
    }
    if (files > 0) out.push({ folder: join(dir, e.name), files });
  }
  return out;
}

/**
 * Loads and validates every connector file directly in `dir` (enabled or not), in file-name order.
 * Enabled connectors are also checked on the file system (script exists and is executable,
 * working directory exists, drop directory exists unless it may be created) — also when other
 * parts of their file are invalid — and, given `ctx.catalog`, their kinds against the catalog.
 * Subscription names must be unique across the files. Synchronous: it runs once at startup.
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false) when `dir` is not a directory or any
 *   file has a problem; `details.problems` lists every one as `{ file, path, problem }`.
 * Spec: DESIGN "Connectors".
 */
export function loadConnectors(dir: string, ctx: LoadContext = {}): ConnectorDefinition[] {
  const root = resolve(dir);
  if (!isDirectory(root)) throw invalid(root, [{ file: root, path: '(root)', problem: 'not a directory' }]);
  const problems: ConnectorProblem[] = [];
  const files: string[] = [];
  const byConnectorName = new Map<string, string>();
  for (const e of readdirSync(root, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    // Folders are never read (sub-folders, like connectors/examples); any other entry named like a
    // connector file is loaded or reported, a FIFO or a socket included.
    if (e.isDirectory() || !YAML_LIKE.test(e.name)) continue;
    const file = join(root, e.name);
    // Every file that looks like one is either loaded or reported: the docs promise every *.yaml / *.yml.
    if (!CONNECTOR_FILE.test(e.name)) {
      problems.push({ file, path: '(file)', problem: 'not loaded: a connector file is named [A-Za-z0-9][A-Za-z0-9._-]*.yaml or .yml (lowercase extension); rename it, or move it out of the folder' });
      continue;
    }
    // A link loop (ELOOP), a link into a folder this process may not enter (EACCES), a link to
    // nothing: this file's problem, not the end of the check (ELOOP threw out of loadConnectors, so
    // `connectors check` exited 2 with the bare error and `serve` did not start, the other files
    // unchecked). Reading a FIFO would wait for a writer for ever; a socket or a device is no file either.
    const state = regularFileState(file);
    if (state === 'directory') continue; // a folder named like a file, behind a link: not a connector file
    if (state === 'missing') {
      // Listed a moment ago: gone since (or a link to nothing the check could not tell apart).
      problems.push({ file, path: '(file)', problem: 'a symbolic link to nothing' });
      continue;
    }
    if (state !== 'file') {
      problems.push({ file, path: '(file)', problem: state.special === true ? `${state.problem}: a connector file is a regular file` : state.problem });
      continue;
    }
    // The connector's name is the file name without extension: a.yaml and a.yml would both be "a".
    const name = e.name.slice(0, -extname(e.name).length);
    const first = byConnectorName.get(name);
    if (first !== undefined) problems.push({ file, path: '(file)', problem: `connector name ${name} is also the name of ${first}` });
    else byConnectorName.set(name, file);
    files.push(file);
  }
  const defs: ConnectorDefinition[] = [];
  const bySubscription = new Map<string, string>();
  /** Subscriptions by their topics' spelling: Kafka refuses topics differing only in '.' against '_'. */
  const bySpelling = new Map<string, { readonly subscription: string; readonly file: string }>();
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      problems.push({ file, path: '(file)', problem: `cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}` });
      continue;
    }
    const r = parseConnectorText(text, file, ctx);
    const used = (subscription: string): void => {
      const first = bySubscription.get(subscription);
      if (first !== undefined) {
        problems.push({ file, path: 'subscription', problem: `subscription ${subscription} is already used by ${first}` });
        return;
      }
      bySubscription.set(subscription, file);
      const spelling = topicSpelling(subscription);
      const other = bySpelling.get(spelling);
      if (other !== undefined) problems.push({ file, path: 'subscription', problem: `subscription ${subscription} and ${other.subscription} (${other.file}) differ only in '.' against '_': Kafka treats those alike in topic names, so their topics (${subscription}.dlq) would collide` });
      else bySpelling.set(spelling, { subscription, file });
    };
    if (!r.ok) {
      // The file's other problems too, not only its schema's (every problem at once).
      problems.push(...r.problems);
      if (r.sink?.enabled === true) problems.push(...fileSystemProblems(file, r.sink));
      const s = r.salvaged;
      if (s?.subscription !== undefined) used(s.subscription);
      if (s?.enabled === true && s.kinds !== undefined && ctx.catalog !== undefined) problems.push(...kindProblems(file, s.kinds, ctx.catalog));
      continue;
    }
    const d = r.definition;
    used(d.subscription);
    if (d.enabled) problems.push(...hostSinkProblems(file, d), ...(ctx.catalog === undefined ? [] : kindProblems(file, d.kinds.map((k, i) => [i, k] as const), ctx.catalog)));
    defs.push(d);
  }
  if (problems.length > 0) throw invalid(root, problems);
  return defs;
}
