/**
 * Bearer authentication with API keys: `Authorization: Bearer <key>` → the partner whose key it is.
 * The presented key is hashed (SHA-256 of its UTF-8 bytes) and compared with every stored hash in
 * constant time (`crypto.timingSafeEqual`, no early exit), so neither a match nor its position
 * leaks through timing. Failed attempts are counted per client address (token bucket, `limiter`):
 * past `AUTH_FAILURES_PER_MINUTE` the address gets 429 before any key is looked at. An OIDC token
 * counts as a failure while it is verified (given back when it is valid), so verifications in
 * flight cannot overshoot the limit.
 * Spec: RFC 6750 §2.1 (the header), §3 (`WWW-Authenticate: Bearer realm=…, error="invalid_token"`);
 *   RFC 9110 §11.6.1; issue 11 ("keys compared in constant time; failed attempts counted and
 *   rate-limited per client address"); OWASP API2:2023 (broken authentication).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { TokenBucket } from 'limiter';
import { GatewayError } from '../../core/errors.js';
import { looksLikeJwt } from './oidc.js';
import type { OidcVerifier } from './oidc.js';
import type { Partner } from './partners.js';

/** The realm named in `WWW-Authenticate`. */
export const AUTH_REALM = 'ce-gateway';

/**
 * Most client addresses whose failures are tracked at once. Past it, the oldest address that is
 * not locked out right now is forgotten; a locked-out one only when every tracked address is.
 */
export const MAX_TRACKED_ADDRESSES = 10_000;

/**
 * Longest `Authorization` value looked at, characters (16 KiB). Identity providers' access tokens
 * with many claims run to several KiB (Entra ID, Keycloak with roles), so 4 KiB was too few; 16 KiB
 * is also Node's default bound on all of a request's headers (`--max-http-header-size`), which
 * refuses anything longer with 431 before this runs. A longer value is answered 401 naming this
 * bound, and counted as a failed attempt like any credential that is not accepted.
 */
export const MAX_CREDENTIAL_CHARS = 16_384;
// RFC 6750 §2.1 b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The SHA-256 of a key's UTF-8 bytes (what `keys[].sha256` holds, as lowercase hex). */
export function keyHash(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Outcome of one attempt: the partner, or the error to answer with and the headers to send. */
export type AuthOutcome = { readonly ok: true; readonly partner: Partner } | { readonly ok: false; readonly error: GatewayError; readonly headers: Readonly<Record<string, string>> };

export interface AuthenticatorOptions {
  /** Failed attempts per client address per minute before 429. */
  readonly failuresPerMinute: number;
  /** OIDC tokens as credentials too (a JWT-shaped bearer that is no API key). */
  readonly oidc?: OidcVerifier;
}

/**
 * Finds the partner of a bearer key. One per gateway; holds the failure buckets per address.
 * Cost: one SHA-256 and one 32-byte comparison per stored key per request.
 */
export class Authenticator {
  readonly #entries: readonly { readonly hash: Buffer; readonly partner: Partner }[];
  readonly #o: AuthenticatorOptions;
  readonly #failures = new Map<string, TokenBucket>();

  constructor(partners: readonly Partner[], o: AuthenticatorOptions) {
    this.#entries = partners.flatMap((p) => p.keyHashes.map((hash) => ({ hash, partner: p })));
    this.#o = o;
  }

  /**
   * Authenticates a request from its `Authorization` header(s) and client address.
   * Errors (in the outcome, never thrown): CEG_UNAUTHENTICATED (401, `WWW-Authenticate`) when the
   *   header is missing, of another scheme (no `error` in the challenge), malformed or names no
   *   partner's key (`error="invalid_token"`) — the answer never says which of the last two —
   *   or is longer than {@link MAX_CREDENTIAL_CHARS} (the detail names the bound);
   *   CEG_MALFORMED_REQUEST (400, `error="invalid_request"`) when it is repeated; CEG_RATE_LIMITED (429, `Retry-After`) when the address failed too often;
   *   CEG_AUTH_UNAVAILABLE (503, `Retry-After`, not counted as a failure) when a JWT-shaped
   *   credential cannot be checked because the OIDC key set (JWKS) cannot be fetched.
   */
  authenticate(authorization: readonly string[] | undefined, address: string): AuthOutcome | Promise<AuthOutcome> {
    const bucket = this.#failures.get(address);
    if (bucket !== undefined) {
      bucket.drip();
      if (bucket.content < 1) {
        const retryAfterS = Math.max(1, Math.ceil(bucket.getWaitTime(1) / 1000));
        return {
          ok: false,
          error: new GatewayError('CEG_RATE_LIMITED', `too many failed authentication attempts from this address; retry in ${retryAfterS} s`, { retriable: true, details: { retryAfterS } }),
          headers: { 'retry-after': String(retryAfterS) },
        };
      }
    }
    if (authorization !== undefined && authorization.length > 1) return this.#repeated(address);
    const presented = authorization?.[0];
    if (presented !== undefined && presented.length > MAX_CREDENTIAL_CHARS) return this.#refuse(presented, address, true, `the credential is longer than ${MAX_CREDENTIAL_CHARS} characters (the Authorization header's bound)`);
    const m = presented === undefined ? null : BEARER.exec(presented);
    const partner = m === null ? undefined : this.#find(keyHash(m[1]!));
    if (partner !== undefined) return { ok: true, partner };
    const oidc = this.#o.oidc;
    if (m !== null && oidc !== undefined && looksLikeJwt(m[1]!)) {
      // The failure is counted now, before the (asynchronous) verification, and given back when the
      // token is good: otherwise every token sent before the first verification ended would pass
      // the check on arrival, and one address could have any number of bad tokens checked at once.
      const reserved = this.#fail(address);
      const release = (): void => {
        reserved.content = Math.min(reserved.bucketSize, reserved.content + 1);
      };
      return oidc.verify(m[1]!).then(
        (p): AuthOutcome => {
          if (p === undefined) return this.#refuse(presented, address, false);
          release();
          return { ok: true, partner: p };
        },
        (err: unknown): AuthOutcome => {
          release();
          // The identity provider's fault, not the caller's: 503, not counted against the address.
          if (!(err instanceof GatewayError) || err.code !== 'CEG_AUTH_UNAVAILABLE') throw err;
          const retryAfterS = typeof err.details.retryAfterS === 'number' ? err.details.retryAfterS : 1;
          return { ok: false, error: err, headers: { 'retry-after': String(retryAfterS) } };
        },
      );
    }
    return this.#refuse(presented, address);
  }

  /** Two or more Authorization headers: which one counts is ambiguous, so neither does (RFC 6750 §3.1 invalid_request). */
  #repeated(address: string): AuthOutcome {
    this.#fail(address);
    return {
      ok: false,
      error: new GatewayError('CEG_MALFORMED_REQUEST', 'send one Authorization header, not several', { retriable: false, details: { field: 'authorization' } }),
      headers: { 'www-authenticate': `Bearer realm="${AUTH_REALM}", error="invalid_request"` },
    };
  }

  /** `count`: false when the failure was counted already (a token reserved before its verification). */
  #refuse(presented: string | undefined, address: string, count = true, why = 'the credential is not valid'): AuthOutcome {
    if (count) this.#fail(address);
    // RFC 6750 §3.1: no error code when the request carries no Bearer credential at all (none, or another scheme).
    const challenge = presented === undefined || !/^bearer(?: |$)/i.test(presented) ? `Bearer realm="${AUTH_REALM}"` : `Bearer realm="${AUTH_REALM}", error="invalid_token"`;
    return {
      ok: false,
      error: new GatewayError('CEG_UNAUTHENTICATED', presented === undefined ? 'this route needs Authorization: Bearer <API key>' : why, { retriable: false, details: { field: 'authorization' } }),
      headers: { 'www-authenticate': challenge },
    };
  }

  #find(hash: Buffer): Partner | undefined {
    let found: Partner | undefined;
    for (const e of this.#entries) {
      // No early exit: every stored hash is compared whatever matched.
      if (timingSafeEqual(e.hash, hash) && found === undefined) found = e.partner;
    }
    return found;
  }

  /**
   * Forgets one tracked address to make room: the oldest that is not locked out now. Forgetting a
   * locked-out one would unlock it — failures of many other addresses must not lift a lockout — so
   * those seen on the way are moved to the end (each is passed over once per round, not on every
   * eviction), and one is forgotten only when every tracked address is locked out.
   */
  #evict(): void {
    for (let seen = this.#failures.size; seen > 0; seen--) {
      const first = this.#failures.entries().next().value;
      if (first === undefined) return;
      const [address, bucket] = first;
      this.#failures.delete(address);
      bucket.drip();
      if (bucket.content >= 1) return;
      this.#failures.set(address, bucket);
    }
    const oldest = this.#failures.keys().next().value;
    if (oldest !== undefined) this.#failures.delete(oldest);
  }

  /** Counts one failure of `address`; returns its bucket. */
  #fail(address: string): TokenBucket {
    let bucket = this.#failures.get(address);
    if (bucket === undefined) {
      if (this.#failures.size >= MAX_TRACKED_ADDRESSES) this.#evict();
      bucket = new TokenBucket({ bucketSize: this.#o.failuresPerMinute, tokensPerInterval: this.#o.failuresPerMinute, interval: 'minute' });
      bucket.content = bucket.bucketSize; // limiter's buckets start empty; an address starts with its whole allowance
      this.#failures.set(address, bucket);
    }
    bucket.tryRemoveTokens(1);
    return bucket;
  }
}
