/**
 * docs/security.md "Authentication" lists the routes a caller reaches without a key. Each path the
 * authentication lets through (`PUBLIC_PATHS`) is named there, so an asset made public (the
 * console's icon, 2026-12-07) cannot be left out of the list operators read to know what is open.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PUBLIC_PATHS } from '../../../src/http/auth/middleware.js';

const doc = readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'docs', 'security.md'), 'utf8');
const start = doc.indexOf('## Authentication');
/** The section's first paragraph: the list of open routes. */
const paragraph = doc.slice(start, doc.indexOf('\n\n', doc.indexOf('\n\n', start) + 2));
const named = new Set([...paragraph.matchAll(/`(\/[^`\s]*)`/g)].map((m) => m[1]!));

describe('docs/security.md names every public path', () => {
  it('has the list', () => {
    expect(start).toBeGreaterThan(-1);
    expect(named.size).toBeGreaterThan(5);
  });

  it('names each path the authentication lets through without a key', () => {
    expect([...PUBLIC_PATHS].filter((p) => !named.has(p))).toEqual([]);
  });
});
