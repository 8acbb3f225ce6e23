import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorCodes } from '../../../src/core/errors.js';

describe('docs/errors.md', () => {
  const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  it.each(errorCodes.map((c) => [c]))('documents %s', (code) => {
    expect(doc).toContain(`| \`${code}\` |`);
  });
  it('lists no code that does not exist', () => {
    const listed = [...doc.matchAll(/^\| `(CEG_[A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...errorCodes].sort());
  });
});
