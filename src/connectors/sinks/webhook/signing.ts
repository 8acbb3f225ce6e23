/**
 * Standard Webhooks signatures: `webhook-id` (the message id: the same for every attempt of one
 * event, so a sink drops redeliveries by it), `webhook-timestamp` (seconds since the epoch, of
 * this attempt) and `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one
 * space-separated `v1,…` per secret (two while a secret rotates: a receiver with either verifies).
 * The HMAC runs over the body's exact bytes: the `standardwebhooks` package signs a string (it
 * decodes a Buffer as UTF-8 first), which would sign something else for an Avro body, so signing
 * is done here and the package verifies in the tests.
 * Spec: Standard Webhooks 1.0.0 "Signature scheme" (symmetric, `whsec_` secrets, base64 key after
 *   the prefix), "Webhook headers".
 */
import { createHmac, hash } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** The HMAC key of a `whsec_<base64>` secret. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** A stable message id for an event: `msg_` + base64url of SHA-256(source NUL id), 22 characters. */
export function messageId(source: string, id: string): string {
  // One-shot hash of one text (the same bytes as three updates): no Hash object per delivery.
  return `msg_${hash('sha256', `${source}\0${id}`, 'base64url').slice(0, 22)}`;
}

/** The three headers of a signed delivery; `keys` are the secrets' HMAC keys (see {@link secretKey}). */
export function signatureHeaders(keys: readonly Buffer[], msgId: string, timestampS: number, body: Uint8Array): Record<string, string> {
  return addSignature({}, keys, msgId, timestampS, body);
}

/** Sets the three headers of {@link signatureHeaders} on `headers` (a request's own object); returns it. */
export function addSignature(headers: Record<string, string>, keys: readonly Buffer[], msgId: string, timestampS: number, body: Uint8Array): Record<string, string> {
  const prefix = Buffer.from(`${msgId}.${timestampS}.`, 'utf8');
  let signatures = '';
  for (const k of keys) signatures += `${signatures === '' ? '' : ' '}v1,${createHmac('sha256', k).update(prefix).update(body).digest('base64')}`;
  headers['webhook-id'] = msgId;
  headers['webhook-timestamp'] = String(timestampS);
  headers['webhook-signature'] = signatures;
  return headers;
}
