import { describe, expect, it } from 'vitest';
import { classifyEnd, defaultExitCodePolicy, describeEnd, exitCodePolicy } from '../../../src/connectors/index.js';
import type { ProcessEnd } from '../../../src/connectors/index.js';

const exited = (code: number): ProcessEnd => ({ kind: 'exited', code });

describe('exit code mapping', () => {
  it('maps 0 → handled, 75 → retry, every other code → dead letter by default', () => {
    const p = defaultExitCodePolicy;
    expect(classifyEnd(exited(0), p)).toBe('handled');
    expect(classifyEnd(exited(75), p)).toBe('retry');
    expect([1, 2, 64, 65, 74, 76, 126, 127, 255].map((c) => classifyEnd(exited(c), p))).toEqual(Array(9).fill('deadLetter'));
  });

  it('retries timeouts, deaths by signal and start failures by default', () => {
    const p = defaultExitCodePolicy;
    expect(classifyEnd({ kind: 'timedOut', timeoutMs: 100, killedWith: 'SIGTERM' }, p)).toBe('retry');
    expect(classifyEnd({ kind: 'signaled', signal: 'SIGKILL' }, p)).toBe('retry');
    expect(classifyEnd({ kind: 'spawnFailed', error: 'spawn x ENOENT', errno: 'ENOENT' }, p)).toBe('retry');
  });

  it('merges configured codes over the defaults and replaces the other entries', () => {
    const p = exitCodePolicy({ exitCodes: { 65: 'retry', 75: 'deadLetter', 3: 'handled' }, otherExitCodes: 'retry', onTimeout: 'deadLetter', onSignal: 'deadLetter', onSpawnFailure: 'deadLetter' });
    expect([0, 3, 65, 75, 1].map((c) => classifyEnd(exited(c), p))).toEqual(['handled', 'handled', 'retry', 'deadLetter', 'retry']);
    expect(classifyEnd({ kind: 'timedOut', timeoutMs: 5, killedWith: 'SIGKILL' }, p)).toBe('deadLetter');
    expect(classifyEnd({ kind: 'signaled', signal: 'SIGSEGV' }, p)).toBe('deadLetter');
    expect(classifyEnd({ kind: 'spawnFailed', error: 'EACCES' }, p)).toBe('deadLetter');
    // The defaults are not changed by an override.
    expect(classifyEnd(exited(75), defaultExitCodePolicy)).toBe('retry');
    expect(Object.isFrozen(p)).toBe(true);
  });

  it('describes each end in words', () => {
    expect(describeEnd(exited(65))).toBe('exited with code 65');
    expect(describeEnd({ kind: 'timedOut', timeoutMs: 250, killedWith: 'SIGKILL' })).toBe('timed out after 250 ms and was killed (SIGKILL)');
    expect(describeEnd({ kind: 'signaled', signal: 'SIGSEGV' })).toBe('was killed by SIGSEGV');
    expect(describeEnd({ kind: 'spawnFailed', error: 'spawn /x ENOENT' })).toBe('could not be started: spawn /x ENOENT');
  });
});
