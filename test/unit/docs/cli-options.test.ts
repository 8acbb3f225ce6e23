/**
 * Every `ce-gateway <command> … --option` the documentation shows names an option the command
 * has (or a global one), so a line copied from README.md or docs/*.md is not refused as an unknown
 * option. The commands are registered as src/cli/main.ts registers them; nothing runs.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerCatalogCommand } from '../../../src/cli/commands/catalog.js';
import { registerConfigCommand } from '../../../src/cli/commands/config.js';
import { registerConnectorsCommand } from '../../../src/cli/commands/connectors.js';
import { registerDeadLettersCommand } from '../../../src/cli/commands/deadletters.js';
import { registerOutboxCommand } from '../../../src/cli/commands/outbox.js';
import { registerReplayCommand } from '../../../src/cli/commands/replay.js';
import { registerSchemasCommand } from '../../../src/cli/commands/schemas.js';
import { registerServeCommand } from '../../../src/cli/commands/serve.js';
import { registerSubscribeCommand } from '../../../src/cli/commands/subscribe.js';
import { registerTailCommand } from '../../../src/cli/commands/tail.js';
import { registerTopicsCommand } from '../../../src/cli/commands/topics.js';
import { registerTraceCommand } from '../../../src/cli/commands/trace.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const documents = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
/** The root's own options (src/cli/main.ts). */
const GLOBAL = ['--log-level', '--broker-timeout', '--version', '--help'];

const program = new Command('ce-gateway');
for (const register of [registerServeCommand, registerTopicsCommand, registerSubscribeCommand, registerTraceCommand, registerTailCommand, registerCatalogCommand, registerSchemasCommand, registerOutboxCommand, registerConnectorsCommand, registerReplayCommand, registerDeadLettersCommand, registerConfigCommand]) register(program);

const sub = (parent: Command, name: string): Command | undefined => parent.commands.find((c) => c.name() === name);
const longOptions = (c: Command): string[] => [...c.options.map((o) => o.long ?? ''), ...c.options.filter((o) => o.negate).map((o) => o.long ?? ''), '--help'];

interface Use { readonly where: string; readonly commands: readonly Command[]; readonly options: readonly string[]; readonly text: string }

/** `ce-gateway cmd [sub|sub2…] …` inside a code span or a code line, with the long options that follow on it. */
function usesIn(doc: string): Use[] {
  const uses: Use[] = [];
  readFileSync(join(ROOT, doc), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/ce-gateway ([a-z]+)((?: ?\\?\| ?[a-z]+)*)(?: ([a-z]+)((?:\\?\|[a-z]+)*))?/g)) {
        const top = sub(program, m[1]!);
        if (top === undefined) continue;
        const names = top.commands.length > 0 && m[3] !== undefined ? [m[3], ...(m[4] ?? '').split('|').map((s) => s.replace(/\\/g, '')).filter((s) => s !== '')] : [];
        const commands = names.length > 0 ? names.map((n) => sub(top, n)).filter((c): c is Command => c !== undefined) : [top];
        if (commands.length === 0) continue;
        // Up to the end of the code span (or of a shell comment / the table cell).
        const rest = line.slice(m.index + m[0].length).split(/`|\s#\s|(?<!\\)\|\s/)[0]!;
        const options = [...rest.matchAll(/(?:^|[\s[(])(--[a-z][a-z0-9-]*)/g)].map((o) => o[1]!);
        if (options.length > 0) uses.push({ where: `${doc}:${i + 1}`, commands, options, text: m[0] + rest });
      }
    });
  return uses;
}

describe('ce-gateway options in the documentation', () => {
  const all = documents.flatMap(usesIn);
  it('finds uses with options', () => {
    expect(all.length).toBeGreaterThan(20);
  });
  it.each(documents.map((d) => [d]))('%s names only options its commands have', (doc) => {
    const unknown = usesIn(doc).flatMap((u) => u.options.filter((o) => !GLOBAL.includes(o) && !u.commands.some((c) => longOptions(c).includes(o))).map((o) => `${u.where}: ${o} in "${u.text.trim()}"`));
    expect(unknown).toEqual([]);
  });
});
