/**
 * Bearer authentication with API keys: `Authorization: Bearer <key>` → the partner whose key it is.
 * The presented key is hashed (SHA-256 of its UTF-8 bytes) and compared with every stored hash in
 * constant time (`crypto.timingSafeEqual`, no early exit), so neither a match nor its position
 * leaks through timing. Failed attempts are counted per client address (token bucket, `limiter`):
 * past `AUTH_FAILURES_PER_MINUTE` the address gets 429 before any key is looked at. An OIDC token
 * is charged as a failure only once it proved invalid; so that concurrent bad tokens cannot
 * overshoot the limit, no more tokens of one address are verified at once than failures it has
 * left — the others wait for a verification to end (at most {@link MAX_WAITING_TOKENS_PER_ADDRESS}).
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
/**
 * Most OIDC tokens of one client address waiting for a verification slot at once (an address may
 * verify as many tokens at once as it has failures left). Past it a token is answered 429 at once,
 * not counted as a failure: it bounds the requests one address can park while the key set is
 * fetched (up to 5 s), while a burst of valid tokens (a client's connection pool) only waits.
 */
export const MAX_WAITING_TOKENS_PER_ADDRESS = 256;

/** The OIDC tokens of one address being verified (`active`) and waiting for a slot (`waiting`). */
interface Verifying {
  active: number;
  /** Requests holding this entry (verifying or waiting): it is dropped when none does. */
  users: number;
  readonly waiting: (() => void)[];
}

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
  readonly #verifying = new Map<string, Verifying>();

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
   *   CEG_MALFORMED_REQUEST (400, `error="invalid_request"`) when it is repeated; CEG_RATE_LIMITED (429, `Retry-After`) when the address failed too often,
   *   or (not counted as a failure) when more than {@link MAX_WAITING_TOKENS_PER_ADDRESS} of its OIDC tokens wait to be verified;
   *   CEG_AUTH_UNAVAILABLE (503, `Retry-After`, not counted as a failure) when a JWT-shaped
   *   credential cannot be checked because the OIDC key set (JWKS) cannot be fetched.
   */
  authenticate(authorization: readonly string[] | undefined, address: string): AuthOutcome | Promise<AuthOutcome> {
    const limited = this.#lockedOut(address);
    if (limited !== undefined) return limited;
    if (authorization !== undefined && authorization.length > 1) return this.#repeated(address);
    const presented = authorization?.[0];
    if (presented !== undefined && presented.length > MAX_CREDENTIAL_CHARS) return this.#refuse(presented, address, `the credential is longer than ${MAX_CREDENTIAL_CHARS} characters (the Authorization header's bound)`);
    const m = presented === undefined ? null : BEARER.exec(presented);
    const partner = m === null ? undefined : this.#find(keyHash(m[1]!));
    if (partner !== undefined) return { ok: true, partner };
    const oidc = this.#o.oidc;
    if (m !== null && oidc !== undefined && looksLikeJwt(m[1]!)) return this.#verifyToken(oidc, m[1]!, presented!, address);
    return this.#refuse(presented, address);
  }

  /** 429 when `address` has no failed attempt left (its bucket below 1), else undefined. */
  #lockedOut(address: string): AuthOutcome | undefined {
    const bucket = this.#failures.get(address);
    if (bucket === undefined) return undefined;
    bucket.drip();
    if (bucket.content >= 1) return undefined;
    const retryAfterS = Math.max(1, Math.ceil(bucket.getWaitTime(1) / 1000));
    return {
      ok: false,
      error: new GatewayError('CEG_RATE_LIMITED', `too many failed authentication attempts from this address; retry in ${retryAfterS} s`, { retriable: true, details: { retryAfterS } }),
      headers: { 'retry-after': String(retryAfterS) },
    };
  }

  /** Failed attempts `address` has left now (whole ones). */
  #allowance(address: string): number {
    const bucket = this.#failures.get(address);
    if (bucket === undefined) return this.#o.failuresPerMinute;
    bucket.drip();
    return Math.floor(bucket.content);
  }

  /**
   * Verifies an OIDC token, charging a failure only when it proves invalid. A valid token must never
   * count as a failed login, also while the key set is fetched (an earlier design reserved a
   * failure per token in flight: 30 concurrent valid tokens got 20 × 429, and the address's API
   * keys too). Verifications of one address run at most as many at once as it has failures left,
   * so concurrent bad tokens alone never overshoot the allowance; the others wait (bounded) and are
   * checked again when one ends: 429 if the address has been locked out meanwhile.
   */
  async #verifyToken(oidc: OidcVerifier, token: string, presented: string, address: string): Promise<AuthOutcome> {
    let v = this.#verifying.get(address);
    if (v === undefined) this.#verifying.set(address, (v = { active: 0, users: 0, waiting: [] }));
    v.users++;
    try {
      while (v.active >= this.#allowance(address)) {
        const limited = this.#lockedOut(address);
        if (limited !== undefined) return limited;
        if (v.waiting.length >= MAX_WAITING_TOKENS_PER_ADDRESS) {
          return {
            ok: false,
            error: new GatewayError('CEG_RATE_LIMITED', 'too many tokens from this address are being verified at once; retry in 1 s', { retriable: true, details: { retryAfterS: 1 } }),
            headers: { 'retry-after': '1' },
          };
        }
        const waiting = v.waiting;
        await new Promise<void>((resolve) => waiting.push(resolve));
      }
      v.active++;
      try {
        const p = await oidc.verify(token);
        return p === undefined ? this.#refuse(presented, address) : { ok: true, partner: p };
      } catch (err) {
        // The identity provider's fault, not the caller's: 503, not counted against the address.
        if (!(err instanceof GatewayError) || err.code !== 'CEG_AUTH_UNAVAILABLE') throw err;
        const retryAfterS = typeof err.details.retryAfterS === 'number' ? err.details.retryAfterS : 1;
        return { ok: false, error: err, headers: { 'retry-after': String(retryAfterS) } };
      } finally {
        v.active--;
        // Every waiter checks again (a slot, or a lockout); those that find none queue up anew.
        for (const wake of v.waiting.splice(0)) wake();
      }
    } finally {
      if (--v.users === 0) this.#verifying.delete(address);
    }
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

  #refuse(presented: string | undefined, address: string, why = 'the credential is not valid'): AuthOutcome {
    this.#fail(address);
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

  /**
   * Counts one failure of `address`; returns its bucket. The count may go below zero: wrong API
   * keys checked while its tokens were verified leave that many fewer failures for the tokens, and
   * the excess is a debt the bucket refills first (a longer lockout), so over time the address
   * still fails no more often than the allowance says.
   */
  #fail(address: string): TokenBucket {
    let bucket = this.#failures.get(address);
    if (bucket === undefined) {
      if (this.#failures.size >= MAX_TRACKED_ADDRESSES) this.#evict();
      bucket = new TokenBucket({ bucketSize: this.#o.failuresPerMinute, tokensPerInterval: this.#o.failuresPerMinute, interval: 'minute' });
      bucket.content = bucket.bucketSize; // limiter's buckets start empty; an address starts with its whole allowance
      this.#failures.set(address, bucket);
    }
    bucket.drip();
    bucket.content -= 1;
    return bucket;
  }
}
