/**
 * Where an OpenID provider publishes its configuration: one rule shared by config (checks
 * OIDC_ISSUER at start) and the token verifier (fetches the document).
 * Spec: OpenID Connect Discovery 1.0 §2 (an issuer is an https URL without query or fragment), §4.
 */
import { GatewayError } from './errors.js';

/**
 * The discovery document's URL of `issuer`: `<issuer without a trailing "/">/.well-known/openid-configuration`.
 * Spec: OpenID Connect Discovery 1.0 §4 ("any terminating / MUST be removed before appending").
 * Errors: CEG_INVALID_OPTIONS when `issuer` is no http(s) URL, or holds userinfo, a query or a
 * fragment (§2: an issuer has none).
 */
export function discoveryUrlOf(issuer: string): URL {
  let u: URL;
  try {
    u = new URL(issuer);
  } catch {
    throw new GatewayError('CEG_INVALID_OPTIONS', 'OIDC_ISSUER: not a URL; without OIDC_JWKS_URL or OIDC_JWKS_FILE the key set is found through the issuer\'s discovery document', { retriable: false });
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '') {
    throw new GatewayError('CEG_INVALID_OPTIONS', 'OIDC_ISSUER: an issuer for discovery is an https URL without user:password@, query or fragment', { retriable: false });
  }
  return new URL(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`);
}
