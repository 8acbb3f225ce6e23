import { describe, expect, it } from 'vitest';
import { MAX_PLAIN_NAME, encodeNamePart, eventDirName, eventFileName } from '../../../src/connectors/index.js';

const SAFE = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

describe('event file names', () => {
  it('escapes every byte outside [A-Za-z0-9-], including _ and .', () => {
    expect(encodeNamePart('urn:pdsp:host-1')).toBe('urn_3Apdsp_3Ahost-1');
    expect(encodeNamePart('/trading/../etc')).toBe('_2Ftrading_2F_2E_2E_2Fetc');
    expect(encodeNamePart('a_b.c')).toBe('a_5Fb_2Ec');
    expect(encodeNamePart('-rf')).toBe('_2Drf');
    expect(encodeNamePart('x-y')).toBe('x-y');
    expect(encodeNamePart('é\\\0')).toBe('_C3_A9_5C_00');
  });

  it('names a file <source>__<id>.json', () => {
    expect(eventFileName('urn:pdsp:host-1', '3f0c9b2e-1111-4a4a-8b8b-000000000001')).toBe('urn_3Apdsp_3Ahost-1__3f0c9b2e-1111-4a4a-8b8b-000000000001.json');
  });

  it('keeps distinct events apart where a naive replacement would not', () => {
    const pairs: [string, string][] = [
      ['a/b', 'c'],
      ['a_b', 'c'],
      ['a', 'b__c'],
      ['a__b', 'c'],
      ['a.b', 'c'],
      ['a', '_b'],
      ['a_', 'b'],
    ];
    const names = pairs.map(([s, i]) => eventFileName(s, i));
    expect(new Set(names).size).toBe(pairs.length);
    for (const n of names) expect(n).toMatch(SAFE);
  });

  it('gives the same name to the same event every time', () => {
    expect(eventFileName('urn:x', 'id-1')).toBe(eventFileName('urn:x', 'id-1'));
  });

  it('never yields a path separator, a dot file, a leading dash, or more than 255 bytes', () => {
    const nasty = ['../../etc/passwd', '.', '..', '-', '/', '\\..\\x', 'a\nb', ' ', '~root', '$(reboot)'];
    for (const s of nasty) {
      for (const i of nasty) {
        const n = eventFileName(s, i);
        expect(n).toMatch(SAFE);
        expect(n).not.toContain('/');
        expect(Buffer.byteLength(n)).toBeLessThanOrEqual(255);
      }
    }
  });

  it('hashes long identities into a bounded name that still differs per event', () => {
    const source = `https://example.com/${'x'.repeat(300)}`;
    const a = eventFileName(source, 'id-1');
    const b = eventFileName(source, 'id-2');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^https_3A_2F_2Fexample_2Ecom_2Fx+__id-1\.[0-9a-f]{32}\.json$/);
    expect(a.length).toBeLessThanOrEqual(MAX_PLAIN_NAME + 50);
    // Long names have two dots, plain ones one: the two forms never meet.
    expect(a.split('.').length).toBe(3);
    expect(eventFileName('s', 'i').split('.').length).toBe(2);
  });

  it('names sub-directories by event name with the same escaping', () => {
    expect(eventDirName('PriceLoadingCompleted')).toBe('PriceLoadingCompleted');
    expect(eventDirName('..')).toBe('_2E_2E');
    expect(eventDirName('')).toMatch(/^\.[0-9a-f]{16}$/);
  });
});
