/**
 * A "try it" walk-through that starts a gateway (`npm start`) and then calls it on the default
 * 127.0.0.1:8080 must say, just before its commands, what to do on a stack that is already running
 * (another checkout's, or a shared one): name its env file (CE_GATEWAY_ENV_FILE) and a port of
 * one's own (PORT), as the README's "A stack that is already running" does. Without it a newcomer on
 * a shared machine followed docs/subscriptions.md "Try it on your machine" into the in-memory
 * transport or into another person's gateway on 8080 (helper walk-through, 2026-12-07). Nothing
 * runs: the documents are read as text.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const documents = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
/** How many lines before a block the prose that introduces it may start. */
const INTRO_LINES = 12;

interface Block { readonly line: number; readonly text: string }

function shellBlocks(doc: string): { blocks: Block[]; lines: string[] } {
  const lines = readFileSync(join(ROOT, doc), 'utf8').split('\n');
  const blocks: Block[] = [];
  let start: number | undefined;
  lines.forEach((l, i) => {
    if (!/^```/.test(l)) return;
    if (start === undefined) {
      if (/^```(sh|bash|shell)\s*$/.test(l)) start = i;
      else start = -1 - i; // a block of another language: skipped, but its end still closes it
      return;
    }
    if (start >= 0) blocks.push({ line: start + 1, text: lines.slice(start + 1, i).join('\n') });
    start = undefined;
  });
  return { blocks, lines };
}

describe('docs: walk-throughs that start a gateway say how to use a stack that is already running', () => {
  const cases = documents.flatMap((doc) => {
    const { blocks, lines } = shellBlocks(doc);
    return blocks.filter((b) => /\bnpm start\b/.test(b.text) && /127\.0\.0\.1:8080\b/.test(b.text)).map((b) => ({ doc, b, intro: lines.slice(Math.max(0, b.line - 1 - INTRO_LINES), b.line - 1).join('\n') }));
  });

  it('there is at least one such walk-through (docs/subscriptions.md "Try it on your machine")', () => {
    expect(cases.map((c) => c.doc)).toContain('docs/subscriptions.md');
  });

  it.each(cases.map((c) => [`${c.doc}:${c.b.line}`, c] as const))('%s names CE_GATEWAY_ENV_FILE and PORT just before its commands', (_where, c) => {
    expect(c.intro).toContain('CE_GATEWAY_ENV_FILE');
    expect(c.intro).toMatch(/\bPORT=/);
  });
});
