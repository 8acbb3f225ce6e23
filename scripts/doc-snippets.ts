/**
 * The TypeScript code blocks of the documentation that claim to work. Every ```ts block in
 * README.md, docs/*.md and connectors/README.md follows a marker comment saying what it is:
 *
 *   <!-- snippet: run NAME -->         executed in CI (a whole program)
 *   <!-- snippet: compile NAME -->     type-checked in CI (needs services it does not start)
 *   <!-- snippet: illustration -->     a fragment, checked by nothing (say so in the text)
 *
 * test/unit/docs/snippets.test.ts compiles and runs them against this package's source;
 * scripts/check-package.sh compiles and runs them in a fresh project that installed the packed
 * package. CLI: `tsx scripts/doc-snippets.ts write DIR` writes each checked snippet as DIR/NAME.ts
 * and prints one `MODE NAME` line per snippet.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

export type SnippetMode = 'run' | 'compile';

export interface Snippet {
  /** Path relative to the repository root. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly mode: SnippetMode;
  /** [a-z0-9-]; the file name the snippet is written to. */
  readonly name: string;
  readonly code: string;
}

const MARKER = /^<!--\s*snippet:\s*(?:(run|compile)\s+([a-z0-9-]+)|(illustration))\s*-->\s*$/;
const TS_FENCE = /^```(ts|typescript)\s*$/;

/** The documentation files whose ```ts blocks must be marked, relative to `root`. */
export function documentationFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join('docs', f));
  return ['README.md', ...docs, join('connectors', 'README.md')];
}

/**
 * Every checked snippet of the documentation under `root`, in file order.
 * Errors: Error listing every problem — a ```ts block without a marker, a marker not followed by
 *   a ```ts block, an unclosed block, a name used twice.
 */
export function extractSnippets(root: string): Snippet[] {
  const out: Snippet[] = [];
  const problems: string[] = [];
  const names = new Map<string, string>();
  for (const file of documentationFiles(root)) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    let pending: { mode: SnippetMode | 'illustration'; name: string; line: number } | undefined;
    for (let i = 0; i < lines.length; i++) {
      const text = lines[i]!;
      const m = MARKER.exec(text);
      if (m !== null) {
        pending = { mode: (m[1] ?? m[3]) as SnippetMode | 'illustration', name: m[2] ?? '', line: i + 1 };
        continue;
      }
      if (TS_FENCE.test(text)) {
        const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
        if (end < 0) {
          problems.push(`${file}:${i + 1}: the block is not closed`);
          break;
        }
        if (pending === undefined || pending.line !== i) problems.push(`${file}:${i + 1}: a ts block without a <!-- snippet: … --> marker on the line before`);
        else if (pending.mode !== 'illustration') {
          const where = `${file}:${i + 1}`;
          const first = names.get(pending.name);
          if (first !== undefined) problems.push(`${where}: snippet name ${pending.name} is already used at ${first}`);
          names.set(pending.name, where);
          out.push({ file, line: i + 1, mode: pending.mode, name: pending.name, code: `${lines.slice(i + 1, end).join('\n')}\n` });
        }
        pending = undefined;
        i = end;
        continue;
      }
      if (pending !== undefined && text.trim() !== '') {
        problems.push(`${file}:${pending.line}: a snippet marker not followed by a ts block`);
        pending = undefined;
      }
    }
    if (pending !== undefined) problems.push(`${file}:${pending.line}: a snippet marker not followed by a ts block`);
  }
  if (problems.length > 0) throw new Error(`documentation snippets: ${problems.join('; ')}`);
  return out;
}

/** Writes each snippet as `dir/NAME.ts`; returns the paths. */
export function writeSnippets(dir: string, snippets: readonly Snippet[]): string[] {
  mkdirSync(dir, { recursive: true });
  return snippets.map((s) => {
    const path = join(dir, `${s.name}.ts`);
    writeFileSync(path, `// ${s.file}:${s.line} (snippet: ${s.mode})\n${s.code}`);
    return path;
  });
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const [command, dir] = process.argv.slice(2);
  if (command !== 'write' || dir === undefined) {
    process.stderr.write('usage: tsx scripts/doc-snippets.ts write DIR\n');
    process.exit(2);
  }
  const root = resolve(import.meta.dirname, '..');
  const snippets = extractSnippets(root);
  writeSnippets(resolve(dir), snippets);
  for (const s of snippets) process.stdout.write(`${s.mode} ${s.name}\n`);
  process.stderr.write(`${snippets.length} snippet(s) from ${relative(process.cwd(), root) || '.'} written to ${dir}\n`);
}
