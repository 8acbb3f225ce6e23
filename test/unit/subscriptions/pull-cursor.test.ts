/**
 * Pull cursors (issue 9): a round trip returns the positions signed; any change of the text, a
 * cursor of another subscription (or an earlier one of the same name) and one signed with another
 * key are refused with CEG_INVALID_CURSOR naming `cursor`.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEVELOPMENT_CURSOR_KEY_ENV, cursorSigner, deriveCursorKey, developmentCursorKey, developmentKey } from '../../../src/bus/subscriptions/index.js';
import type { CursorOwner } from '../../../src/bus/subscriptions/index.js';
import { isGatewayError } from '../../../src/core/errors.js';

const owner: CursorOwner = { group: 'ce-gateway.sub.anonymous.orders', createdAt: '2026-12-01T10:00:00.000Z' };
const signer = cursorSigner(deriveCursorKey(randomBytes(32)));

const position = fc.record({
  topic: fc.stringMatching(/^[A-Za-z0-9._-]{1,60}$/),
  partition: fc.integer({ min: 0, max: 9999 }),
  offset: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
});
const positions = fc.uniqueArray(position, { maxLength: 40, selector: (p) => `${p.topic}/${p.partition}` });

function refused(f: () => unknown): boolean {
  try {
    f();
    return false;
  } catch (err) {
    return isGatewayError(err, 'CEG_INVALID_CURSOR') && err.details.field === 'cursor' && !err.retriable;
  }
}

const sorted = <T extends { topic: string; partition: number }>(ps: readonly T[]): T[] => [...ps].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));

describe('pull cursors', () => {
  it('round-trips any positions, as text fit for a header and an SSE id', () => {
    fc.assert(
      fc.property(positions, (ps) => {
        const text = signer.sign(owner, ps);
        expect(text).toMatch(/^c1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
        expect(signer.verify(owner, text)).toEqual(sorted(ps));
      }),
    );
  });

  it('refuses any single-character change', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(positions, fc.nat(), fc.nat(), (ps, at, by) => {
        const text = signer.sign(owner, ps);
        const i = at % text.length;
        const c = alphabet[(alphabet.indexOf(text[i]!) + 1 + (by % (alphabet.length - 1))) % alphabet.length]!;
        const changed = text.slice(0, i) + c + text.slice(i + 1);
        fc.pre(changed !== text);
        // Also a change of only the 2 spare bits of the MAC's last base64url character (it decodes
        // to the same MAC): a cursor has one spelling (tester F7).
        expect(refused(() => signer.verify(owner, changed))).toBe(true);
      }),
    );
  });

  it("refuses another subscription's cursor, an earlier one of the same name, and another key's", () => {
    const ps = [{ topic: 't', partition: 0, offset: 5n }];
    expect(refused(() => signer.verify({ ...owner, group: 'ce-gateway.sub.anonymous.other' }, signer.sign(owner, ps)))).toBe(true);
    expect(refused(() => signer.verify({ ...owner, createdAt: '2026-12-01T11:00:00.000Z' }, signer.sign(owner, ps)))).toBe(true);
    expect(refused(() => signer.verify(owner, cursorSigner(deriveCursorKey(randomBytes(32))).sign(owner, ps)))).toBe(true);
    for (const junk of ['', 'c1', 'c1..', 'c2.e30.' + 'A'.repeat(43), 'x'.repeat(20_000)]) expect(refused(() => signer.verify(owner, junk)), junk.slice(0, 20)).toBe(true);
  });

  it('derives the same key from the same secrets key on every instance, another from another', () => {
    const k = randomBytes(32);
    const a = cursorSigner(deriveCursorKey(k));
    const b = cursorSigner(deriveCursorKey(Buffer.from(k)));
    const text = a.sign(owner, [{ topic: 't', partition: 1, offset: 2n }]);
    expect(b.verify(owner, text)).toEqual([{ topic: 't', partition: 1, offset: 2n }]);
    expect(Buffer.from(deriveCursorKey(k)).equals(k)).toBe(false); // a key of its own, not the sealing key
  });
});

describe('the development cursor key', () => {
  it('is random per run, never the one derived from the well-known development key, and taken from the primary when it hands one', () => {
    const a = developmentCursorKey({});
    const b = developmentCursorKey({});
    expect(a).toHaveLength(32);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false);
    expect(Buffer.from(a).equals(Buffer.from(deriveCursorKey(developmentKey())))).toBe(false);
    const handed = randomBytes(32);
    expect(Buffer.from(developmentCursorKey({ [DEVELOPMENT_CURSOR_KEY_ENV]: handed.toString('hex') })).equals(handed)).toBe(true);
    // Not 64 lowercase hex digits: not taken (a random key instead).
    expect(Buffer.from(developmentCursorKey({ [DEVELOPMENT_CURSOR_KEY_ENV]: 'ab' })).equals(Buffer.from('ab', 'hex'))).toBe(false);
  });
});
