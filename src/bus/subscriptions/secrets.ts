/**
 * Secrets of subscriptions at rest: webhook signing secrets and sink headers are sealed with
 * AES-256-GCM before their definition is written to the definitions topic, so the topic (and its
 * replicas, backups and readers) never holds them in the clear. The key (32 bytes) comes from the
 * environment or a secret file (`SUBSCRIPTION_SECRETS_KEY[_FILE]`), never from the topic.
 *
 * Sealed form: `v1.<kid>.<iv>.<ciphertext>.<tag>` (base64url parts; `kid` = the first 8 hex digits
 * of SHA-256 of the key, so a record sealed with another key is recognised and named, not
 * mis-decrypted). The subscription's group is the additional authenticated data: a sealed value
 * copied onto another subscription does not open.
 * Spec: NIST SP 800-38D (GCM: 96-bit random IV, 128-bit tag); Standard Webhooks "Signature scheme"
 *   (secrets `whsec_` + base64 of random bytes).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { GatewayError } from '../../core/errors.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Seals and opens subscription secrets with one key. */
export interface SecretBox {
  /** Identifies the key (not secret): first 8 hex digits of its SHA-256. */
  readonly kid: string;
  seal(plain: unknown, aad: string): string;
  /** Errors: CEG_INVALID_OPTIONS (not retriable) when the value was sealed with another key, for another subscription, or altered. */
  open(sealed: string, aad: string): unknown;
}

/**
 * A box for a 32-byte key.
 * Errors: CEG_INVALID_OPTIONS when the key is not 32 bytes.
 */
export function secretBox(key: Uint8Array): SecretBox {
  if (key.length !== 32) throw new GatewayError('CEG_INVALID_OPTIONS', `the subscription secrets key must be 32 bytes, got ${key.length}`, { retriable: false, details: { field: 'SUBSCRIPTION_SECRETS_KEY' } });
  const k = Buffer.from(key);
  const kid = createHash('sha256').update(k).digest('hex').slice(0, 8);
  const refuse = (why: string): GatewayError => new GatewayError('CEG_INVALID_OPTIONS', `cannot open sealed subscription secrets: ${why}`, { retriable: false, details: { kid } });
  return Object.freeze({
    kid,
    seal(plain: unknown, aad: string): string {
      const iv = randomBytes(IV_BYTES);
      const c = createCipheriv('aes-256-gcm', k, iv, { authTagLength: TAG_BYTES });
      c.setAAD(Buffer.from(aad, 'utf8'));
      const ct = Buffer.concat([c.update(JSON.stringify(plain), 'utf8'), c.final()]);
      return ['v1', kid, iv.toString('base64url'), ct.toString('base64url'), c.getAuthTag().toString('base64url')].join('.');
    },
    open(sealed: string, aad: string): unknown {
      const parts = sealed.split('.');
      if (parts.length !== 5 || parts[0] !== 'v1') throw refuse('unknown format');
      if (parts[1] !== kid) throw refuse(`sealed with key ${parts[1]}, this gateway has key ${kid} (SUBSCRIPTION_SECRETS_KEY differs between instances?)`);
      try {
        const d = createDecipheriv('aes-256-gcm', k, Buffer.from(parts[2]!, 'base64url'), { authTagLength: TAG_BYTES });
        d.setAAD(Buffer.from(aad, 'utf8'));
        d.setAuthTag(Buffer.from(parts[4]!, 'base64url'));
        const plain = Buffer.concat([d.update(Buffer.from(parts[3]!, 'base64url')), d.final()]).toString('utf8');
        return JSON.parse(plain) as unknown;
      } catch (err) {
        throw new GatewayError('CEG_INVALID_OPTIONS', 'cannot open sealed subscription secrets: authentication failed (altered, or sealed for another subscription)', { retriable: false, cause: err, details: { kid } });
      }
    },
  });
}

/**
 * Reads a key given as 64 hex digits or base64 of 32 bytes.
 * Errors: CEG_INVALID_OPTIONS naming `name` (the value is never echoed).
 */
export function parseSecretsKey(text: string, name = 'SUBSCRIPTION_SECRETS_KEY'): Uint8Array {
  const t = text.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : /^[A-Za-z0-9+/_-]{43}=?$/.test(t) ? Buffer.from(t, 'base64') : undefined;
  if (bytes === undefined || bytes.length !== 32) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `${name}: 32 bytes as 64 hex digits or base64 (e.g. \`openssl rand -base64 32\`)`, { retriable: false, details: { field: name } });
  }
  return bytes;
}

/**
 * The key of the development mode (in-memory transport, or a gateway bound to loopback without a
 * configured key): derived from a fixed text, so it protects nothing. The gateway says so loudly.
 */
export function developmentKey(): Uint8Array {
  return createHash('sha256').update('ce-gateway development key: NOT A SECRET').digest();
}

/**
 * Environment variable through which a cluster primary (`GATEWAY_WORKERS`) hands its workers one
 * {@link developmentCursorKey}: 64 hex digits. Set by the primary; not a setting.
 */
export const DEVELOPMENT_CURSOR_KEY_ENV = 'CE_GATEWAY_DEVELOPMENT_CURSOR_KEY';

/**
 * The pull-cursor key of the development mode: 32 random bytes per gateway run (shared by its
 * workers through {@link DEVELOPMENT_CURSOR_KEY_ENV}), not one derived from {@link developmentKey}.
 * A cursor signed with a key everyone can compute could name any offset, so a partner could read
 * its pull subscription from anywhere — a replay without the `replay` permission. Sealed secrets
 * must outlive a restart (they are stored); cursors need not: after a restart, or on another
 * gateway process, a cursor of this run is refused (400 CEG_INVALID_CURSOR) and the client pulls
 * without one, from the committed positions (at-least-once), as after a key change.
 */
export function developmentCursorKey(env: Readonly<Record<string, string | undefined>> = process.env): Uint8Array {
  const handed = env[DEVELOPMENT_CURSOR_KEY_ENV];
  return handed !== undefined && /^[0-9a-f]{64}$/.test(handed) ? Buffer.from(handed, 'hex') : randomBytes(32);
}

/** A new Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Where the key sealing subscription secrets comes from on this gateway. */
export type SecretsKeyDecision = 'configured' | 'development' | 'absent';

/**
 * The rule: a configured key is used; without one, the well-known development key only where
 * nothing leaves the machine (the in-memory transport, or a gateway bound to loopback); otherwise
 * there is no key — push subscriptions cannot be created, and a gateway whose definitions topic
 * already holds some refuses to start (CEG_SECRETS_KEY_MISSING).
 */
export function secretsKeyDecision(key: string | undefined, transport: 'kafka' | 'memory', host: string): SecretsKeyDecision {
  if (key !== undefined) return 'configured';
  const loopback = host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  return transport === 'memory' || loopback ? 'development' : 'absent';
}

/** The error of a gateway without a key where push subscriptions need one. */
export function secretsKeyMissing(why: string): GatewayError {
  return new GatewayError('CEG_SECRETS_KEY_MISSING', `SUBSCRIPTION_SECRETS_KEY (or SUBSCRIPTION_SECRETS_KEY_FILE) is required: ${why}`, { retriable: false, details: { field: 'SUBSCRIPTION_SECRETS_KEY' } });
}
