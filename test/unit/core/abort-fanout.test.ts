/** One 'abort' listener per shared signal however many wait (the ingress's MaxListenersExceededWarning, issue 8 bench). */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkedSignal, onAbort } from '../../../src/core/abort-fanout.js';

describe('onAbort', () => {
  it('many waiters share one listener; withdrawn waiters are not called; the rest get the reason once', () => {
    const ac = new AbortController();
    const got: unknown[] = [];
    const withdraw = Array.from({ length: 50 }, (_, i) => onAbort(ac.signal, (r) => got.push([i, r])));
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    for (let i = 0; i < 50; i += 2) withdraw[i]!();
    withdraw[0]!(); // twice: harmless
    ac.abort('bye');
    ac.abort('again');
    expect(got).toEqual(Array.from({ length: 25 }, (_, k) => [2 * k + 1, 'bye']));
  });

  it('an aborted signal calls at once', () => {
    const ac = new AbortController();
    ac.abort('gone');
    let reason: unknown;
    onAbort(ac.signal, (r) => (reason = r))();
    expect(reason).toBe('gone');
  });
});

describe('linkedSignal', () => {
  it('aborts with the first source\'s reason, at once when a source has aborted already', () => {
    const a = new AbortController();
    const b = new AbortController();
    const l = linkedSignal([a.signal, b.signal]);
    expect(l.signal.aborted).toBe(false);
    b.abort(new Error('b went'));
    expect(l.signal.aborted).toBe(true);
    expect((l.signal.reason as Error).message).toBe('b went');
    a.abort(new Error('a went'));
    expect((l.signal.reason as Error).message).toBe('b went');
    const gone = new AbortController();
    gone.abort(new Error('before'));
    const late = linkedSignal([new AbortController().signal, gone.signal]);
    expect((late.signal.reason as Error).message).toBe('before');
  });

  it('no longer follows its sources once released (a long-lived source keeps nothing of it)', () => {
    const long = new AbortController();
    const links = Array.from({ length: 100 }, () => linkedSignal([long.signal, new AbortController().signal]));
    for (const l of links) l.release();
    links[0]!.release(); // twice: harmless
    long.abort(new Error('closing'));
    expect(links.every((l) => !l.signal.aborted)).toBe(true);
  });
});
