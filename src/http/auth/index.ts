/**
 * Partner identity, permissions and limits (issue 11): the partners file, bearer authentication,
 * per-partner rate limits, and the authorization checks routes call (`accessOf(req)`).
 */
export { ANONYMOUS, Access, accessOf, admitEvents, attachAccess, attachedAccess, isAdmin, ownerMayRead } from './access.js';
export type { Capability, MayRead } from './access.js';
export { AUTH_REALM, Authenticator, keyHash } from './authenticate.js';
export type { AuthOutcome } from './authenticate.js';
export { HttpAuth } from './middleware.js';
export type { AuthStats, AuthStep, HttpAuthOptions, IngressAdmission } from './middleware.js';
export { NEUTRAL_BY, PARTNERS_WATCH_INTERVAL_MS, PERMISSIONS, ROLES, kindAllowed, loadPartners, parsePartners, partnersWithoutCredentials, sourceAllowed, warnWhenPartnersFileChanges, withoutCredentialsMessage } from './partners.js';
export type { KindGrant, LoadedPartners, Partner, PartnerLimits, PartnerWithoutCredentials, Permission, Role, SourceRule } from './partners.js';
export { OidcVerifier, looksLikeJwt, readJwksFile } from './oidc.js';
export type { OidcOptions } from './oidc.js';
export { PartnerRateLimits } from './rate-limit.js';
export type { RateDefaults, RateOutcome } from './rate-limit.js';
