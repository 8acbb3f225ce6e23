/** Filter dialects (CloudEvents Subscriptions API), sealed secrets, Standard Webhooks signing checked with the reference package. */
import { createHash, createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileFilters, filterProblems } from '../../../src/bus/subscriber/index.js';
import type { FilterExpression } from '../../../src/bus/subscriber/index.js';
import { generateWebhookSecret, mergePatch, parseSecretsKey, secretBox } from '../../../src/bus/subscriptions/index.js';
import { classify, messageId, retryAfterMs, secretKey, signatureHeaders } from '../../../src/connectors/sinks/webhook/index.js';
import type { Attributes } from '../../../src/envelope/types.js';
import { caught } from '../../helpers/errors.js';

const attrs = (over: Record<string, string | number>): Attributes => ({ specversion: '1.0', id: '1', source: 'urn:x', type: 't', ...over });

describe('filter dialects', () => {
  it('evaluates exact, prefix, suffix, all, any, not; an absent attribute never matches', () => {
    const f: FilterExpression[] = [{ prefix: { subject: 'EUR' } }, { any: [{ suffix: { subject: 'H4' } }, { exact: { schemaversion: '2' } }] }, { not: { exact: { source: 'urn:bad' } } }];
    const m = compileFilters(f);
    expect(m(attrs({ subject: 'EUR-USD_H4' }))).toBe(true);
    expect(m(attrs({ subject: 'EUR-USD_H1', schemaversion: 2 }))).toBe(true);
    expect(m(attrs({ subject: 'EUR-USD_H1' }))).toBe(false);
    expect(m(attrs({ subject: 'EUR-USD_H4', source: 'urn:bad' }))).toBe(false);
    expect(m(attrs({}))).toBe(false);
    expect(compileFilters([{ not: { exact: { subject: 'x' } } }])(attrs({}))).toBe(true);
    expect(compileFilters([])(attrs({}))).toBe(true);
  });

  it('prefix and suffix agree with String.startsWith / endsWith for any text', () => {
    fc.assert(fc.property(fc.string({ minLength: 1 }), fc.string(), (needle, subject) => {
      const p = compileFilters([{ prefix: { subject: needle } }])(attrs({ subject }));
      const s = compileFilters([{ suffix: { subject: needle } }])(attrs({ subject }));
      return p === subject.startsWith(needle) && s === subject.endsWith(needle);
    }));
  });

  it('reports unknown dialects and attributes, bad shapes and depth with their paths', () => {
    const problems = filterProblems([{ sql: 'x' }, { exact: { subjet: 'a' } }, { exact: { subject: 'a', id: 'b' } }, { all: [] }, 'x', { prefix: { subject: '' } }]);
    expect(problems.map((p) => p.path)).toEqual(['filters[0].sql', 'filters[1].exact.subjet', 'filters[2].exact', 'filters[3].all', 'filters[4]', 'filters[5].prefix.subject']);
    let deep: FilterExpression = { exact: { id: 'x' } };
    for (let i = 0; i < 10; i++) deep = { not: deep };
    expect(filterProblems([deep])[0]?.problem).toContain('levels deep');
  });

  it('refuses an empty exact value for a new definition (it could never match: Subscriptions API §3.2.4.1.1), keeps it matching nothing in a stored one; an empty prefix or suffix is refused in both', () => {
    for (const name of ['subject', 'id', 'source', 'type', 'dataschema', 'partitionkey', 'tracestate']) {
      const nested = [{ all: [{ exact: { type: 't' } }, { not: { exact: { [name]: '' } } }] }];
      expect(filterProblems(nested, 'filters', 'refuse').map((p) => p.path), name).toEqual([`filters[0].all[1].not.exact.${name}`]);
      expect(filterProblems(nested), name).toEqual([]);
    }
    expect(filterProblems([{ exact: { subject: '' } }], 'filters', 'refuse')[0]?.problem).toContain('could never match');
    expect(compileFilters([{ exact: { subject: '' } }])(attrs({ subject: 'x' }))).toBe(false);
    for (const dialect of ['prefix', 'suffix']) {
      for (const mode of ['refuse', 'allow'] as const) expect(filterProblems([{ [dialect]: { subject: '' } }], 'filters', mode).map((p) => p.path)).toEqual([`filters[0].${dialect}.subject`]);
    }
    expect(filterProblems([{ exact: { subject: 'x' } }, { prefix: { type: 'a' } }], 'filters', 'refuse')).toEqual([]);
  });

  it('refuses, in a new definition, a value holding a character no attribute can hold (control, noncharacter, lone surrogate) in every dialect and attribute, naming its path; a stored one keeps it', () => {
    // What CloudEvents Strings exclude (1.0.2 "Type System"), and the ingress refuses in attributes.
    const excluded = fc.constantFrom('\u0000', '\u0001', '\u001f', '\u007f', '\u0085', '\u009f', '\ufdd0', '\ufffe', '\uffff', '\ud800', '\udbff', '\udc00', '\udfff', '\u{10FFFF}', '\u{1FFFE}');
    const dialect = fc.constantFrom('exact', 'prefix', 'suffix');
    const attribute = fc.constantFrom('subject', 'id', 'source', 'type', 'partitionkey', 'tracestate', 'correlationid');
    fc.assert(fc.property(fc.string({ maxLength: 20 }), excluded, fc.string({ maxLength: 20 }), dialect, attribute, fc.boolean(), (before, bad, after, d, name, nested) => {
      const value = before + bad + after;
      const filter = { [d]: { [name]: value } };
      const list = nested ? [{ exact: { type: 't' } }, { any: [{ not: filter }] }] : [filter];
      const path = nested ? `filters[1].any[0].not.${d}.${name}` : `filters[0].${d}.${name}`;
      const problems = filterProblems(list, 'filters', 'refuse');
      expect(problems.map((p) => p.path)).toEqual([path]);
      expect(problems[0]!.problem).toContain('CloudEvents Strings exclude');
      expect(filterProblems(list)).toEqual([]);
    }));
    // Well-formed text outside ASCII stays a valid value (an astral character is a surrogate pair).
    expect(filterProblems([{ prefix: { subject: '😀' } }, { exact: { subject: 'é\u00a0x' } }, { suffix: { source: '\ufffd' } }], 'filters', 'refuse')).toEqual([]);
  });
});

describe('sealed secrets', () => {
  const key = parseSecretsKey(Buffer.alloc(32, 9).toString('base64'));
  it('round-trips for the same subscription, refuses another subscription, another key and an altered value', () => {
    const box = secretBox(key);
    const sealed = box.seal({ secrets: ['whsec_x'], headers: { Authorization: 'Bearer t' } }, 'g1');
    expect(sealed).not.toContain('Bearer');
    expect(box.open(sealed, 'g1')).toEqual({ secrets: ['whsec_x'], headers: { Authorization: 'Bearer t' } });
    expect(caught(() => box.open(sealed, 'g2')).message).toContain('authentication failed');
    expect(caught(() => secretBox(parseSecretsKey('ab'.repeat(32))).open(sealed, 'g1')).message).toContain('sealed with key');
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join('.'), 'g1')).toThrow();
    expect(caught(() => parseSecretsKey('short')).details.field).toBe('SUBSCRIPTION_SECRETS_KEY');
  });
});

describe('Standard Webhooks signing', () => {
  it('verifies with the standardwebhooks package for every secret, fails for another body or secret', () => {
    fc.assert(
      fc.property(fc.json(), fc.string({ minLength: 1, maxLength: 40 }), (json, id) => {
        const secrets = [generateWebhookSecret(), generateWebhookSecret()];
        const body = Buffer.from(json, 'utf8');
        const msg = messageId('urn:src', id);
        const h = signatureHeaders(secrets.map(secretKey), msg, Math.floor(Date.now() / 1000), body);
        for (const s of secrets) new Webhook(s).verify(body, h, { jsonParse: false });
        expect(() => new Webhook(generateWebhookSecret()).verify(body, h, { jsonParse: false })).toThrow();
        expect(() => new Webhook(secrets[0]!).verify(Buffer.concat([body, Buffer.from(' ')]), h, { jsonParse: false })).toThrow();
        return (h['webhook-signature'] ?? '').split(' ').length === 2 && /^msg_[A-Za-z0-9_-]{22}$/.test(msg);
      }),
      { numRuns: 50 },
    );
  });

  it('the webhook-id is SHA-256 of source NUL id, base64url, 22 characters, whatever the text (an id kept across versions: every attempt and every gateway agree)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme', minLength: 1 }), (source, id) => {
        const expected = createHash('sha256').update(source, 'utf8').update('\0').update(id, 'utf8').digest('base64url').slice(0, 22);
        expect(messageId(source, id)).toBe(`msg_${expected}`);
      }),
    );
  });

  it('signs the exact bytes of a binary body', () => {
    const body = Buffer.from([0, 0, 0, 0, 7, 0xff, 0xfe, 0x80]);
    const secret = generateWebhookSecret();
    const h = signatureHeaders([secretKey(secret)], 'msg_1', 1700000000, body);
    const expected = createHmac('sha256', secretKey(secret)).update(Buffer.concat([Buffer.from('msg_1.1700000000.'), body])).digest('base64');
    expect(h['webhook-signature']).toBe(`v1,${expected}`);
  });
});

describe('delivery outcomes', () => {
  it('classifies statuses as the issue says', () => {
    expect(classify(204, '', undefined, 1000).kind).toBe('handled');
    expect(classify(410, '', undefined, 1000).kind).toBe('gone');
    expect(classify(404, 'no', undefined, 1000).kind).toBe('deadLetter');
    expect(classify(408, '', undefined, 1000).kind).toBe('retry');
    expect(classify(302, '', undefined, 1000)).toMatchObject({ kind: 'retry', reason: expect.stringContaining('redirects') as string });
    expect(classify(500, '', undefined, 1000).kind).toBe('retry');
    expect(classify(429, '', '120', 30_000)).toMatchObject({ kind: 'retry', retryAfterMs: 30_000 });
    expect(classify(503, '', '2', 30_000)).toMatchObject({ kind: 'retry', retryAfterMs: 2000 });
    expect(retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('Wed, 21 Oct 2015 07:27:00 GMT'))).toBe(60_000);
    expect(retryAfterMs('soon')).toBeUndefined();
  });

  it('merge patch: objects merge, null removes, arrays replace', () => {
    expect(mergePatch({ a: 1, h: { x: '1', y: '2' }, s: [1, 2] }, { h: { y: null, z: '3' }, s: [3] })).toEqual({ a: 1, h: { x: '1', z: '3' }, s: [3] });
  });
});
