/**
 * Bad option values are usage errors (exit 2, naming the option) before anything connects or is
 * created: a negative `trace --timeout`, `subscribe --max-events 0`, a `topics --subscription`
 * name that cannot name a topic. The broker address is a port where nothing listens, so a command
 * that got past its checks would fail differently (and never create anything).
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { wholeNumber } from '../../../src/cli/numbers.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const MAIN = join(ROOT, 'src', 'cli', 'main.ts');

function cli(args: readonly string[]): { code: number | null; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', KAFKA_BROKERS: '127.0.0.1:1', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1' };
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stderr: r.stderr };
}

describe('wholeNumber', () => {
  it('takes digits in range and refuses everything else', () => {
    const p = wholeNumber(1, 1000);
    expect(p('1')).toBe(1);
    expect(p(' 1000 ')).toBe(1000);
    for (const bad of ['0', '-5', '1001', '10abc', '1e3', '1.5', '', '0x10', 'NaN']) expect(() => p(bad), bad).toThrow(/whole number from 1 to 1000/);
    fc.assert(fc.property(fc.string(), (s) => {
      let n: number | undefined;
      try {
        n = p(s);
      } catch {
        return true;
      }
      return Number.isInteger(n) && n >= 1 && n <= 1000 && String(n) === s.trim().replace(/^0+(?=\d)/, '');
    }));
  });
});

describe('usage errors exit 2 before anything connects', { timeout: 60_000 }, () => {
  it.each([
    [['trace', 'c-1', '--timeout', '-5'], /--timeout/],
    [['trace', 'c-1', '--timeout', '0'], /--timeout/],
    [['subscribe', '--subscription', 's', '--kind', 'k', '--max-events', '0'], /--max-events/],
    [['topics', '--subscription', 'bad name'], /--subscription/],
    [['deadletters', 'list', 'h3', '--limit', '1e3'], /--limit/],
    [['deadletters', 'list', 'h3', '--limit', '10abc'], /--limit/],
  ])('%j', (args, named) => {
    const r = cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(named);
  });
});
