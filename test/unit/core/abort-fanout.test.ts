/** One 'abort' listener per shared signal however many wait (the ingress's MaxListenersExceededWarning, issue 8 bench). */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { onAbort } from '../../../src/core/abort-fanout.js';

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
