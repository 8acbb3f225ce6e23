/** LogThrottle: the first line at once, the next after the interval with the count held back. */
import { describe, expect, it } from 'vitest';
import { LogThrottle } from '../../../src/core/log-throttle.js';

describe('LogThrottle', () => {
  it('writes one line per interval and counts the rest', async () => {
    const t = new LogThrottle(40);
    const written: number[] = [];
    for (let i = 0; i < 10; i++) t.run((n) => written.push(n));
    expect(written).toEqual([0]);
    await new Promise((r) => setTimeout(r, 60));
    expect(t.run((n) => written.push(n))).toBe(true);
    expect(written).toEqual([0, 9]);
  });
});
