/**
 * Recognises a failed TLS certificate check in an error and its `cause` chain, for the Kafka and
 * registry adapters: a server certificate the client does not trust (wrong or missing CA, wrong
 * host name, expired) does not get better by retrying, so they mark it `retriable: false` and
 * start-up stops with the reason instead of waiting forever (issue 11).
 * Spec: the error codes of OpenSSL's X509_verify_cert as Node reports them (`err.code`, Node
 * `tls` docs "X509 certificate error codes") and `ERR_TLS_CERT_ALTNAME_INVALID` for a host-name
 * mismatch (`tls.checkServerIdentity`).
 */
import { errorTree } from './error-tree.js';

const CERTIFICATE_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * The failed certificate check in `err`, its causes and AggregateError members (at most 100
 * errors looked at), as `TLS certificate not trusted (<CODE>: <message>)`; undefined when there is none.
 */
export function tlsVerificationFailure(err: unknown): string | undefined {
  for (const { code, message } of errorTree(err)) {
    if (typeof code === 'string' && CERTIFICATE_CODES.has(code)) return `TLS certificate not trusted (${code}: ${typeof message === 'string' ? message : 'verification failed'})`;
  }
  return undefined;
}
