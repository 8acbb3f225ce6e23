/**
 * The CLI run in a child process for a failure it must report: the inherited environment without
 * CE_GATEWAY_BROKER_TIMEOUT_MS (the test gives `--broker-timeout` itself) and without `unset`,
 * `env` over it, `LOG_LEVEL=silent`; it must exit 2 (a usage or broker failure) on its own, not by
 * a signal. Shared by the CLI failure-wording tests (unit and stack).
 */
import { resolve } from 'node:path';
import { expect } from 'vitest';
import { CLI_ENTRY } from './cli-entry.js';
import { runProcess } from './spawn-node.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** What {@link runCliExpectingExit2} saw: both streams, `said` (both, for assertion messages) and the last line of stderr. */
export interface CliFailure {
  readonly stdout: string;
  readonly stderr: string;
  readonly said: string;
  readonly line: string;
}

/**
 * Runs `ce-gateway <args>` from the checkout's root, asserts it exited 2 without a signal, and
 * returns its output. `timeoutMs`: the child is killed after it (the assertion then fails).
 */
export async function runCliExpectingExit2(args: readonly string[], o: { readonly env: Readonly<Record<string, string>>; readonly unset?: readonly string[]; readonly timeoutMs: number }): Promise<CliFailure> {
  const inherited: NodeJS.ProcessEnv = { ...process.env };
  for (const v of ['CE_GATEWAY_BROKER_TIMEOUT_MS', ...(o.unset ?? [])]) delete inherited[v];
  const r = await runProcess(process.execPath, [...CLI_ENTRY, ...args], { cwd: ROOT, env: { ...inherited, LOG_LEVEL: 'silent', ...o.env }, timeoutMs: o.timeoutMs });
  const said = `stdout: ${r.stdout}\nstderr: ${r.stderr}`;
  expect(r.signal, said).toBeNull();
  expect(r.code, said).toBe(2);
  return { stdout: r.stdout, stderr: r.stderr, said, line: r.stderr.trim().split('\n').at(-1) ?? '' };
}
