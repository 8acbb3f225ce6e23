/** `ce-gateway connectors check` as a process: validates a folder as `serve` would, starting nothing. */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../helpers/spawn-node.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

async function cli(cwd: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
  for (const name of ['CATALOG_DIR', 'CONNECTORS_DIR', 'CE_GATEWAY_ENV_FILE']) delete env[name];
  const r = await runProcess(process.execPath, [...CLI_ENTRY, 'connectors', 'check', ...args], { cwd, env, timeoutMs: 60_000 });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

describe('ce-gateway connectors check', { timeout: 60_000 }, () => {
  it('lists the connectors of a valid folder (the shipped examples): exit 0', async () => {
    const r = await cli(ROOT, ['connectors/examples']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('price-loaded-drop\tfile-drop\tdisabled\tops.price-loaded-drop\tPriceLoadingCompleted\nprice-loaded-hook\tshell-hook\tdisabled\tops.price-loaded-hook\tPriceLoadingCompleted\n');
    expect(r.stderr).toContain('connectors/examples: 2 connectors valid');
  });

  it('a kind listed twice still loads (exit 0) and is warned on stderr naming the file and the repeat; stdout unchanged', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ceg-connectors-repeat-'));
    temps.push(dir);
    const text = readFileSync(join(ROOT, 'connectors', 'examples', 'price-loaded-drop.yaml'), 'utf8').replace('kinds: [PriceLoadingCompleted]', 'kinds: [PriceLoadingCompleted, SeriesUpdateCompleted, PriceLoadingCompleted]');
    expect(text).toContain('SeriesUpdateCompleted, PriceLoadingCompleted]');
    writeFileSync(join(dir, 'twice.yaml'), text);
    const r = await cli(dir, ['.']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('twice\tfile-drop\tdisabled\tops.price-loaded-drop\tPriceLoadingCompleted,SeriesUpdateCompleted,PriceLoadingCompleted\n');
    expect(r.stderr).toContain(`warning: ${join(dir, 'twice.yaml')}: kinds[2] names PriceLoadingCompleted again (kinds[0])`);
    expect(r.stderr).toContain('1 connector valid');
  });

  it('a folder without connector files says so and names the sub-folder holding the examples, with the command that checks them: exit 0', async () => {
    // The repository's connectors/, as a new user runs it: its examples are one level down.
    const r = await cli(ROOT, ['connectors']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'ce-gateway connectors check: connectors: no connector files in it, nothing to check (serve reads only the *.yaml / *.yml files directly in its folder, never sub-folders)\n' +
        'ce-gateway connectors check: connectors/examples holds 2 (never loaded from connectors): ce-gateway connectors check connectors/examples\n',
    );
    // The command it names checks them.
    const named = await cli(ROOT, ['connectors/examples']);
    expect(named.code, named.stderr).toBe(0);
    expect(named.stderr).toContain('connectors/examples: 2 connectors valid');
  });

  it('without connector files: only sub-folders holding *.yaml / *.yml are named, one level down; --json keeps stdout [] and says it on stderr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ceg-connectors-empty-'));
    temps.push(dir);
    mkdirSync(join(dir, 'b-hooks', 'deeper'), { recursive: true });
    writeFileSync(join(dir, 'b-hooks', 'one.yml'), 'kind: shell-hook\n');
    writeFileSync(join(dir, 'b-hooks', 'two.YAML'), 'kind: shell-hook\n');
    writeFileSync(join(dir, 'b-hooks', 'deeper', 'three.yaml'), 'kind: shell-hook\n');
    mkdirSync(join(dir, 'a-scripts'));
    writeFileSync(join(dir, 'a-scripts', 'hook.sh'), '#!/bin/sh\n');
    mkdirSync(join(dir, 'c-only-deeper', 'x'), { recursive: true });
    writeFileSync(join(dir, 'c-only-deeper', 'x', 'four.yaml'), 'kind: shell-hook\n');
    writeFileSync(join(dir, 'notes.txt'), 'not a connector\n');
    const r = await cli(dir, ['.', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('[]\n');
    expect(r.stderr).toBe(
      'ce-gateway connectors check: .: no connector files in it, nothing to check (serve reads only the *.yaml / *.yml files directly in its folder, never sub-folders)\n' +
        'ce-gateway connectors check: b-hooks holds 2 (never loaded from .): ce-gateway connectors check b-hooks\n',
    );
  });

  it('reports every problem with its file, unknown kinds included: exit 1; no folder: exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ceg-connectors-check-'));
    temps.push(dir);
    writeFileSync(join(dir, 'hook.sh'), '#!/bin/sh\nexit 0\n');
    chmodSync(join(dir, 'hook.sh'), 0o755);
    writeFileSync(join(dir, 'a.yaml'), 'kind: shell-hook\nsubscription: ops.a\nkinds: [PriceLoadingCompletd]\nsink:\n  command: [./hook.sh]\n');
    writeFileSync(join(dir, 'b.yaml'), 'kind: file-drop\nsubscription: ops.b\nkinds: [PriceLoadingCompleted]\nsink: { directory: nowhere, createDirectories: false }\n');
    const r = await cli(dir, ['.', '--json']);
    expect(r.code).toBe(1);
    const problems = JSON.parse(r.stdout) as { file: string; path: string; problem: string }[];
    expect(problems.map((p) => [p.file, p.path])).toEqual([
      [join(dir, 'a.yaml'), 'kinds[0]'],
      [join(dir, 'b.yaml'), 'sink.directory'],
    ]);
    expect(problems[0]!.problem).toContain('unknown event kind "PriceLoadingCompletd"');
    expect((await cli(dir, [])).code).toBe(2);
    // A folder that is not there, or a file, is a usage error too (it was exit 1, a "problem").
    for (const missing of [join(dir, 'nowhere'), join(dir, 'a.yaml')]) {
      const m = await cli(dir, [missing]);
      expect(m.code, m.stderr).toBe(2);
      expect(m.stderr).toContain(`${missing} is not a folder`);
    }
  });
});
