import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withHandlerTimeout } from '../../../src/bus/subscriber/pipeline/timeout.js';
import { ack } from '../../../src/bus/subscriber/outcome.js';

// The call's signal is made only when read (issue 8: one AbortController per record was the
// pipeline's largest cost); these pin down that reading it late changes nothing a handler sees.
describe('withHandlerTimeout', () => {
  it('resolves with the handler outcome and leaves no listener on the stop signal', async () => {
    const stop = new AbortController();
    let seen: AbortSignal | undefined;
    const out = await withHandlerTimeout(1000, stop.signal, (call) => {
      seen = call.signal;
      return Promise.resolve(ack);
    });
    expect(out).toBe(ack);
    stop.abort(new Error('later'));
    expect(seen?.aborted).toBe(false); // the call had ended: the stop no longer reaches it
  });

  it('retries at the timeout and aborts the signal, whether it was read before or after', async () => {
    const stop = new AbortController();
    const before: AbortSignal[] = [];
    let release: () => void = () => {};
    const out = await withHandlerTimeout(20, stop.signal, (call) => {
      before.push(call.signal);
      return new Promise((r) => (release = () => r(ack)));
    });
    expect(out.kind).toBe('retry');
    expect(before[0]!.aborted).toBe(true);
    expect((before[0]!.reason as { code?: string }).code).toBe('CEG_DELIVERY_TIMEOUT');
    release();

    let late: CallLike | undefined;
    const out2 = await withHandlerTimeout(20, stop.signal, (call) => {
      late = call;
      return new Promise(() => {});
    });
    expect(out2.kind).toBe('retry');
    expect(late!.signal.aborted).toBe(true); // first read after the timeout: born aborted
  });

  it('passes a stop that happens during the call to the signal, read before or after the stop', async () => {
    const stop = new AbortController();
    const reason = new Error('stopping');
    let early: AbortSignal | undefined;
    let call2: CallLike | undefined;
    const p = withHandlerTimeout(5000, stop.signal, (call) => {
      early = call.signal;
      return new Promise((r) => setTimeout(() => r(ack), 30));
    });
    const q = withHandlerTimeout(5000, stop.signal, (call) => {
      call2 = call;
      return new Promise((r) => setTimeout(() => r(ack), 30));
    });
    stop.abort(reason);
    expect(early!.aborted).toBe(true);
    expect(early!.reason).toBe(reason);
    expect(call2!.signal.reason).toBe(reason);
    await Promise.all([p, q]);
  });

  it('without a finite bound, hands the stop signal itself', async () => {
    const stop = new AbortController();
    await withHandlerTimeout(Infinity, stop.signal, (call) => {
      expect(call.signal).toBe(stop.signal);
      return Promise.resolve(ack);
    });
  });

  it('a handler that never returns does not keep the process alive after its subscription stopped (it did, up to handlerTimeoutMs)', async () => {
    const root = resolve(import.meta.dirname, '..', '..', '..');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/hung-handler-exit.ts'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let closedAt: number | undefined;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (closedAt === undefined && stdout.includes('closed')) closedAt = performance.now();
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // The handler's bound is 60 s: a process held by its timer ends only then (this test's timeout first).
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    expect(code, stderr).toBe(0);
    expect(closedAt, stdout + stderr).toBeDefined();
    expect(performance.now() - closedAt!).toBeLessThan(20_000);
  }, 40_000);
});

type CallLike = { readonly signal: AbortSignal };
