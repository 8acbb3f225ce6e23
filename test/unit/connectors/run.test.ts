import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runProcess } from '../../../src/connectors/index.js';
import type { RunOptions } from '../../../src/connectors/index.js';
import { alive, tempDir, writeScript } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.remove());

const base = (file: string, over: Partial<RunOptions> = {}): RunOptions => ({
  file,
  args: [],
  env: { PATH: '/usr/bin:/bin' },
  stdin: new Uint8Array(),
  timeoutMs: 5000,
  killGraceMs: 1000,
  maxOutputBytes: 4096,
  ...over,
});

async function waitForFile(path: string, ms = 3000): Promise<string> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const s = readFileSync(path, 'utf8');
      if (s.endsWith('\n')) return s;
    } catch {
      // not yet
    }
    if (Date.now() > end) throw new Error(`no ${path}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('runProcess', () => {
  it('passes stdin, argv without a shell, and reports the exit code and output', async () => {
    const script = writeScript(tmp.dir, 'echo.sh', 'cat; printf "|%s" "$@"; echo oops >&2; exit 65');
    const r = await runProcess(base(script, { args: ['$HOME; rm -rf /', '`id`', 'a b'], stdin: Buffer.from('{"id":"x"}') }));
    expect(r.end).toEqual({ kind: 'exited', code: 65 });
    expect(r.stdout).toBe('{"id":"x"}|$HOME; rm -rf /|`id`|a b');
    expect(r.stderr).toBe('oops\n');
    expect(r.stdoutTruncated).toBe(false);
    expect(r.pid).toBeGreaterThan(0);
  });

  it('gives the process exactly the environment it is handed', async () => {
    const script = writeScript(tmp.dir, 'env.sh', 'env | sort');
    const r = await runProcess(base(script, { env: { PATH: '/usr/bin:/bin', ONLY: 'this' } }));
    const names = r.stdout.trim().split('\n').map((l) => l.split('=')[0]).filter((n) => n !== 'PWD' && n !== 'SHLVL' && n !== '_');
    expect(names).toEqual(['ONLY', 'PATH']);
  });

  it('keeps only the last maxOutputBytes of each stream', async () => {
    const script = writeScript(tmp.dir, 'noisy.sh', 'i=0; while [ $i -lt 500 ]; do printf "%04d" $i; i=$((i+1)); done; printf "END" >&2');
    const r = await runProcess(base(script, { maxOutputBytes: 16 }));
    expect(r.stdout).toBe('049604970498' + '0499'); // the last 16 of 2000 bytes
    expect(r.stdoutTruncated).toBe(true);
    expect(r.stderr).toBe('END');
    expect(r.stderrTruncated).toBe(false);
  });

  it('does not fail when the script ignores its input', async () => {
    const script = writeScript(tmp.dir, 'ignore.sh', 'exit 0');
    const r = await runProcess(base(script, { stdin: Buffer.alloc(1 << 20, 0x61) }));
    expect(r.end).toEqual({ kind: 'exited', code: 0 });
  });

  it('reports a command that cannot be started', async () => {
    const r = await runProcess(base(join(tmp.dir, 'missing.sh')));
    expect(r.end).toMatchObject({ kind: 'spawnFailed', errno: 'ENOENT' });
    expect(r.pid).toBeUndefined();
  });

  it('reports a death by a signal it did not send', async () => {
    const script = writeScript(tmp.dir, 'suicide.sh', 'kill -SEGV $$');
    const r = await runProcess(base(script));
    expect(r.end).toEqual({ kind: 'signaled', signal: 'SIGSEGV' });
  });

  it('on timeout sends SIGTERM to the whole process group, grandchildren included', async () => {
    const pidFile = join(tmp.dir, 'grandchild.pid');
    // The grandchild is a separate `sleep` in the background; the script then waits on it.
    const script = writeScript(tmp.dir, 'slow.sh', `sleep 30 & echo $! > ${pidFile}; echo started; wait`);
    const started = Date.now();
    const r = await runProcess(base(script, { timeoutMs: 300, killGraceMs: 8000 }));
    const elapsed = Date.now() - started;
    expect(r.end).toEqual({ kind: 'timedOut', timeoutMs: 300, killedWith: 'SIGTERM' });
    expect(r.stdout).toBe('started\n');
    expect(elapsed).toBeGreaterThanOrEqual(290);
    // Well under the grace (a SIGKILL would come after 8.3 s): slack for a loaded machine's process starts.
    expect(elapsed).toBeLessThan(6000);
    const grandchild = Number((await waitForFile(pidFile)).trim());
    expect(alive(grandchild)).toBe(false);
  });

  it('sends SIGKILL after the grace period to a process group that ignores SIGTERM', async () => {
    const pidFile = join(tmp.dir, 'stubborn.pid');
    const script = writeScript(tmp.dir, 'stubborn.sh', `trap '' TERM; (trap '' TERM; sleep 30) & echo $! > ${pidFile}; while :; do sleep 0.05; done`);
    const started = Date.now();
    const r = await runProcess(base(script, { timeoutMs: 200, killGraceMs: 400 }));
    const elapsed = Date.now() - started;
    expect(r.end).toEqual({ kind: 'timedOut', timeoutMs: 200, killedWith: 'SIGKILL' });
    expect(elapsed).toBeGreaterThanOrEqual(590);
    expect(elapsed).toBeLessThan(8000); // never killed: the group's sleep 30
    const child = Number((await waitForFile(pidFile)).trim());
    await new Promise((r2) => setTimeout(r2, 50));
    expect(alive(child)).toBe(false);
  });

  it('cancels the pending SIGKILL once the timed-out group is gone (its id may be reused)', async () => {
    // `sleep` dies of the SIGTERM at once: its group is empty long before the grace ends.
    const kill = vi.spyOn(process, 'kill');
    try {
      const r = await runProcess(base('/bin/sleep', { args: ['30'], timeoutMs: 100, killGraceMs: 300 }));
      expect(r.end).toEqual({ kind: 'timedOut', timeoutMs: 100, killedWith: 'SIGTERM' });
      await new Promise((r2) => setTimeout(r2, 500)); // past the grace
      const signalled = kill.mock.calls.filter(([target]) => target === -r.pid!).map(([, sig]) => sig);
      expect(signalled).toContain('SIGTERM');
      expect(signalled).not.toContain('SIGKILL');
    } finally {
      kill.mockRestore();
    }
  });
});
