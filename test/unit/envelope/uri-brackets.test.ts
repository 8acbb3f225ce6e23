/**
 * `[` and `]` in URI-reference (`source`, `dataref`) and URI (`dataschema`) attributes: RFC 3986
 * allows them only around an IP-literal host (§3.2.2); anywhere else they must be percent-encoded.
 * `http://[::1` and `http://a]b/` were accepted and delivered unchanged although the error text
 * promises an RFC 3986 URI-reference. Generated: valid references of every form (absolute with
 * IPv4, IPv6 or reg-name hosts, network-path, path-only, URNs), each with one bracket inserted
 * at every position, or a bracket pair around a slice outside the host; IPv6 literals checked
 * against node:net's own IPv6 parser.
 */
import { isIPv6 } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { uriProblem, uriReferenceProblem, validateEnvelope } from '../../../src/envelope/index.js';
import type { Envelope } from '../../../src/envelope/index.js';

const base = { specversion: '1.0', id: 'e-1', source: 'urn:caishen:pdsp:host-1', type: 'com.caishen.bar.closed' } as const;

function env(attrs: Record<string, unknown>): Envelope {
  return { attributes: attrs } as unknown as Envelope;
}

const authority = { withIPv6: true, withIPv4: true, withPort: true, withUserInfo: true };
const absolute = fc.webUrl({ withQueryParameters: true, withFragments: true, authoritySettings: authority, validSchemes: ['http', 'https', 'coap+tcp', 'x-a.b'] });
/** Valid URI-references without a bracket outside an IP-literal host. */
const references = fc.oneof(
  absolute,
  fc.tuple(fc.webAuthority(authority), fc.webPath()).map(([a, p]) => `//${a}${p}`),
  fc.tuple(fc.webPath(), fc.webQueryParameters(), fc.webFragments()).map(([p, q, f]) => `${p}?${q}#${f}`),
  fc.array(fc.webSegment(), { minLength: 1 }).map((s) => `urn:${s.join(':')}`),
);
/** An IPvFuture literal: "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ). */
const ipvFuture = fc
  .tuple(fc.constantFrom('v', 'V'), fc.stringMatching(/^[0-9A-Fa-f]{1,4}$/), fc.stringMatching(/^[A-Za-z0-9\-._~!$&'()*+,;=:]{1,12}$/))
  .map(([v, hex, rest]) => `${v}${hex}.${rest}`);

/** Where the host of an absolute or network-path reference ends: what lies after is path, query or fragment. */
function afterHost(ref: string): number {
  const start = ref.indexOf('//');
  if (start === -1) return 0;
  const end = ref.slice(start + 2).search(/[/?#]/);
  return end === -1 ? ref.length : start + 2 + end;
}

describe('URI-reference: brackets (RFC 3986 §3.2.2)', () => {
  it('the reported values are refused, as source and as dataschema', () => {
    for (const bad of ['http://[::1', 'http://a]b/']) {
      expect(uriReferenceProblem(bad), bad).toMatch(/RFC 3986 URI-reference/);
      expect(uriProblem(bad), bad).toMatch(/RFC 3986 absolute URI/);
      expect(validateEnvelope(env({ ...base, source: bad }))).toEqual([expect.objectContaining({ attribute: 'source' })]);
      expect(validateEnvelope(env({ ...base, dataschema: bad }))).toEqual([expect.objectContaining({ attribute: 'dataschema' })]);
    }
  });

  it('valid references with and without an IP-literal host are accepted', () => {
    for (const ok of ['http://[::1]:8080/x', 'urn:x', '/relative/path', '//host/x', '//[::1]/x', 'http://u:p@[2001:db8::7]', 'http://[::ffff:192.0.2.1]:/', 'http://[v7.fe80::a+en1]/', 'https://[1:2:3:4:5:6:7:8]?q#f']) {
      expect(uriReferenceProblem(ok), ok).toBeUndefined();
    }
  });

  it('misplaced, unbalanced or badly bracketed hosts are refused', () => {
    const bad = [
      'http://[::1]]/', 'http://[[::1]/', 'http://]::1[/', 'http://[::1]x/', 'http://[::1]:8o/', 'http://h[::1]/', 'http://[::1]@h/', 'http://u[@h/',
      'http://[]/', 'http://[h.example]/', 'http://[1::2::3]/', 'http://[1:2:3:4:5:6:7:8:9]/', 'http://[1:2:3:4:5:6:7]/', 'http://[::1.2.3.04]/',
      'http://[fe80::1%25en0]/', 'http://[v.x]/', 'http://[vg.x]/', 'http://[v1.]/',
      'urn:[x]', 'urn:x]', '/a[b]', '/a/]', '[::1]', '?q=[1]', '#[x]', 'http://h/[::1]', 'http://h/p?a[]=1', 'http://h/#]', 'mailto:[::1]',
    ];
    for (const v of bad) expect(uriReferenceProblem(v), v).toMatch(/^must be an RFC 3986 URI-reference/);
  });

  it('generated valid references (IPv4, IPv6 and reg-name hosts, network-path, relative, URN) are accepted', () => {
    fc.assert(fc.property(references, (ref) => uriReferenceProblem(ref) === undefined));
    fc.assert(fc.property(absolute, (ref) => uriProblem(ref) === undefined));
  });

  it('one [ or ] inserted anywhere in a valid reference makes it invalid', () => {
    fc.assert(
      fc.property(references, fc.nat(), fc.constantFrom('[', ']'), (ref, at, bracket) => {
        const i = at % (ref.length + 1);
        const v = ref.slice(0, i) + bracket + ref.slice(i);
        expect(uriReferenceProblem(v), v).toMatch(/^must be an RFC 3986 URI-reference/);
        if (/^[a-z]/.test(v)) expect(uriProblem(v), v).toBeDefined();
      }),
      { numRuns: 2000 },
    );
  });

  it('a balanced [ ] pair around any slice after the host (path, query, fragment) is refused', () => {
    fc.assert(
      fc.property(references, fc.nat(), fc.nat(), (ref, a, b) => {
        const from = afterHost(ref);
        const span = ref.length - from;
        const i = from + (a % (span + 1));
        const j = i + (b % (ref.length - i + 1));
        const v = `${ref.slice(0, i)}[${ref.slice(i, j)}]${ref.slice(j)}`;
        expect(uriReferenceProblem(v), v).toMatch(/^must be an RFC 3986 URI-reference/);
      }),
      { numRuns: 2000 },
    );
  });

  it('every IPv6 address and IPvFuture is accepted as a bracketed host, with userinfo, port and path', () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV6(), ipvFuture), fc.option(fc.constantFrom('u@', 'u:p@', '%41b@')), fc.option(fc.nat({ max: 65535 })), fc.webPath(), (ip, user, port, path) => {
        const v = `https://${user ?? ''}[${ip}]${port === null ? '' : `:${port}`}${path}`;
        return uriReferenceProblem(v) === undefined && uriProblem(v) === undefined;
      }),
      { numRuns: 2000 },
    );
  });

  it('the IPv6 check agrees with node:net on generated near-misses (edited addresses)', () => {
    // node:net also takes a zone id after '%', which RFC 3986's IP-literal has not: '%' is never generated.
    const edit = fc.tuple(fc.nat(), fc.constantFrom('delete', 'insert', 'replace'), fc.constantFrom(...'0123456789abcdefABCDEFg:.'));
    const candidates = fc.tuple(fc.ipV6(), fc.array(edit, { maxLength: 3 })).map(([ip, edits]) => {
      let s = ip;
      for (const [p, op, c] of edits) {
        const i = p % (s.length + 1);
        s = op === 'delete' ? s.slice(0, i) + s.slice(i + 1) : op === 'insert' ? s.slice(0, i) + c + s.slice(i) : s.slice(0, i) + c + s.slice(i + 1);
      }
      return s;
    });
    fc.assert(
      fc.property(candidates, (s) => {
        expect(uriReferenceProblem(`http://[${s}]/`) === undefined, s).toBe(isIPv6(s));
      }),
      { numRuns: 5000 },
    );
  });
});
