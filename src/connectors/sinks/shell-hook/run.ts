/**
 * Runs one process with execFile semantics (argv array, no shell), its own process group, input
 * on stdin, a timeout that kills the whole group (SIGTERM, then SIGKILL after a grace period)
 * and bounded capture of stdout and stderr (the last bytes are kept).
 * Spec: DESIGN "Connectors" (operator-script hook sink); bus spec "Migration Path".
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

/** How the process ended. */
export type ProcessEnd =
  | { readonly kind: 'exited'; readonly code: number }
  | { readonly kind: 'signaled'; readonly signal: string }
  | { readonly kind: 'timedOut'; readonly timeoutMs: number; readonly killedWith: 'SIGTERM' | 'SIGKILL' }
  /** Ended by {@link RunningProcess.stop} (the sink stopping, e.g. the gateway shutting down). */
  | { readonly kind: 'stopped'; readonly killedWith: 'SIGTERM' | 'SIGKILL' }
  | { readonly kind: 'spawnFailed'; readonly error: string; readonly errno?: string };

export interface ProcessResult {
  readonly end: ProcessEnd;
  /** Last `maxOutputBytes` of stdout / stderr as UTF-8 text. */
  readonly stdout: string;
  readonly stderr: string;
  /** True when more output was written than was kept. */
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly durationMs: number;
  /** Process id (also the process group id); undefined when it never started. */
  readonly pid: number | undefined;
}

export interface RunOptions {
  /** Executable: an absolute path, or a bare name looked up on `env.PATH`. */
  readonly file: string;
  readonly args: readonly string[];
  /** The complete environment of the process (nothing is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly stdin: Uint8Array;
  /** Wall-clock limit, ms; then SIGTERM to the process group. */
  readonly timeoutMs: number;
  /** After SIGTERM, ms until SIGKILL to the process group. */
  readonly killGraceMs: number;
  /** Bytes kept per stream (the tail). */
  readonly maxOutputBytes: number;
}

/** After the process exited, how long to wait for its pipes to close (a background child may hold them), ms. */
const DRAIN_MS = 250;

/** Keeps the last `max` bytes written. */
class Tail {
  #chunks: Buffer[] = [];
  #size = 0;
  truncated = false;
  constructor(private readonly max: number) {}
  push(chunk: Buffer): void {
    if (this.max === 0) {
      this.truncated ||= chunk.length > 0;
      return;
    }
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#size > this.max) {
      const first = this.#chunks[0]!;
      const excess = this.#size - this.max;
      this.truncated = true;
      if (first.length <= excess) {
        this.#chunks.shift();
        this.#size -= first.length;
      } else {
        this.#chunks[0] = first.subarray(excess);
        this.#size -= excess;
      }
    }
  }
  text(): string {
    return Buffer.concat(this.#chunks).toString('utf8');
  }
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the whole group is already gone.
  }
}

/** True while process group `pid` has a member (signal 0 probes without signalling). */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (e) {
    // EPERM: a member exists that we may not signal (it changed its user): the group is not gone.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A started process: its result, and a way to end it early (the sink stopping). */
export interface RunningProcess {
  /** Resolves as {@link runProcess} does; never rejects. */
  readonly result: Promise<ProcessResult>;
  /**
   * Ends the process now: SIGTERM to its process group, SIGKILL `killGraceMs` (ms) later if the
   * group is not gone by then; the result's `end` becomes `{ kind: 'stopped' }`. No effect once the
   * process exited or a timeout already began killing it.
   */
  stop(killGraceMs: number): void;
}

/**
 * Runs the process and resolves when it ended and its output was collected. Never rejects: a
 * failure to start is `{ kind: 'spawnFailed' }`.
 * On timeout the process group gets SIGTERM, and SIGKILL `killGraceMs` later if any member is
 * still alive; the result is `timedOut` whatever exit status followed.
 */
export function runProcess(o: RunOptions): Promise<ProcessResult> {
  return startProcess(o).result;
}

/**
 * Starts the process as {@link runProcess} and returns at once with its result promise and a
 * `stop` (see {@link RunningProcess}).
 * The pending SIGKILL of a kill sequence is cancelled as soon as the group is found empty (when
 * the leader exits, and when its output closes): a process group id may be reused once the group
 * is gone, and a late SIGKILL would hit an unrelated group. Members left behind keep the id in
 * use, and get the SIGKILL.
 */
export function startProcess(o: RunOptions): RunningProcess {
  let stopRequest: ((killGraceMs: number) => void) | undefined;
  const result = new Promise<ProcessResult>((resolve) => {
    const started = performance.now();
    const out = new Tail(o.maxOutputBytes);
    const err = new Tail(o.maxOutputBytes);
    let settled = false;
    /** Set once a kill sequence began: why, and the last signal sent while the leader ran. */
    let killing: { readonly why: 'timeout' | 'stop'; readonly graceMs: number; killedWith: 'SIGTERM' | 'SIGKILL' } | undefined;
    let exited: ProcessEnd | undefined;
    let timeoutTimer: NodeJS.Timeout | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let child: ChildProcess;

    /** Cancels the pending SIGKILL when the group is gone (its id may be reused from now on). */
    const forgetEmptyGroup = (): void => {
      if (killTimer !== undefined && (child.pid === undefined || !groupAlive(child.pid))) {
        clearTimeout(killTimer);
        killTimer = undefined;
      }
    };

    const finish = (end: ProcessEnd | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      clearTimeout(drainTimer);
      forgetEmptyGroup();
      const final: ProcessEnd =
        killing === undefined
          ? (end ?? exited ?? { kind: 'signaled', signal: 'unknown' })
          : killing.why === 'timeout'
            ? { kind: 'timedOut', timeoutMs: o.timeoutMs, killedWith: killing.killedWith }
            : { kind: 'stopped', killedWith: killing.killedWith };
      resolve({
        end: final,
        stdout: out.text(),
        stderr: err.text(),
        stdoutTruncated: out.truncated,
        stderrTruncated: err.truncated,
        durationMs: Math.round(performance.now() - started),
        pid: child.pid,
      });
    };

    /** SIGTERM to the group now, SIGKILL `graceMs` later unless the group is gone by then. */
    const kill = (why: 'timeout' | 'stop', graceMs: number): void => {
      if (killing !== undefined || exited !== undefined || settled || child.pid === undefined) return;
      const pid = child.pid;
      clearTimeout(timeoutTimer);
      killing = { why, graceMs, killedWith: 'SIGTERM' };
      const k = killing;
      killGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => {
        killTimer = undefined;
        // Members that ignored SIGTERM (or the leader itself) are killed for good.
        if (exited === undefined) k.killedWith = 'SIGKILL';
        killGroup(pid, 'SIGKILL');
      }, graceMs);
      killTimer.unref();
    };

    try {
      child = spawn(o.file, [...o.args], { cwd: o.cwd, env: { ...o.env }, detached: true, stdio: ['pipe', 'pipe', 'pipe'], shell: false, windowsHide: true });
    } catch (e) {
      // Synchronous refusals: a NUL byte in an argument or variable, an invalid cwd type…
      const error = e as NodeJS.ErrnoException;
      settled = true;
      resolve({ end: { kind: 'spawnFailed', error: error.message, ...(error.code ? { errno: error.code } : {}) }, stdout: '', stderr: '', stdoutTruncated: false, stderrTruncated: false, durationMs: 0, pid: undefined });
      return;
    }
    const pid = child.pid;
    child.stdout?.on('data', (c: Buffer) => out.push(c));
    child.stderr?.on('data', (c: Buffer) => err.push(c));
    child.stdin?.on('error', () => undefined); // EPIPE when the script does not read its input
    child.on('error', (e: NodeJS.ErrnoException) => {
      // Start failures (ENOENT, EACCES): no pid. Later errors (a failed kill) change nothing.
      if (child.pid === undefined) finish({ kind: 'spawnFailed', error: e.message, ...(e.code ? { errno: e.code } : {}) });
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timeoutTimer);
      exited = code !== null ? { kind: 'exited', code } : { kind: 'signaled', signal: signal ?? 'unknown' };
      forgetEmptyGroup();
      // A background child may keep the pipes open: stop waiting for them after a short while
      // (after a kill sequence: once SIGKILL had its chance).
      drainTimer = setTimeout(
        () => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          finish(undefined);
        },
        killTimer !== undefined && killing !== undefined ? killing.graceMs + DRAIN_MS : DRAIN_MS,
      );
    });
    child.on('close', () => finish(undefined));

    if (pid !== undefined) {
      timeoutTimer = setTimeout(() => kill('timeout', o.killGraceMs), o.timeoutMs);
      stopRequest = (graceMs) => kill('stop', graceMs);
    }
    child.stdin?.end(Buffer.from(o.stdin.buffer, o.stdin.byteOffset, o.stdin.byteLength));
  });
  return {
    result,
    stop(killGraceMs: number): void {
      stopRequest?.(killGraceMs);
    },
  };
}
