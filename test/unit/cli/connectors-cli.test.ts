/** `ce-gateway connectors check` as a process: validates a folder as `serve` would, starting nothing. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

  it('a folder without connector files says so (the repository\'s connectors/, whose examples are one level down): exit 0', async () => {
    const r = await cli(ROOT, ['connectors']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('connectors: 0 connectors valid (no *.yaml files directly in it; subfolders are not read)');
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
