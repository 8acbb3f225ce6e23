/**
 * The documentation's shell examples can be followed in order: a `curl` that acts on a
 * subscription by name (`/subscriptions/<name>/…`) comes after one that creates it
 * (`curl … /subscriptions … "name":"<name>"`) in the same document, so a newcomer copying the
 * lines top to bottom never meets a 404 for a subscription the page forgot to create (until
 * 2026-12-07 docs/subscriptions.md "Pull delivery" read, committed and streamed `acme-pull`
 * without creating it). Names an example uses on purpose as "your existing subscription" are
 * listed below with the reason. Nothing runs: the ```sh blocks are read as text.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const documents = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Subscriptions the examples name as already there, and why. */
const EXISTING: Readonly<Record<string, string>> = {
  orders: 'docs/subscriptions.md "Replay": an operator replays a subscription that has been delivering for a while',
};

interface Command { readonly line: number; readonly text: string }

/** The commands of the ```sh blocks of `doc`, backslash-continued lines joined, with their first line number. */
function shellCommands(doc: string): Command[] {
  const out: Command[] = [];
  let inSh = false;
  let pending: { line: number; text: string } | undefined;
  readFileSync(join(ROOT, doc), 'utf8').split('\n').forEach((raw, i) => {
    if (/^```/.test(raw)) {
      inSh = !inSh && /^```(sh|bash|shell)\s*$/.test(raw);
      return;
    }
    if (!inSh) return;
    const text = pending === undefined ? raw : `${pending.text} ${raw.trim()}`;
    const line = pending?.line ?? i + 1;
    if (text.endsWith('\\')) pending = { line, text: text.slice(0, -1) };
    else {
      pending = undefined;
      out.push({ line, text });
    }
  });
  return out;
}

/** Where a subscription is used before any example of the document created it. */
function usedBeforeCreated(doc: string): string[] {
  const created = new Set<string>();
  const problems: string[] = [];
  for (const c of shellCommands(doc)) {
    if (!/^\s*curl\b/.test(c.text)) continue;
    if (/\/subscriptions(?:\?[^\s'"]*)?['"\s]/.test(c.text)) for (const m of c.text.matchAll(/"name"\s*:\s*"([A-Za-z0-9_-]+)"/g)) created.add(m[1]!);
    for (const m of c.text.matchAll(/\/subscriptions\/([A-Za-z0-9_-]+)/g)) {
      const name = m[1]!;
      if (!created.has(name) && EXISTING[name] === undefined) problems.push(`${doc}:${c.line}: ${name} is used before an example creates it`);
    }
  }
  return problems;
}

describe('subscriptions in the documentation\'s curl examples', () => {
  it('the examples that create subscriptions are found (the check reads something)', () => {
    const creates = documents.flatMap((d) => shellCommands(d)).filter((c) => /^\s*curl\b/.test(c.text) && /"name"\s*:/.test(c.text));
    expect(creates.length).toBeGreaterThan(0);
  });
  it.each(documents.map((d) => [d]))('%s creates each subscription before it reads or changes it', (doc) => {
    expect(usedBeforeCreated(doc)).toEqual([]);
  });
});
