/**
 * OAuth2 / OIDC bearer tokens (JWT access tokens) as partner credentials, verified with `jose`:
 * signature against a JWKS (a file, or a URL fetched and cached by `jose`), asymmetric algorithms
 * only, `iss` and `aud` as configured, `exp` required, `exp` / `nbf` with 30 s of clock tolerance,
 * an `iat` in the future refused, and the header's `typ` one of `OIDC_TOKEN_TYPES` (default
 * `at+jwt`, so an ID token — `typ: JWT` — is no access token). The claim `OIDC_PARTNER_CLAIM`
 * (default `sub`) names the partner: its value must be the `id` of a partner in PARTNERS_FILE,
 * whose permissions, sources and limits then apply. Tokens never reach a log.
 *
 * A JWKS that cannot be fetched (refused, timed out, not 200, not a key set) is the gateway's
 * fault, not the caller's: {@link OidcVerifier.verify} throws CEG_AUTH_UNAVAILABLE (503), and for
 * {@link JWKS_RETRY_MS} after a failed fetch no new fetch is made — tokens whose key is in a
 * still-fresh cached set keep being verified, every other token gets the same 503 at once.
 * Spec: issue 11 ("Optionally OAuth2 / OIDC JWT bearer tokens (JWKS from a file or URL, claims
 *   mapped to a partner) through a well-kept library"); RFC 9068 (JWT access tokens) §2.1 (`typ`
 *   `at+jwt`), §2.2 (`exp` required), §4 (validation); RFC 7519 §4.1.4, §4.1.6; RFC 8725 §3.11
 *   (explicit typing).
 */
import { readFileSync } from 'node:fs';
import type { JSONWebKeySet, JWTHeaderParameters, JWTVerifyGetKey, FlattenedJWSInput, jwtVerify } from 'jose';
import { GatewayError } from '../../core/errors.js';
import type { Logger } from '../../observability/index.js';
import type { Partner } from './partners.js';

export interface OidcOptions {
  readonly issuer: string;
  readonly audience: string;
  /** JWKS URL (fetched by `jose`, cached, refreshed on an unknown `kid`). */
  readonly jwksUrl?: string;
  /** JWKS file (read once at start). */
  readonly jwksFile?: string;
  /** The claim whose value is the partner id. */
  readonly partnerClaim: string;
  /**
   * Accepted values of the JWS header `typ`, compared as RFC 8725 §3.11 says (case-insensitive,
   * an `application/` prefix ignored); undefined: any `typ`, or none. Default (config): `at+jwt`.
   */
  readonly tokenTypes?: readonly string[];
}

/** Asymmetric signatures only: a shared-secret HS256 token would make every JWKS holder a signer. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** Clock skew allowed on `exp`, `nbf` and `iat`, seconds. */
const CLOCK_TOLERANCE_S = 30;
/** After a failed JWKS fetch, ms during which no new fetch is made (every uncached token gets 503). */
export const JWKS_RETRY_MS = 5000;
/** Errors of the key lookup that are the token's fault (its `kid` / `alg` matches no usable key). */
const TOKEN_KEY_ERRORS: ReadonlySet<string> = new Set(['ERR_JWKS_NO_MATCHING_KEY', 'ERR_JWKS_MULTIPLE_MATCHING_KEYS', 'ERR_JOSE_NOT_SUPPORTED', 'ERR_JOSE_ALG_NOT_ALLOWED']);

/** Whether a bearer credential has the shape of a JWS compact serialization (three base64url parts). */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(credential);
}

/** A `typ` value as RFC 8725 §3.11 / RFC 7515 §4.1.9 compare it: lowercase, without `application/`. */
function normalizeTyp(typ: string): string {
  const t = typ.toLowerCase();
  return t.startsWith('application/') ? t.slice('application/'.length) : t;
}

const codeOf = (err: unknown): string | undefined => (typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : undefined);

interface Loaded {
  readonly jwtVerify: typeof jwtVerify;
  readonly keys: JWTVerifyGetKey;
}

/**
 * The key set of `OIDC_JWKS_FILE` (RFC 7517 §5: a JSON object with a `keys` array), read at start
 * and by `ce-gateway config check`.
 * Errors: CEG_INVALID_OPTIONS (retriable: false) when the file cannot be read or is not a JWKS.
 */
export function readJwksFile(file: string): JSONWebKeySet {
  try {
    const jwks = JSON.parse(readFileSync(file, 'utf8')) as JSONWebKeySet;
    if (!Array.isArray(jwks.keys)) throw new Error('no "keys" array');
    return jwks;
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `OIDC_JWKS_FILE: ${file} is not a readable JWKS`, { retriable: false, cause: err });
  }
}

export class OidcVerifier {
  readonly #o: OidcOptions;
  /** The key source: a JWKS read at construction, or the JWKS URL. */
  readonly #source: { readonly jwks: JSONWebKeySet } | { readonly url: URL };
  readonly #partners: ReadonlyMap<string, Partner>;
  readonly #types: ReadonlySet<string> | undefined;
  readonly #log: Logger | undefined;
  /** `jose` and the key set, made on the first token: a gateway without OIDC never loads `jose`. */
  #verifier: Promise<Loaded> | undefined;
  /** Until when (epoch ms) no JWKS fetch is made, after one failed. */
  #downUntil = 0;

  /** Errors: CEG_INVALID_OPTIONS when the JWKS file cannot be read or is not a JWKS. */
  constructor(o: OidcOptions, partners: readonly Partner[], log?: Logger) {
    this.#o = o;
    this.#log = log;
    this.#partners = new Map(partners.map((p) => [p.id, p]));
    this.#types = o.tokenTypes === undefined ? undefined : new Set(o.tokenTypes.map(normalizeTyp));
    if (o.jwksFile !== undefined) {
      this.#source = { jwks: readJwksFile(o.jwksFile) };
    } else if (o.jwksUrl !== undefined) {
      this.#source = { url: new URL(o.jwksUrl) };
    } else {
      throw new GatewayError('CEG_INVALID_OPTIONS', 'OIDC needs OIDC_JWKS_URL or OIDC_JWKS_FILE', { retriable: false });
    }
  }

  #unavailable(retryAfterMs: number, cause?: unknown): GatewayError {
    const retryAfterS = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return new GatewayError('CEG_AUTH_UNAVAILABLE', `the identity provider's key set (JWKS) cannot be fetched: tokens cannot be verified now; retry in ${retryAfterS} s (API keys still work)`, {
      retriable: true,
      cause,
      details: { retryAfterS },
    });
  }

  #load(): Promise<Loaded> {
    const source = this.#source;
    this.#verifier ??= import('jose').then((jose) => {
      if ('jwks' in source) return { jwtVerify: jose.jwtVerify, keys: jose.createLocalJWKSet(source.jwks) };
      const remote = jose.createRemoteJWKSet(source.url, { timeoutDuration: 5000, cooldownDuration: 30_000 });
      const where = `${source.url.origin}${source.url.pathname}`; // the query may hold a credential
      const keys = async (header: JWTHeaderParameters, token: FlattenedJWSInput): Promise<Awaited<ReturnType<JWTVerifyGetKey>>> => {
        const waitMs = this.#downUntil - Date.now();
        if (waitMs > 0) {
          // No fetch while the last one failed: only a fresh cached set may still answer.
          const cached = remote.fresh ? remote.jwks() : undefined;
          if (cached === undefined) throw this.#unavailable(waitMs);
          try {
            return await jose.createLocalJWKSet(cached)(header, token);
          } catch (err) {
            // An unknown kid may be a key published since: that cannot be known until a fetch works.
            if (codeOf(err) === 'ERR_JWKS_NO_MATCHING_KEY') throw this.#unavailable(waitMs, err);
            throw err;
          }
        }
        try {
          return await remote(header, token);
        } catch (err) {
          if (TOKEN_KEY_ERRORS.has(codeOf(err) ?? '')) throw err;
          this.#downUntil = Date.now() + JWKS_RETRY_MS;
          this.#log?.warn({ jwks: where, err: err instanceof Error ? err.message : String(err), retryInMs: JWKS_RETRY_MS }, 'oidc: the JWKS cannot be fetched; tokens whose key is not cached get 503 CEG_AUTH_UNAVAILABLE');
          throw this.#unavailable(JWKS_RETRY_MS, err);
        }
      };
      return { jwtVerify: jose.jwtVerify, keys };
    });
    return this.#verifier;
  }

  /**
   * The partner a valid token names; undefined for any invalid token (signature, issuer, audience,
   * `typ`, a missing `exp`, expiry, `nbf`, an `iat` in the future, unknown partner).
   * Errors: CEG_AUTH_UNAVAILABLE (retriable; `details.retryAfterS`) when the JWKS cannot be fetched.
   */
  async verify(token: string): Promise<Partner | undefined> {
    let loaded: Loaded;
    try {
      loaded = await this.#load();
    } catch (err) {
      this.#verifier = undefined;
      this.#log?.error({ err: err instanceof Error ? err.message : String(err) }, 'oidc: the verifier cannot be loaded');
      throw this.#unavailable(JWKS_RETRY_MS, err);
    }
    try {
      const { payload, protectedHeader } = await loaded.jwtVerify(token, loaded.keys, {
        issuer: this.#o.issuer,
        audience: this.#o.audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['exp'],
      });
      if (this.#types !== undefined && (typeof protectedHeader.typ !== 'string' || !this.#types.has(normalizeTyp(protectedHeader.typ)))) return undefined;
      // jose checks `iat` only with maxTokenAge; a token issued in the future is forged or from a broken clock.
      if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + CLOCK_TOLERANCE_S) return undefined;
      const id = payload[this.#o.partnerClaim];
      return typeof id === 'string' ? this.#partners.get(id) : undefined;
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'CEG_AUTH_UNAVAILABLE') throw err;
      return undefined;
    }
  }
}
