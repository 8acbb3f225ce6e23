/**
 * The cluster primary of `serve` with GATEWAY_WORKERS > 1 (src/cli/workers.ts), as a real process
 * with real workers (test/fixtures/cluster-primary.ts, cluster-worker.mjs): what it does when a
 * worker cannot start, when workers keep dying, and on SIGTERM when the workers drain or hang.
 * The whole gateway in workers (one port, metrics of all, a killed worker replaced) is
 * test/integration/workers.kafka.test.ts.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MAX_DEATHS, SHUTDOWN_MARGIN_MS } from '../../../src/cli/workers.js';

const ROOT = new URL('../../../', import.meta.url).pathname;

interface Run {
  readonly code: number | null;
  /** The primary's log lines (pino JSON). */
  readonly lines: readonly { msg?: string; code?: number | null }[];
  /** ms from SIGTERM (when sent) to the primary's exit. */
  readonly afterTermMs: number;
}

/**
 * Runs the primary over workers in `mode`; with `term`, sends it SIGTERM once both workers are up
 * (or `term`'s signals, each further one once the primary logged that it is stopping the workers).
 */
function run(mode: string, term: boolean | readonly NodeJS.Signals[], shutdownMs = 1000): Promise<Run> {
  const signals: readonly NodeJS.Signals[] = term === true ? ['SIGTERM'] : term === false ? [] : term;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/cluster-primary.ts'], {
      cwd: ROOT,
      env: { ...process.env, CEG_TEST_WORKER: mode, SHUTDOWN_TIMEOUT_MS: String(shutdownMs) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let termAt = 0;
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (signals.length > 0 && termAt === 0 && out.split('\n').filter((l) => l === 'up').length >= 2) {
        termAt = Date.now();
        child.kill(signals[0]);
      }
    });
    let sent = 1;
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
      if (sent < signals.length && err.includes('"msg":"stopping the workers"')) child.kill(signals[sent++]);
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(killer);
      const lines = err.split('\n').flatMap((l) => {
        try {
          return [JSON.parse(l) as { msg?: string; code?: number | null }];
        } catch {
          return [];
        }
      });
      resolve({ code, lines, afterTermMs: termAt === 0 ? Number.NaN : Date.now() - termAt });
    });
  });
}

const count = (r: Run, msg: string): number => r.lines.filter((l) => l.msg === msg).length;

describe('the cluster primary (GATEWAY_WORKERS > 1)', () => {
  it('a worker that exits 2 (cannot start) stops the others, and the primary exits 2', async () => {
    const r = await run('exit:2', false);
    expect(r.code).toBe(2);
    expect(count(r, 'a worker could not start (exit 2, see its error above); stopping the others')).toBeGreaterThanOrEqual(1);
    expect(count(r, 'a worker died; starting another')).toBe(0);
  }, 40_000);

  it('a dead worker is replaced, until more than MAX_DEATHS died within the window: then exit 1', async () => {
    const r = await run('exit:1', false);
    expect(r.code).toBe(1);
    expect(count(r, 'a worker died; starting another')).toBe(MAX_DEATHS);
    // Every death was a started worker (a restart still pending at the last death never starts).
    expect(count(r, 'worker started')).toBeGreaterThanOrEqual(MAX_DEATHS + 1);
    expect(count(r, 'workers keep dying; stopping the others')).toBe(1);
  }, 40_000);

  it('SIGTERM: every worker drains, and the primary exits 0 once all have', async () => {
    const r = await run('drain', true);
    expect(r.code).toBe(0);
    expect(r.lines.filter((l) => l.msg === 'worker exited').map((l) => l.code)).toEqual([0, 0]);
    expect(r.afterTermMs).toBeLessThan(SHUTDOWN_MARGIN_MS);
  }, 40_000);

  it('a second SIGINT (Ctrl-C again) kills the workers and exits 130 at once, as a single gateway does', async () => {
    const r = await run('hang', ['SIGINT', 'SIGINT'], 20_000);
    expect(r.code).toBe(130);
    // Not 1: the drain's bound (20 s here) did not end it.
    expect(count(r, 'interrupted again: killing the workers without finishing the drain')).toBe(1);
    expect(count(r, 'workers did not exit within SHUTDOWN_TIMEOUT_MS; killing them')).toBe(0);
  }, 40_000);

  it('SIGTERM with workers that never exit: killed after SHUTDOWN_TIMEOUT_MS + the margin, exit 1', async () => {
    const r = await run('hang', true, 200);
    expect(r.code).toBe(1);
    expect(count(r, 'workers did not exit within SHUTDOWN_TIMEOUT_MS; killing them')).toBe(1);
    expect(r.afterTermMs).toBeGreaterThanOrEqual(200 + SHUTDOWN_MARGIN_MS - 50);
  }, 40_000);
});
