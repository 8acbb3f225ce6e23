/**
 * OAuth2 / OIDC bearer tokens (JWT access tokens) as partner credentials, verified with `jose`:
 * signature against a JWKS (a file, or a URL fetched and cached by `jose`), asymmetric algorithms
 * only, `iss` and `aud` as configured, `exp` / `nbf` with 30 s of clock tolerance. The claim
 * `OIDC_PARTNER_CLAIM` (default `sub`) names the partner: its value must be the `id` of a partner
 * in PARTNERS_FILE, whose permissions, sources and limits then apply. Tokens never reach a log.
 * Spec: issue 11 ("Optionally OAuth2 / OIDC JWT bearer tokens (JWKS from a file or URL, claims
 *   mapped to a partner) through a well-kept library"); RFC 9068 (JWT access tokens) §4; RFC 7519.
 */
import { readFileSync } from 'node:fs';
import type { JSONWebKeySet, JWTVerifyGetKey, jwtVerify } from 'jose';
import { GatewayError } from '../../core/errors.js';
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
}

/** Asymmetric signatures only: a shared-secret HS256 token would make every JWKS holder a signer. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** Whether a bearer credential has the shape of a JWS compact serialization (three base64url parts). */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(credential);
}

export class OidcVerifier {
  readonly #o: OidcOptions;
  /** The key source: a JWKS read at construction, or the JWKS URL. */
  readonly #source: { readonly jwks: JSONWebKeySet } | { readonly url: URL };
  readonly #partners: ReadonlyMap<string, Partner>;
  /** `jose` and the key set, made on the first token: a gateway without OIDC never loads `jose`. */
  #verifier: Promise<{ readonly jwtVerify: typeof jwtVerify; readonly keys: JWTVerifyGetKey }> | undefined;

  /** Errors: CEG_INVALID_OPTIONS when the JWKS file cannot be read or is not a JWKS. */
  constructor(o: OidcOptions, partners: readonly Partner[]) {
    this.#o = o;
    this.#partners = new Map(partners.map((p) => [p.id, p]));
    if (o.jwksFile !== undefined) {
      let jwks: JSONWebKeySet;
      try {
        jwks = JSON.parse(readFileSync(o.jwksFile, 'utf8')) as JSONWebKeySet;
        if (!Array.isArray(jwks.keys)) throw new Error('no "keys" array');
      } catch (err) {
        throw new GatewayError('CEG_INVALID_OPTIONS', `OIDC_JWKS_FILE: ${o.jwksFile} is not a readable JWKS`, { retriable: false, cause: err });
      }
      this.#source = { jwks };
    } else if (o.jwksUrl !== undefined) {
      this.#source = { url: new URL(o.jwksUrl) };
    } else {
      throw new GatewayError('CEG_INVALID_OPTIONS', 'OIDC needs OIDC_JWKS_URL or OIDC_JWKS_FILE', { retriable: false });
    }
  }

  #load(): Promise<{ readonly jwtVerify: typeof jwtVerify; readonly keys: JWTVerifyGetKey }> {
    const source = this.#source;
    this.#verifier ??= import('jose').then((jose) => ({
      jwtVerify: jose.jwtVerify,
      keys: 'jwks' in source ? jose.createLocalJWKSet(source.jwks) : jose.createRemoteJWKSet(source.url, { timeoutDuration: 5000, cooldownDuration: 30_000 }),
    }));
    return this.#verifier;
  }

  /** The partner a valid token names; undefined for any invalid token (signature, issuer, audience, expiry, unknown partner). Never rejects. */
  async verify(token: string): Promise<Partner | undefined> {
    try {
      const { jwtVerify, keys } = await this.#load();
      const { payload } = await jwtVerify(token, keys, { issuer: this.#o.issuer, audience: this.#o.audience, algorithms: ALGORITHMS, clockTolerance: 30 });
      const id = payload[this.#o.partnerClaim];
      return typeof id === 'string' ? this.#partners.get(id) : undefined;
    } catch {
      return undefined;
    }
  }
}
