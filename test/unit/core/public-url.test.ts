/**
 * publicUrl: the one form in which a configured URL leaves the process (documents, logs, errors):
 * no userinfo, no query parameter whose name says it holds a secret; anything else unchanged.
 */
import { describe, expect, it } from 'vitest';
import { hasUserinfo, maskedUrl, publicText, publicUrl } from '../../../src/core/public-url.js';

describe('publicUrl', () => {
  it('removes user:password@ and keeps the rest as written', () => {
    expect(publicUrl('http://admin:pw@reg.example:8081/apis/ccompat/v7')).toBe('http://reg.example:8081/apis/ccompat/v7');
    expect(publicUrl('https://admin@reg.example')).toBe('https://reg.example');
    expect(publicUrl('https://a%40b:p%2Fw@reg.example/')).toBe('https://reg.example/');
    expect(publicUrl('http://@reg.example/x')).toBe('http://reg.example/x');
  });

  it('removes secret query parameters, keeps the others', () => {
    expect(publicUrl('https://reg.example/v7?api_key=s3cret&region=eu&access_token=t')).toBe('https://reg.example/v7?region=eu');
    expect(publicUrl('https://reg.example/?Signature=abc')).toBe('https://reg.example/');
    expect(publicUrl('https://h/x?X-Amz-Signature=a&accessToken=b&client.secret=c&apiKey=d&design=e')).toBe('https://h/x?design=e');
  });

  it('keeps parameters whose names merely contain a secret word (design, monkey, author, signal, passenger)', () => {
    const u = 'https://docs.example/page?design=dark&monkey=1&author=me&signal=x&passenger=2&keyboard=us';
    expect(publicUrl(u)).toBe(u);
  });

  it('returns a URL without credentials unchanged, character for character', () => {
    for (const u of ['http://127.0.0.1:18081/apis/ccompat/v7', 'http://reg:8081', 'https://gw.example/api/', 'https://h/x?region=eu', 'not a url']) expect(publicUrl(u)).toBe(u);
  });

  it('cuts the userinfo of a text that does not parse as a URL', () => {
    expect(publicUrl('http://u:pw@[bad/x')).toBe('http://[bad/x');
  });

  it('hasUserinfo tells a URL with credentials', () => {
    expect(hasUserinfo('http://u:pw@h/')).toBe(true);
    expect(hasUserinfo('http://u@h/')).toBe(true);
    expect(hasUserinfo('http://h/')).toBe(false);
  });
});

describe('publicText', () => {
  it('writes every http(s) URL in a message as publicUrl does, the rest as it was', () => {
    expect(publicText('cannot fetch http://u:pw@a.example/x, nor "https://b.example/?token=t&x=1"')).toBe('cannot fetch http://a.example/x, nor "https://b.example/?x=1"');
    expect(publicText('connect ECONNREFUSED 127.0.0.1:9')).toBe('connect ECONNREFUSED 127.0.0.1:9');
  });
});

describe('maskedUrl', () => {
  it('masks the values of secret-looking query parameters, keeps the rest and which parameters there are', () => {
    expect(maskedUrl('https://fn.example/api/hook?code=abc%3D%3D&region=eu')).toBe('https://fn.example/api/hook?code=***&region=eu');
    expect(maskedUrl('https://h.example/x?access_token=a&token=b&token=c')).toBe('https://h.example/x?access_token=***&token=***&token=***');
    expect(maskedUrl('https://h.example/x?X-Amz-Signature=s&design=1')).toBe('https://h.example/x?X-Amz-Signature=***&design=1');
  });
  it('leaves a URL without such parameters unchanged, character for character, and one that does not parse', () => {
    for (const u of ['https://h.example/x?region=eu&author=me', 'http://127.0.0.1:9/hook', 'https://h.example', 'not a url ?token=x']) expect(maskedUrl(u)).toBe(u);
  });
  it('is idempotent: a masked URL masks to itself', () => {
    const once = maskedUrl('https://h.example/x?apiKey=k&sig=s#frag');
    expect(maskedUrl(once)).toBe(once);
    expect(once).not.toMatch(/=k|=s\b/);
  });
});
