/** validTraceparent: the W3C Trace Context rules for a traceparent from outside (Level 1 §3.2, §4.3). */
import { describe, expect, it } from 'vitest';
import { validTraceparent } from '../../../src/observability/index.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('validTraceparent', () => {
  it('keeps a version 00 value as it is', () => {
    expect(validTraceparent(`00-${TRACE}-${PARENT}-01`)).toBe(`00-${TRACE}-${PARENT}-01`);
    expect(validTraceparent(`00-${TRACE}-${PARENT}-00`)).toBe(`00-${TRACE}-${PARENT}-00`);
  });

  it('reads a higher version by its first four fields and continues it as version 00', () => {
    expect(validTraceparent(`01-${TRACE}-${PARENT}-01`)).toBe(`00-${TRACE}-${PARENT}-01`);
    expect(validTraceparent(`cc-${TRACE}-${PARENT}-01-what-the-future-holds`)).toBe(`00-${TRACE}-${PARENT}-01`);
    expect(validTraceparent(`fe-${TRACE}-${PARENT}-03-`)).toBe(`00-${TRACE}-${PARENT}-03`);
  });

  it('refuses what the spec says is invalid', () => {
    const refused = [
      `ff-${TRACE}-${PARENT}-01`, // version ff
      `00-${TRACE}-${PARENT}-01-extra`, // version 00 is exactly 55 characters
      `01-${TRACE}-${PARENT}-01x`, // after the flags only '-' may follow
      `00-${'0'.repeat(32)}-${PARENT}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${PARENT}-01`,
      `0-${TRACE}-${PARENT}-01`,
      `00-${TRACE.slice(1)}-${PARENT}-01`,
      `01-${TRACE}-${PARENT}-01-${'x'.repeat(600)}`,
      '',
      undefined,
      42,
    ];
    for (const v of refused) expect(validTraceparent(v), String(v)).toBeUndefined();
  });

  it('any value: undefined or a version 00 traceparent of 55 characters (property)', () => {
    const hex = '0123456789abcdefXYZ-';
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let i = 0; i < 2000; i++) {
      const base = `${hex[rnd(16)]}${hex[rnd(16)]}-${TRACE}-${PARENT}-0${rnd(10)}`;
      const chars = base.split('');
      for (let k = rnd(3); k > 0; k--) chars[rnd(chars.length)] = hex[rnd(hex.length)]!;
      const v = chars.join('') + (rnd(4) === 0 ? `-${'a'.repeat(rnd(10))}` : '');
      const out = validTraceparent(v);
      if (out !== undefined) expect(out).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);
    }
  });
});
