/** Detached service processes with pid files, and readiness polling (never fixed sleeps). */
import { spawn, execFile } from 'node:child_process';
import { openSync, closeSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { promisify } from 'node:util';

export const execFileAsync = promisify(execFile);

/**
 * The pid a pid file names, while that process runs; undefined otherwise. The file also holds the
 * process's start time (Linux: field 22 of /proc/<pid>/stat, in clock ticks since boot): the kernel
 * reuses pids (pid_max is 32768 on many machines), and a signal meant for a service that died
 * would otherwise reach whatever process got its pid since. A file without it (older) is taken by pid alone.
 */
export function readPid(pidFile: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const [pidText, startedText] = readFileSync(pidFile, 'utf8').trim().split(/\s+/);
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  if (startedText !== undefined && startedText !== '') {
    const started = startTime(pid);
    if (started !== undefined && started !== startedText) return undefined;
  }
  return pid;
}

/** A process's start time from /proc (clock ticks since boot, as text); undefined where there is no /proc. */
export function startTime(pid: number): string | undefined {
  try {
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts `cmd` in its own process group, output appended to `logFile`, and records its pid. */
export function startDetached(cmd: string, args: readonly string[], opts: { cwd: string; logFile: string; pidFile: string; env?: NodeJS.ProcessEnv }): number {
  const fd = openSync(opts.logFile, 'a');
  try {
    const child = spawn(cmd, args, { cwd: opts.cwd, detached: true, stdio: ['ignore', fd, fd], env: opts.env ?? process.env });
    if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
    child.unref();
    writeFileSync(opts.pidFile, `${child.pid} ${startTime(child.pid) ?? ''}\n`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** SIGTERM, wait up to `timeoutMs`, then SIGKILL. Removes the pid file. */
export async function stopProcess(pidFile: string, timeoutMs: number): Promise<boolean> {
  const pid = readPid(pidFile);
  if (pid === undefined) {
    rmSync(pidFile, { force: true });
    return false;
  }
  try {
    process.kill(pid, 'SIGCONT'); // a test may have left it paused
    process.kill(pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid) && Date.now() < deadline) await delay(100);
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  while (isAlive(pid)) await delay(50);
  rmSync(pidFile, { force: true });
  return true;
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Polls `probe` until it returns true. Fails with `what`, the last probe error and the log tail
 * when `timeoutMs` passes or the process named by `pid` dies.
 */
export async function awaitReady(what: string, probe: () => Promise<boolean>, opts: { timeoutMs: number; pid?: number; logFile?: string }): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let last = '';
  for (;;) {
    try {
      if (await probe()) return;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (opts.pid !== undefined && !isAlive(opts.pid)) throw new Error(`${what} exited during start-up.${tail(opts.logFile)}`);
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${opts.timeoutMs} ms${last ? ` (${last})` : ''}.${tail(opts.logFile)}`);
    await delay(250);
  }
}

function tail(logFile: string | undefined): string {
  if (logFile === undefined || !existsSync(logFile)) return '';
  const lines = readFileSync(logFile, 'utf8').split('\n').filter((l) => l.trim() !== '' && !/^\s+at /.test(l));
  return `\nLast lines of ${logFile}:\n${lines.slice(-12).join('\n')}`;
}
