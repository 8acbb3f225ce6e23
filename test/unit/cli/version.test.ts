/** `ce-gateway --version` prints the package's version and exits 0 (a user's first check of what is installed). */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { runProcess } from '../../helpers/spawn-node.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');

it('--version and -V print the version of package.json, exit 0', async () => {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  for (const flag of ['--version', '-V']) {
    const r = await runProcess(process.execPath, [...CLI_ENTRY, flag], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent' }, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(version);
  }
}, 120_000);

/**
 * `npx ce-gateway` in a checkout runs package.json's `bin` file itself (through its shebang), so
 * the build must leave it executable: tsc writes it mode 644, and after a fresh clone's `npm ci`
 * (whose `prepare` builds dist/) the README's first CLI line answered `sh: 1: ce-gateway:
 * Permission denied`. The CI builds with `npm ci` / `npm run build` before the tests, as a user does.
 */
it('the bin file is executable as the build leaves it: run directly, it prints the version', async () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
  const bin = join(ROOT, pkg.bin['ce-gateway']!);
  const r = await runProcess(bin, ['--version'], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent' }, timeoutMs: 60_000 });
  expect(r.code, `${bin} (built by npm run build): ${r.stderr}`).toBe(0);
  expect(r.stdout.trim()).toBe(pkg.version);
}, 120_000);
