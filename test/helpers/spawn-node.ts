/**
 * A child process (the CLI under tsx, a node script) run asynchronously, for tests. A synchronous
 * run (spawnSync, execFileSync) blocks the test worker's event loop for the whole run; several in
 * a row under load kept vitest's worker from answering its RPC ("Timeout calling onTaskUpdate").
 */
import { spawn } from 'node:child_process';

export interface ProcessResult {
  /** The exit code; null when the process ended by a signal (the timeout's SIGKILL included) or did not start. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface ProcessOptions {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** After this long the child is killed (SIGKILL) and the promise resolves with what it wrote. */
  readonly timeoutMs: number;
  /** Written to the child's standard input, which is then closed (closed at once without it). */
  readonly input?: string;
}

/** Runs `file args…`; resolves (never rejects) when it has ended, with its exit code or signal and its output. */
export function runProcess(file: string, args: readonly string[], options: ProcessOptions): Promise<ProcessResult> {
  return new Promise((resolvePromise) => {
    const child = spawn(file, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let settled = false;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    };
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    // Killed, it has exited; a process it started could still hold the pipes open, and 'close' wait for it.
    child.on('exit', () => {
      if (!killed) return;
      child.stdout.destroy();
      child.stderr.destroy();
    });
    // A spawn failure (no such file, bad cwd): no exit follows; its message goes with the output.
    child.on('error', (err) => {
      stderr += `${stderr === '' ? '' : '\n'}${String(err)}`;
      if (child.pid === undefined) finish(null, null);
    });
    // 'close', not 'exit': the output streams are read to their end.
    child.on('close', (code, signal) => finish(code, signal));
    // A child that exits without reading its input would make the write fail with EPIPE.
    child.stdin.on('error', () => undefined);
    if (options.input === undefined) child.stdin.end();
    else child.stdin.end(options.input);
  });
}
