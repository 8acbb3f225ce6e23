/** A partners file holding the SHA-256 of the empty string is refused at load, naming the entry (no Bearer credential is empty). */
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { parsePartners } from '../../../src/http/auth/index.js';

const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const OTHER = 'a'.repeat(64);

describe('parsePartners: the hash of an empty key', () => {
  it.each([
    ['inline', `partners: [{ id: acme, keys: [{ sha256: ${OTHER} }, { sha256: ${EMPTY} }] }]`, {}, {}],
    ['from the environment', 'partners: [{ id: acme, keys: [{ sha256: ' + OTHER + ' }, { sha256Env: K }] }]', { K: EMPTY }, {}],
    ['from a file', 'partners: [{ id: acme, keys: [{ sha256: ' + OTHER + ' }, { sha256File: /k }] }]', {}, { '/k': `${EMPTY}\n` }],
  ] as const)('%s: refused naming partners[0].keys[1], without the hash', (_how, text, env, files) => {
    let err: unknown;
    try {
      parsePartners(text, 'p.yaml', loadCatalog(), env, (p) => (files as Record<string, string>)[p] ?? '');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    const problems = (err as GatewayError).details.problems as string[];
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^partners\[0\]\.keys\[1\]: the SHA-256 of the empty string/);
    expect(JSON.stringify((err as GatewayError).details) + (err as GatewayError).message).not.toContain(EMPTY);
  });
});
