import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../../', import.meta.url).pathname;

/**
 * Starts the fixture, sends `signals` once it is ready (the first at once, each further one 200 ms
 * later), and resolves with its exit code, output and time after the first signal.
 */
function run(mode: 'finish' | 'hang', timeoutMs: number, signals: readonly NodeJS.Signals[] = ['SIGTERM']): Promise<{ code: number | null; out: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/signals-child.ts', mode, String(timeoutMs)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let sentAt = 0;
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (sentAt === 0 && out.includes('ready\n')) {
        sentAt = Date.now();
        signals.forEach((sig, i) => setTimeout(() => child.kill(sig), i * 200));
      }
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, out, ms: Date.now() - sentAt }));
  });
}

describe('onSignals: the drain is bounded by SHUTDOWN_TIMEOUT_MS', () => {
  it('exits 0 once stopping finishes', async () => {
    const r = await run('finish', 5000);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/"msg":"shutting down"/);
    expect(r.out).toMatch(/"signal":"SIGTERM","tookMs":\d+,"msg":"stopped"/); // a clean exit says so
  }, 20_000);

  it('exits 1 with its reason when stopping outlasts the timeout', async () => {
    const r = await run('hang', 300);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/shutdown did not finish within SHUTDOWN_TIMEOUT_MS/);
    expect(r.ms).toBeGreaterThanOrEqual(250);
    expect(r.ms).toBeLessThan(5000);
  }, 20_000);

  it('a second SIGTERM (a process-group kill on top of a direct one) does not cut the drain', async () => {
    const r = await run('hang', 1200, ['SIGTERM', 'SIGTERM']);
    expect(r.code).toBe(1); // ended by the drain's own bound, not by the second signal
    expect(r.out).toMatch(/"msg":"already shutting down"/);
    expect(r.out).toMatch(/shutdown did not finish within SHUTDOWN_TIMEOUT_MS/);
    expect(r.ms).toBeGreaterThanOrEqual(1100);
  }, 20_000);

  it('a second SIGINT (Ctrl-C again) exits 130 at once', async () => {
    const r = await run('hang', 10_000, ['SIGINT', 'SIGINT']);
    expect(r.code).toBe(130);
    expect(r.out).toMatch(/interrupted again: exiting without finishing the drain/);
    expect(r.ms).toBeLessThan(5000);
  }, 20_000);
});
