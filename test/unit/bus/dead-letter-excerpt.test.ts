/**
 * F7: the dead letter's `dlq_response_excerpt` (and `dlq_reason`) are cut on whole characters and
 * whole `\uXXXX` escapes. The control characters were escaped first and the result cut at 1 KiB,
 * which could leave `…\u0007\u00` at the end: a broken escape a JSON or escape-aware reader
 * refuses or misreads.
 */
import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_HEADERS } from '../../../src/bus/subscriber/index.js';
import { deadLetterHeaders } from '../../../src/bus/subscriber/failure-headers.js';

const header = (excerpt: string, reason = 'sink answered 500'): { excerpt: string; reason: string } => {
  const hs = deadLetterHeaders({ reason, attempts: 1, firstFailureMs: 0, lastFailureMs: 0, origin: { topic: 't', partition: 0, offset: 0n }, subscription: 's', failure: { sink: 'http://127.0.0.1/x', status: 500, excerpt } });
  const get = (name: string): Buffer => Buffer.from(hs.find(([k]) => k === name)![1]);
  return { excerpt: get(DEAD_LETTER_HEADERS.responseExcerpt).toString('utf8'), reason: get(DEAD_LETTER_HEADERS.reason).toString('utf8') };
};

/** true when every backslash in `s` starts a whole `\uXXXX` escape. */
const wholeEscapes = (s: string): boolean => s.replace(/\\u[0-9a-f]{4}/g, '').indexOf('\\') === -1;

describe('the dead letter excerpt is cut on a whole escape or character', () => {
  it.each(Array.from({ length: 8 }, (_, k) => 1016 + k))('%i plain bytes then control characters: ≤ 1 KiB, no broken escape at the end', (plain) => {
    const { excerpt } = header('a'.repeat(plain) + '\u0007'.repeat(20));
    expect(Buffer.byteLength(excerpt)).toBeLessThanOrEqual(1024);
    expect(wholeEscapes(excerpt)).toBe(true);
    expect(excerpt).toMatch(/^a+(\\u0007)*$/);
    // As much as fits: fewer than one escape's 6 bytes are left unused.
    expect(1024 - Buffer.byteLength(excerpt)).toBeLessThan(6);
  });

  it('mixed multi-byte characters and escapes: never a character or escape cut in two', () => {
    const text = Array.from({ length: 400 }, (_, i) => ['é', '\u001b', '€', '😀', 'x'][i % 5]).join('');
    const { excerpt } = header(text);
    expect(Buffer.byteLength(excerpt)).toBeLessThanOrEqual(1024);
    expect(wholeEscapes(excerpt)).toBe(true);
    expect(excerpt).not.toContain('\uFFFD');
    expect(text.split('\u001b').join('\\u001b').startsWith(excerpt)).toBe(true);
  });

  it('a short excerpt is kept whole, escaped', () => {
    expect(header('bad\u0000thing').excerpt).toBe('bad\\u0000thing');
  });

  it('the reason is cut at 4,000 characters on a whole escape too', () => {
    const { reason } = header('x', 'r'.repeat(3997) + '\u0001'.repeat(5));
    expect(reason.length).toBeLessThanOrEqual(4000);
    expect(wholeEscapes(reason)).toBe(true);
  });
});
