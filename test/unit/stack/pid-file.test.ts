/**
 * The stack's pid files name a process by pid and start time (scripts/stack/process.ts): the
 * kernel reuses pids, and a signal meant for a service that died must not reach the process that
 * got its pid since (a fault test's SIGCONT once resumed another test's paused broker).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readPid, startDetached, startTime } from '../../../scripts/stack/process.js';

const dirs: string[] = [];
const pidFile = (text: string): string => {
  const dir = mkdtempSync(join(tmpdir(), 'ceg-pidfile-'));
  dirs.push(dir);
  const file = join(dir, 'pid');
  writeFileSync(file, text);
  return file;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('pid files', () => {
  it('name a running process only while its start time matches', () => {
    const started = startTime(process.pid);
    expect(started).toMatch(/^\d+$/);
    expect(readPid(pidFile(`${process.pid} ${started}\n`))).toBe(process.pid);
    // The same pid with another start time: a process that got the pid of one that died.
    expect(readPid(pidFile(`${process.pid} ${BigInt(started!) + 1n}\n`))).toBeUndefined();
    // Written before the start time was kept: by pid alone.
    expect(readPid(pidFile(`${process.pid}\n`))).toBe(process.pid);
    expect(readPid(pidFile('not-a-pid\n'))).toBeUndefined();
  });

  it('startDetached writes the pid and the start time of the process it started', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ceg-pidfile-'));
    dirs.push(dir);
    const file = join(dir, 'pid');
    const pid = startDetached(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { cwd: dir, logFile: join(dir, 'log'), pidFile: file });
    try {
      expect(readPid(file)).toBe(pid);
      expect(readFileSync(file, 'utf8')).toBe(`${pid} ${startTime(pid)}\n`);
    } finally {
      process.kill(pid, 'SIGKILL');
    }
  });
});
