/**
 * Links between the documents lead somewhere: every relative link of README.md and docs/*.md names
 * a file of the repository, and a `#fragment` into a Markdown file names one of its headings (as
 * GitHub makes their anchors) or an explicit `<a id>`.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const documents = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's heading anchor: lowercase, punctuation other than `-` and `_` dropped, spaces as `-`; repeats get `-1`, `-2`… */
function anchorsOf(text: string): Set<string> {
  const prose = text.replace(/^```[\s\S]*?^```/gm, '');
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const [, id] of prose.matchAll(/<a (?:id|name)="([^"]+)"/g)) anchors.add(id!);
  return anchors;
}

const anchors = new Map<string, Set<string>>();
const anchorsFor = (file: string): Set<string> => {
  let a = anchors.get(file);
  if (a === undefined) anchors.set(file, (a = anchorsOf(readFileSync(join(ROOT, file), 'utf8'))));
  return a;
};

describe('links in the documentation', () => {
  it.each(documents.map((d) => [d]))('%s: relative links name existing files and headings', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // https:, mailto:…
      const [path, fragment] = target!.split('#') as [string, string | undefined];
      const file = path === '' ? doc : normalize(relative(ROOT, join(ROOT, dirname(doc), decodeURIComponent(path))));
      if (!existsSync(join(ROOT, file))) {
        broken.push(`${target!}: no file ${file}`);
        continue;
      }
      if (fragment !== undefined && file.endsWith('.md') && !anchorsFor(file).has(fragment)) broken.push(`${target!}: no heading #${fragment} in ${file}`);
    }
    expect(broken).toEqual([]);
  });
});
