/**
 * A partner with `keys: []` (or no `keys`) in PARTNERS_FILE is loaded, not refused: emptying a
 * partner's keys is how an operator revokes it, and a refused file would keep its old keys valid.
 * Without OIDC no request can authenticate as it, so the gateway and `config check` name it
 * (partnersWithoutCredentials, one wording: withoutCredentialsMessage). With OIDC it is an
 * OIDC-only partner, nothing to say. Spec: docs/security.md "The partners file".
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { parsePartners, partnersWithoutCredentials, withoutCredentialsMessage } from '../../../src/http/auth/index.js';

const H1 = createHash('sha256').update('key-one', 'utf8').digest('hex');
const FILE = `partners:
  - id: acme
    keys: [{ sha256: ${H1} }]
  - id: globex
    keys: []
  - id: initech
`;

describe('a partner without keys', () => {
  const partners = parsePartners(FILE, 'p.yaml', loadCatalog(), {});

  it('is loaded with the others (not refused)', () => {
    expect(partners.map((p) => [p.id, p.keyHashes.length])).toEqual([['acme', 1], ['globex', 0], ['initech', 0]]);
  });

  it('without OIDC: named with its place in the file, keys empty or absent alike', () => {
    expect(partnersWithoutCredentials(partners, false)).toEqual([
      { id: 'globex', field: 'partners[1].keys' },
      { id: 'initech', field: 'partners[2].keys' },
    ]);
  });

  it('with OIDC: none (a partner without keys signs in with tokens naming it)', () => {
    expect(partnersWithoutCredentials(partners, true)).toEqual([]);
  });

  it('the warning names the partner and the field and says its requests get 401, without a hash', () => {
    const m = withoutCredentialsMessage({ id: 'globex', field: 'partners[1].keys' });
    expect(m).toMatch(/^partner globex \(PARTNERS_FILE partners\[1\]\.keys\) has no keys and OIDC is off: it cannot authenticate, every request made as it gets 401 CEG_UNAUTHENTICATED/);
    expect(m).not.toContain(H1);
  });
});
