/**
 * The gateway under test as a separate child process (`ce-gateway serve`), on a free loopback
 * port, with the stack's Kafka and registry; plus CPU-time sampling of that process from /proc.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { resolve } from 'node:path';

export interface GatewayProcess {
  readonly url: string;
  readonly pid: number;
  /** How the child was started, for the report. */
  readonly command: string;
  /** User + system CPU time the child and its own children (GATEWAY_WORKERS > 1: the workers) have used so far, ms (Linux /proc; NaN elsewhere). */
  cpuMs(): number;
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (asked from the kernel, then released). */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      s.close(() => ok(port));
    });
  });
}

const CLK_TCK = 100; // Linux USER_HZ on every platform Node supports

/** utime + stime of a process, ms, from /proc/<pid>/stat. */
export function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/** The pids of `pid`'s children (a cluster primary's workers), from /proc; empty where there is none. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const d of entries) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** {@link procCpuMs} of a process plus its children's (a worker that died since is no longer counted). */
export function procTreeCpuMs(pid: number): number {
  return childPids(pid).map(procCpuMs).filter((ms) => !Number.isNaN(ms)).reduce((a, b) => a + b, procCpuMs(pid));
}

/** `GET /readyz` on a connection of its own: the status, or 0 when nothing answered within 3 s. */
function readyzOnNewConnection(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = get(`${url}/readyz`, { agent: false, timeout: 3000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

/**
 * The node flags of a checkout's `npm start` (`"start": "exec node <flags> dist/cli/main.js serve"`
 * in its package.json), so the bench runs each gateway, this tree's or a baseline's, as that
 * checkout ships it (issue 14: a V8 flag is part of what is measured). None when not found.
 */
export function startNodeFlags(root: string): string[] {
  try {
    const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { scripts?: { start?: unknown } };
    const start = pkg.scripts?.start;
    const m = typeof start === 'string' ? /\bnode((?:\s+--[a-z0-9-]+(?:=[\w.-]+)?)*)\s+dist\/cli\/main\.js\b/.exec(start) : null;
    return m === null ? [] : m[1]!.trim().split(/\s+/).filter((f) => f !== '');
  } catch {
    return [];
  }
}

/**
 * Starts the gateway: `node <npm start's flags> dist/cli/main.js serve` when built (`npm run build`), else
 * `node --import tsx src/cli/main.ts serve`. Resolves when `GET /readyz` answers 200.
 * Throws when the child exits early or is not ready within `readyTimeoutMs`.
 */
export async function startGatewayProcess(opts: {
  root: string;
  env: Record<string, string>;
  readyTimeoutMs: number;
  preferTsx: boolean;
  /** When set, the child writes a V8 CPU profile (.cpuprofile) into this folder when it exits. */
  cpuProfileDir?: string;
  /**
   * GATEWAY_WORKERS > 1: ready only once this many `GET /readyz` in a row, each on a new
   * connection (the primary hands connections round-robin), answered 200, so no worker still
   * starting answers the load with 503. Default 1.
   */
  readyAnswers?: number;
}): Promise<GatewayProcess> {
  const port = await freePort();
  const dist = resolve(opts.root, 'dist/cli/main.js');
  const useDist = !opts.preferTsx && existsSync(dist);
  const prof = [...startNodeFlags(opts.root), ...(opts.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfileDir}`])];
  const [cmd, args] = useDist
    ? [process.execPath, [...prof, dist, 'serve']]
    : // `node --import tsx` (not the tsx CLI, which forks another process): one process to sample and profile.
      [process.execPath, [...prof, '--import', 'tsx', resolve(opts.root, 'src/cli/main.ts'), 'serve']];
  const child: ChildProcess = spawn(cmd, args, {
    cwd: opts.root,
    env: { ...process.env, ...opts.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start the gateway process');
  let exited: string | undefined;
  const exit = new Promise<void>((r) =>
    child.once('exit', (code, signal) => {
      exited = `exited (code ${String(code)}, signal ${String(signal)})`;
      r();
    }),
  );
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) if (line.trim() !== '') process.stderr.write(`[gateway] ${line}\n`);
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (exited === undefined) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exit;
    clearTimeout(timer);
  };

  const deadline = Date.now() + opts.readyTimeoutMs;
  for (;;) {
    if (exited !== undefined) throw new Error(`the gateway ${exited} before it was ready`);
    let ready = 0;
    while (ready < (opts.readyAnswers ?? 1) && (await readyzOnNewConnection(url)) === 200) ready++;
    if (ready === (opts.readyAnswers ?? 1)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the gateway was not ready within ${opts.readyTimeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    pid,
    command: ['node', ...prof, ...(useDist ? ['dist/cli/main.js'] : ['--import', 'tsx', 'src/cli/main.ts']), 'serve'].join(' '),
    cpuMs: () => procTreeCpuMs(pid),
    stop,
  };
}
