import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createSchema } from '../../../src/bus/subscriptions/model.js';
import { schemaIssues } from '../../../src/core/schema-issues.js';

const SECRET = `whsec_${'A'.repeat(40)}`;
const base = { name: 'a', kinds: ['x'], delivery: { mode: 'push', url: 'https://sink.example/x' } };

describe('schemaIssues', () => {
  it('a secrets string (not an array) is one problem: expected array, no size message about the string', () => {
    const r = createSchema.safeParse({ ...base, delivery: { ...base.delivery, secrets: SECRET } });
    expect(r.success).toBe(false);
    // zod alone reports two issues here; the second one is the noise being dropped.
    expect(r.error!.issues.map((i) => i.code)).toEqual(['invalid_type', 'too_big']);
    expect(schemaIssues(r.error!.issues).map((i) => [i.code, i.path.join('.')])).toEqual([['invalid_type', 'delivery.secrets']]);
  });

  it('any value of the wrong type with a length gives only its type issue, for arrays and strings with bounds', () => {
    const schema = z.object({ list: z.array(z.string()).min(1).max(2).optional(), text: z.string().min(3).max(5).optional() });
    const wrongForList = fc.string({ minLength: 0, maxLength: 40 });
    const wrongForText = fc.array(fc.string(), { minLength: 0, maxLength: 9 });
    fc.assert(
      fc.property(wrongForList, wrongForText, (list, text) => {
        const r = schema.safeParse({ list, text });
        expect(r.success).toBe(false);
        const kept = schemaIssues(r.error!.issues);
        expect(kept.map((i) => [i.code, i.path.join('.')]).sort()).toEqual([['invalid_type', 'list'], ['invalid_type', 'text']]);
      }),
    );
  });

  it('a number beyond the safe integers on a bounded int field: only the declared bound (concurrency 1–1000), any such number', () => {
    fc.assert(
      fc.property(fc.double({ min: 2 ** 53, max: Number.MAX_VALUE, noNaN: true }), fc.boolean(), (big, negative) => {
        const r = createSchema.safeParse({ ...base, concurrency: negative ? -big : big });
        expect(r.success).toBe(false);
        const kept = schemaIssues(r.error!.issues).filter((i) => i.path.join('.') === 'concurrency');
        expect(kept.map((i) => i.message)).toEqual([negative ? 'Too small: expected number to be >=1' : 'Too big: expected number to be <=1000']);
      }),
    );
    // An int field without a bound of its own keeps the safe-integer one: it is then the only bound.
    const r = z.object({ n: z.number().int() }).safeParse({ n: 1e300 });
    expect(schemaIssues(r.error!.issues).map((i) => i.code)).toEqual(['too_big']);
  });

  it('sink headers: 20 distinct names pass, a 21st is "at most 20"; a name twice (any case) is named alone, not also counted', () => {
    const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`X-H${i}`, 'v']));
    const messages = (headers: Record<string, string>): string[] => {
      const r = createSchema.safeParse({ ...base, delivery: { ...base.delivery, headers } });
      return r.success ? [] : schemaIssues(r.error.issues).map((i) => i.message);
    };
    expect(messages(twenty)).toEqual([]);
    expect(messages({ ...twenty, 'X-H20': 'v' })).toEqual(['at most 20 headers']);
    expect(messages({ ...twenty, 'x-h0': 'w' })).toEqual(['the same header twice (names are case-insensitive)']);
  });

  it('keeps every issue of well-typed values and issues at other paths', () => {
    const schema = z.object({ list: z.array(z.string()).max(1), text: z.string().max(2) });
    const r = schema.safeParse({ list: ['a', 'b'], text: 7 });
    expect(schemaIssues(r.error!.issues).map((i) => [i.code, i.path.join('.')])).toEqual([
      ['too_big', 'list'],
      ['invalid_type', 'text'],
    ]);
  });
});
