/**
 * parseJsonText on hostile and generated text: the duplicate-name search is linear whatever the
 * shape (a duplicate under 20 000 levels of nesting among 20 000 members took 28 s when the
 * pointer was rebuilt for every member), the pointer names the first repeated member wherever it
 * is, and the pointer and name echoed in the refusal are cut to MAX_POINTER_CHARS.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonText } from '../../../src/codec/json/json-text.js';
import { MAX_POINTER_CHARS, shortenPointer as shorten } from '../../../src/envelope/index.js';

/** A behavioural bound, not a speed target (no timing asserts): the quadratic search took 28–104 s on these bodies, the linear one well under 1 s. */
const BOUND_MS = 8_000; // below the unit project's 10 s test timeout, so a regression fails here with its figure

const esc = (t: string): string => t.replace(/~/g, '~0').replace(/\//g, '~1');

/** `depth` levels of `open`/`close` around one object of `keys` members whose first name repeats last. */
function adversarial(depth: number, keys: number, open: string, close: string): string {
  const members = Array.from({ length: keys }, (_, i) => `"k${i}":1`).join(',');
  return `${open.repeat(depth)}{${members},"k0":2}${close.repeat(depth)}`;
}

describe('parseJsonText: linear duplicate search', () => {
  // Before the fix: 28 s for the first shape (cost = depth × members); after: tens of ms. The bound
  // is 5 s so a slow CI machine cannot fail it, while the quadratic search cannot pass it.
  it.each([
    ['objects', '{"a":', '}', '/a'],
    ['arrays', '[', ']', '/0'],
    ['objects in arrays', '[{"a":', '}]', '/0/a'],
  ])('finds a duplicate under 20 000 levels of %s among 20 000 members in seconds, not minutes, the pointer cut to %s', (_what, open, close, step) => {
    const depth = 20_000;
    const text = adversarial(open === '[{"a":' ? depth / 2 : depth, 20_000, open, close);
    const started = performance.now();
    const r = parseJsonText(Buffer.from(text));
    const ms = performance.now() - started;
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(ms).toBeLessThan(BOUND_MS);
    expect(r.pointer).toHaveLength(MAX_POINTER_CHARS - 1);
    expect(r.pointer!.startsWith(step.repeat(10))).toBe(true);
    expect(r.pointer!.endsWith(`${step}/k0`)).toBe(true);
    expect(r.pointer).toContain('…');
    expect(r.reason.length).toBeLessThan(2 * MAX_POINTER_CHARS + 200);
  });

  it('takes time proportional to the text, not to depth × members: generated shapes of 300 KB stay within seconds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20_000 }), fc.constantFrom<[string, string]>(['{"a":', '}'], ['[', ']'], ['{"a":[', ']}']), (depth, [open, close]) => {
        const keys = Math.max(1, Math.floor((300_000 - depth * (open.length + close.length)) / 8));
        const started = performance.now();
        const r = parseJsonText(adversarial(depth, keys, open, close));
        expect(r.ok).toBe(false);
        expect(performance.now() - started).toBeLessThan(BOUND_MS);
      }),
      { numRuns: 8 },
    );
  });
});

/** A JSON tree with unique names, and the text of it with the member `name` repeated in the object at `target`. */
type Tree = null | number | string | boolean | Tree[] | { [k: string]: Tree };

/** Every object of `tree` that has a member, with its path (reference tokens, unescaped), in text order. */
function objectsOf(tree: Tree, path: string[] = [], out: { path: string[]; obj: Record<string, Tree> }[] = []): { path: string[]; obj: Record<string, Tree> }[] {
  if (Array.isArray(tree)) tree.forEach((c, i) => objectsOf(c, [...path, String(i)], out));
  else if (typeof tree === 'object' && tree !== null) {
    if (Object.keys(tree).length > 0) out.push({ path, obj: tree });
    for (const [k, c] of Object.entries(tree)) objectsOf(c, [...path, k], out);
  }
  return out;
}

/** JSON text of `tree`; in `target`, after its last member, `name` again — written with \u escapes when `escaped`. */
function writeWithDuplicate(tree: Tree, target: object, name: string, escaped: boolean): string {
  if (Array.isArray(tree)) return `[${tree.map((c) => writeWithDuplicate(c, target, name, escaped)).join(',')}]`;
  if (typeof tree !== 'object' || tree === null) return JSON.stringify(tree);
  const members = Object.entries(tree).map(([k, c]) => `${JSON.stringify(k)}:${writeWithDuplicate(c, target, name, escaped)}`);
  if (tree === target) {
    const spelled = escaped ? `"${Array.from({ length: name.length }, (_, i) => `\\u${name.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')}"` : JSON.stringify(name);
    members.push(`${spelled}:"again"`);
  }
  return `{${members.join(',')}}`;
}

describe('parseJsonText: duplicates found anywhere (generated)', () => {
  const key = fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom('a/b', '~', '~1', '/', '', '0', 'é', '\u{1F600}'));
  const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.oneof(fc.constant(null), fc.integer(), fc.string({ maxLength: 4 }), fc.boolean()),
      fc.array(tie('node'), { maxLength: 4 }),
      fc.dictionary(key, tie('node'), { maxKeys: 4 }),
    ),
  })).node;

  it('names the first repeated member by its JSON pointer, in objects and arrays at any depth, names escaped or not', () => {
    fc.assert(
      fc.property(tree, fc.nat(), fc.nat(), fc.boolean(), fc.array(key, { maxLength: 40 }), (t, whichObject, whichName, escaped, wrapping) => {
        // Wrap the tree under generated names so that pointers also get long (cut past 256 characters).
        let doc: Tree = t;
        for (const k of wrapping) doc = { [k]: doc };
        const objects = objectsOf(doc);
        fc.pre(objects.length > 0);
        const { path, obj } = objects[whichObject % objects.length]!;
        const names = Object.keys(obj);
        const name = names[whichName % names.length]!;
        const r = parseJsonText(writeWithDuplicate(doc, obj, name, escaped));
        expect(r.ok).toBe(false);
        if (r.ok) return;
        const full = [...path, name].map((tok) => `/${esc(tok)}`).join('');
        expect(r.pointer).toBe(shorten(full));
        expect(r.pointer!.length).toBeLessThanOrEqual(MAX_POINTER_CHARS);
        expect(r.reason).toContain(`"${shorten(name)}" appears more than once`);
      }),
      { numRuns: 500 },
    );
  });

  it('finds nothing in text without duplicates (generated)', () => {
    fc.assert(
      fc.property(tree, (t) => {
        expect(parseJsonText(JSON.stringify(t))).toEqual({ ok: true, value: JSON.parse(JSON.stringify(t)) as unknown });
      }),
      { numRuns: 300 },
    );
  });

  it('cuts a long pointer around "…", never inside a surrogate pair', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 0, maxLength: 400 }), (s) => {
        const cut = shorten(s);
        if (s.length <= MAX_POINTER_CHARS) expect(cut).toBe(s);
        else {
          expect(cut.length).toBeLessThanOrEqual(MAX_POINTER_CHARS);
          expect(cut).toContain('…');
        }
        expect((cut as unknown as { isWellFormed(): boolean }).isWellFormed()).toBe(true);
      }),
    );
  });
});
