import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { resolveConfluentOptions } from '../../../src/registry/index.js';

describe('resolveConfluentOptions', () => {
  it('defaults the timeout, trims the trailing slash and folds credentials into a hidden header', () => {
    const o = resolveConfluentOptions({ url: 'http://127.0.0.1:18081/apis/ccompat/v7/', username: 'u', password: 'p' });
    expect(o.baseUrl).toBe('http://127.0.0.1:18081/apis/ccompat/v7');
    expect(o.timeoutMs).toBe(5000);
    expect(o.authorization).toBe(`Basic ${Buffer.from('u:p').toString('base64')}`);
    expect(JSON.stringify(o)).toBe('{"baseUrl":"http://127.0.0.1:18081/apis/ccompat/v7","timeoutMs":5000}');
    expect(Object.isFrozen(o)).toBe(true);
  });

  it('moves credentials out of the URL', () => {
    const o = resolveConfluentOptions({ url: 'https://user:pa%40ss@reg.example:8081' });
    expect(o.baseUrl).toBe('https://reg.example:8081');
    expect(o.authorization).toBe(`Basic ${Buffer.from('user:pa@ss').toString('base64')}`);
    // The same rule as the configuration's (core/public-url takeUserinfo): a bare % taken as written.
    expect(resolveConfluentOptions({ url: 'https://user:50%off@reg.example' }).authorization).toBe(`Basic ${Buffer.from('user:50%off').toString('base64')}`);
  });

  it('reports every problem at once', () => {
    try {
      resolveConfluentOptions({ url: 'ftp://x', timeoutMs: 0, username: 'only-user' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      const e = err as GatewayError;
      expect([e.code, e.retriable]).toEqual(['CEG_INVALID_OPTIONS', false]);
      expect(e.message).toContain('url: http or https');
      expect(e.message).toContain('timeoutMs');
      expect(e.message).toContain('username and password');
    }
    expect(() => resolveConfluentOptions({ url: 'not a url' })).toThrow(/absolute URL/);
  });
});
