import { describe, expect, it } from 'vitest';
import { tlsVerificationFailure } from '../../../src/core/tls-errors.js';

const tlsError = (code: string): Error => Object.assign(new Error('self-signed certificate in certificate chain'), { code });

describe('tlsVerificationFailure (issue 11: an untrusted certificate is not retried)', () => {
  it('finds a certificate error as the error, a cause, or inside an AggregateError', () => {
    expect(tlsVerificationFailure(tlsError('SELF_SIGNED_CERT_IN_CHAIN'))).toBe('TLS certificate not trusted (SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain)');
    expect(tlsVerificationFailure(new Error('fetch failed', { cause: tlsError('UNABLE_TO_VERIFY_LEAF_SIGNATURE') }))).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
    expect(tlsVerificationFailure(new AggregateError([new Error('x'), new AggregateError([new Error('y', { cause: tlsError('ERR_TLS_CERT_ALTNAME_INVALID') })])]))).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
  });
  it('says nothing of outages and other errors (they stay retriable)', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPROTO', undefined]) expect(tlsVerificationFailure(Object.assign(new Error('x'), { code }))).toBeUndefined();
  });
  it('ends on a cycle', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    a.cause = a;
    expect(tlsVerificationFailure(a)).toBeUndefined();
  });
});
