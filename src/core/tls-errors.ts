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

/**
 * OpenSSL's texts of the verification failures above (`X509_verify_cert_error_string`, OpenSSL 3
 * and 1.1 spellings) and Node's host-name mismatch, longest first so that "self-signed certificate
 * in certificate chain" is not read as "self-signed certificate".
 */
const CERTIFICATE_TEXTS: readonly (readonly [RegExp, string])[] = [
  [/self[- ]signed certificate in certificate chain/i, 'SELF_SIGNED_CERT_IN_CHAIN'],
  [/self[- ]signed certificate/i, 'DEPTH_ZERO_SELF_SIGNED_CERT'],
  [/unable to get local issuer certificate/i, 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY'],
  [/unable to get issuer certificate/i, 'UNABLE_TO_GET_ISSUER_CERT'],
  [/unable to verify the first certificate/i, 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
  [/unable to decrypt certificate'?s signature/i, 'UNABLE_TO_DECRYPT_CERT_SIGNATURE'],
  [/certificate signature failure/i, 'CERT_SIGNATURE_FAILURE'],
  [/certificate is not yet valid/i, 'CERT_NOT_YET_VALID'],
  [/certificate has expired/i, 'CERT_HAS_EXPIRED'],
  [/format error in certificate'?s notBefore field/i, 'ERROR_IN_CERT_NOT_BEFORE_FIELD'],
  [/format error in certificate'?s notAfter field/i, 'ERROR_IN_CERT_NOT_AFTER_FIELD'],
  [/certificate chain too long/i, 'CERT_CHAIN_TOO_LONG'],
  [/certificate revoked/i, 'CERT_REVOKED'],
  [/invalid CA certificate/i, 'INVALID_CA'],
  [/path length constraint exceeded/i, 'PATH_LENGTH_EXCEEDED'],
  [/(?:unsupported|unsuitable) certificate purpose/i, 'INVALID_PURPOSE'],
  [/certificate not trusted/i, 'CERT_UNTRUSTED'],
  [/certificate rejected/i, 'CERT_REJECTED'],
  [/hostname mismatch/i, 'HOSTNAME_MISMATCH'],
  [/Hostname\/IP does not match certificate's altnames/i, 'ERR_TLS_CERT_ALTNAME_INVALID'],
];

/**
 * The failed certificate check a client only reports as text (kafkajs logs "Connection error:
 * <Node's message>" on each connect it retries, without the error's `code`), in the words of
 * {@link tlsVerificationFailure}; undefined when `text` names none. At most the first 2,000
 * characters are read. Spec: OpenSSL `X509_verify_cert_error_string`; Node `tls.checkServerIdentity`.
 */
export function tlsVerificationFailureInText(text: string): string | undefined {
  const head = text.slice(0, 2000);
  for (const [pattern, code] of CERTIFICATE_TEXTS) {
    const found = pattern.exec(head);
    if (found !== null) return `TLS certificate not trusted (${code}: ${found[0]})`;
  }
  return undefined;
}

/**
 * A hint for a client error saying the connection closed before TLS was set up: what a broker
 * listener without TLS does with a client's TLS hello (`KAFKA_SSL=true` against a PLAINTEXT or
 * SASL_PLAINTEXT port). Node's wording, node:_tls_wrap ("Client network socket disconnected before
 * secure TLS connection was established"). A broker restarting mid-handshake does the same, so the
 * clients still retry it: this only names the likely cause. Undefined when `text` is not such an error. Pure.
 */
export function tlsListenerHint(text: string): string | undefined {
  return /disconnected before secure TLS connection was established/i.test(text)
    ? 'the connection closed before TLS was set up: with KAFKA_SSL=true, is this a TLS listener? Check KAFKA_SSL and the port'
    : undefined;
}

/** What a Kafka client was set up with, for {@link listenerHint}. */
export interface KafkaClientSecurity {
  /** KAFKA_SSL: the client speaks TLS. */
  readonly ssl: boolean;
  /** KAFKA_SASL_MECHANISM set: the client logs in. */
  readonly sasl: boolean;
}

/**
 * What a client set up from the gateway's Kafka settings (`Config['kafka']`) speaks: TLS with
 * KAFKA_SSL=true or a KAFKA_SSL_CA_FILE (the CA file alone turns TLS on), a SASL login with
 * KAFKA_SASL_MECHANISM. The gateway's bootstrap warning and the CLI's failure lines pass it to
 * {@link listenerHint}. Pure.
 */
export function kafkaClientSecurity(kafka: { readonly ssl: boolean; readonly ca?: unknown; readonly sasl?: unknown }): KafkaClientSecurity {
  return { ssl: kafka.ssl || kafka.ca !== undefined, sasl: kafka.sasl !== undefined };
}

/**
 * A hint for a client error on a Kafka connection, given what the client was set up with:
 * {@link tlsListenerHint}'s for a TLS hello a listener without TLS dropped; and for a connection
 * the broker closed at its first request (kafkajs "Closed connection", @platformatic/kafka
 * "Connection closed") while the client lacks TLS or a SASL login, that the listener may want
 * what the client lacks — what an SSL listener does with a client speaking plain Kafka, and a
 * SASL listener with a request before the login (the client then retries for ever with no other
 * word; seen on the stack's 19095 and 19094). A broker shutting down closes connections too, so
 * this only names the likely cause. Undefined when neither applies. Pure.
 * Spec: Kafka listener security protocols PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (KIP-103).
 */
export function listenerHint(text: string, client: KafkaClientSecurity): string | undefined {
  const tls = tlsListenerHint(text);
  if (tls !== undefined) return tls;
  if (!/\b(closed connection|connection closed)\b/i.test(text) || (client.ssl && client.sasl)) return undefined;
  const lacks = [client.ssl ? undefined : 'KAFKA_SSL=true', client.sasl ? undefined : 'KAFKA_SASL_MECHANISM'].filter((w): w is string => w !== undefined);
  const listener = [client.ssl ? undefined : 'TLS', client.sasl ? undefined : 'SASL'].filter((w): w is string => w !== undefined).join(' or ');
  return `the broker closed the connection: is this a ${listener} listener? It drops a client without ${lacks.join(' or ')}. Check the port and ${lacks.map((l) => l.replace('=true', '')).join(' and ')}`;
}
