/**
 * Authorization: what an authenticated partner may do, as small checks every route calls.
 *
 * How a route uses it (see also src/http/README.md):
 * ```ts
 * import { accessOf } from '../auth/index.js';
 * r.post('/subscriptions/:name/replay', async (req, res) => {
 *   const access = accessOf(req);                        // the partner of this request (never undefined behind the middleware)
 *   const owner = access.owner(req.query.owner);         // own id, or ?owner= for an admin; 404 otherwise
 *   const sub = service.get(name, owner);                // 404 when it does not exist
 *   access.require('replay', sub.owner);                 // BOLA: 404 for others' subscriptions; BFLA: 403 without admin or `replay`
 *   access.audit('replay', { subscription: name, owner: sub.owner });   // admin actions go to the audit log
 * });
 * ```
 * Rules (issue 11): a subscription belongs to the partner that created it; other partners get 404
 * for it and everything under it (dead letters, cursors, replays) — never 403, which would
 * confirm it exists (OWASP API1:2023, BOLA). Replay and redrive need `admin`, or the `replay` /
 * `redrive` permission for one's own subscriptions (OWASP API5:2023, BFLA). Every admin action
 * (replay, redrive, purge, changes to others' subscriptions) is written to the audit log: one info
 * line with `audit: true`, the partner, the action and its target.
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../../core/errors.js';
import type { Catalog, EventKind } from '../../catalog/index.js';
import { DEFAULT_OWNER, NAME_PATTERN } from '../../bus/subscriptions/index.js';
import type { Envelope, Violation } from '../../envelope/index.js';
import type { Logger } from '../../observability/index.js';
import { kindAllowed, sourceAllowed } from './partners.js';
import type { Partner, Permission } from './partners.js';
import { kindOf } from '../../catalog/lookup.js';

/** What a route may ask for: a per-subscription permission, or the `admin` role. */
export type Capability = Permission | 'admin';

/**
 * The caller of a gateway without authentication (`AUTH=none`, loopback only): owner `anonymous`
 * (the owner of every subscription created before issue 11), every permission, any `source`,
 * every kind but internal ones.
 */
export const ANONYMOUS: Partner = Object.freeze({
  id: DEFAULT_OWNER,
  keyHashes: Object.freeze([]),
  sources: Object.freeze([Object.freeze({ value: '', prefix: true })]),
  publish: Object.freeze({ all: true, eventIds: new Set<string>() }),
  subscribe: Object.freeze({ all: true, eventIds: new Set<string>() }),
  permissions: new Set<Permission>(['replay', 'redrive']),
  roles: new Set(['admin'] as const),
  limits: Object.freeze({}),
});

/** What an audited action came to: `ok`, or `failed` with the error code (see {@link Access.audited}). */
export type AuditOutcome = { readonly outcome: 'ok' } | { readonly outcome: 'failed'; readonly error: string };

export function isAdmin(p: Partner): boolean {
  return p.roles.has('admin');
}

/** 404 naming what was looked for and the request's part that named it (`name`, or `owner` for `?owner=`). */
function notFound(what: string, field: 'name' | 'owner' = 'name'): GatewayError {
  return new GatewayError('CEG_NOT_FOUND', `no ${what}`, { retriable: false, details: { field } });
}

function forbidden(permission: Capability | 'subscribe', message: string, field?: string): GatewayError {
  return new GatewayError('CEG_FORBIDDEN', message, { retriable: false, details: { permission, ...(field === undefined ? {} : { field }) } });
}

/** The authorization of one request: its partner and the checks on it. */
export class Access {
  readonly partner: Partner;
  readonly #audit: Logger;
  readonly #partners: ReadonlyMap<string, Partner> | undefined;

  /** `partners`: every partner of the file by id, so an admin acting for an owner meets that owner's grants and quota. */
  constructor(partner: Partner, audit: Logger, partners?: ReadonlyMap<string, Partner>) {
    this.partner = partner;
    this.#audit = audit;
    this.#partners = partners;
  }

  /**
   * The partner whose resources `owner` names: the caller itself, or (an admin acting with
   * `?owner=`) that partner of the file; undefined for an owner the file does not have.
   */
  ownerPartner(owner: string): Partner | undefined {
    return owner === this.partner.id ? this.partner : this.#partners?.get(owner);
  }

  get admin(): boolean {
    return isAdmin(this.partner);
  }

  /**
   * The owner whose subscriptions the request addresses: the partner's own id, or for an admin the
   * `?owner=` query value. A non-admin naming another owner gets 404 (not 403: nothing is confirmed).
   * Errors: CEG_NOT_FOUND (another owner, not admin); CEG_INVALID_NAME (not a valid owner).
   */
  owner(query: unknown): string {
    if (query === undefined || query === this.partner.id) return this.partner.id;
    if (typeof query !== 'string' || !NAME_PATTERN.test(query)) throw new GatewayError('CEG_INVALID_NAME', 'owner: 1–100 of [A-Za-z0-9_-], starting with a letter or digit', { retriable: false, details: { field: 'owner' } });
    if (!this.admin) throw notFound(`subscriptions of owner ${query}`, 'owner');
    return query;
  }

  /**
   * The ownership check (BOLA): passes when the partner owns `owner`'s resources or is an admin.
   * Errors: CEG_NOT_FOUND (`what`, e.g. `subscription orders`) otherwise.
   */
  assertOwns(owner: string, what = 'such subscription'): void {
    if (owner !== this.partner.id && !this.admin) throw notFound(what);
  }

  /**
   * Ownership, then the capability (BFLA): `admin` passes everything; otherwise the partner must own
   * the resource and hold `capability` (`replay`, `redrive`; `admin` needs the role).
   * Errors: CEG_NOT_FOUND (not the owner), CEG_FORBIDDEN naming `permission`.
   */
  require(capability: Capability, owner: string, what?: string): void {
    this.assertOwns(owner, what);
    if (this.admin) return;
    if (capability === 'admin' || !this.partner.permissions.has(capability)) {
      throw forbidden(capability, capability === 'admin' ? 'this needs the admin role' : `this needs the ${capability} permission (or the admin role)`);
    }
  }

  /**
   * Kinds a subscription may name (by eventId or name): each must be in the partner's `subscribe`
   * (a `*` covers every kind but internal ones).
   * For a partner that is not an admin, an internal kind it may not read is answered exactly as a
   * name the catalog does not have (400 CEG_INVALID_SUBSCRIPTION, `unknown event kind "…"`, every
   * such name listed, as the subscription's own validation words it): a 403 would confirm the
   * internal kind exists, which `/catalog`, AsyncAPI and the JSON Schemas otherwise hide (issue 11).
   * Unknown names are therefore answered here too for such a partner, with the hidden ones; for an
   * admin they are left to the resource's validation. A public kind outside `subscribe` stays 403.
   * `subscriber`: whose `subscribe` grant decides — the subscription's owner (an admin creating
   * one for another partner with `?owner=` is held to that partner's grant); default the caller.
   * Errors: CEG_INVALID_SUBSCRIPTION (unknown or hidden kinds, field `kinds[i]`); CEG_FORBIDDEN
   *   naming `subscribe` and the field (`kinds[i]`).
   */
  requireSubscribe(catalog: Catalog, kinds: unknown, subscriber: Partner = this.partner): void {
    if (!Array.isArray(kinds)) return;
    const unknown: { field: string; reason: string }[] = [];
    let refused: GatewayError | undefined;
    kinds.forEach((k, i) => {
      if (typeof k !== 'string') return;
      const kind = kindOf(catalog, k);
      if (kind !== undefined && kindAllowed(subscriber.subscribe, kind)) return;
      if (!this.admin && (kind === undefined || kind.internal)) {
        unknown.push({ field: `kinds[${i}]`, reason: `unknown event kind "${k}"` });
        return;
      }
      if (kind !== undefined) refused ??= forbidden('subscribe', `partner ${subscriber.id} may not subscribe to ${kind.name}${kind.internal ? ' (an internal kind: it needs an explicit subscribe permission)' : ''}`, `kinds[${i}]`);
    });
    // The same answer as SubscriptionService's validation of an unknown kind (service.ts `invalid`).
    if (unknown.length > 0) {
      throw new GatewayError('CEG_INVALID_SUBSCRIPTION', `invalid subscription: ${unknown.map((p) => `${p.field}: ${p.reason}`).join('; ')}`, { retriable: false, details: { field: unknown[0]!.field, violations: unknown } });
    }
    if (refused !== undefined) throw refused;
  }

  /**
   * Writes an admin action to the audit log: always for `replay`, `redrive`, `purge`; for other
   * actions when they touch another owner's resources.
   */
  audit(action: string, target: { readonly owner: string; readonly [k: string]: unknown }, outcome?: AuditOutcome): void {
    const adminOnly = action === 'replay' || action === 'redrive' || action === 'purge';
    if (!adminOnly && target.owner === this.partner.id) return;
    this.#audit.info({ audit: true, partner: this.partner.id, admin: this.admin, action, target, ...outcome }, 'audit: admin action');
  }

  /**
   * Runs an audited action, then writes its audit line with the outcome: `ok`, or `failed` with
   * the error's code (a replay of no such subscription, a store that cannot be reached). Written
   * after the action so the line says what happened, not only what was asked. Rethrows the error.
   */
  async audited<T>(action: string, target: { readonly owner: string; readonly [k: string]: unknown }, run: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await run();
    } catch (err) {
      this.audit(action, target, { outcome: 'failed', error: err instanceof GatewayError ? err.code : 'CEG_INTERNAL' });
      throw err;
    }
    this.audit(action, target, { outcome: 'ok' });
    return result;
  }
}

/**
 * Whether the owner of a subscription may read events of `kind` now. Asked outside any request,
 * where no token or key is at hand: by the reconciler when it builds the members it runs (push),
 * by the pull service on every answer, by the console tail and the status/GET answers.
 */
export type MayRead = (owner: string, kind: EventKind) => boolean;

/**
 * The read permission of subscription owners, from the partners the gateway loaded (PARTNERS_FILE,
 * read once at start-up: a change applies when each instance restarts with the new file):
 * - a partner of the file: its `subscribe` grant, as {@link Access.requireSubscribe} checks it at
 *   create. An OIDC partner is a partner of the file too (the token's claim names it, the file
 *   holds its permissions), so the same grant applies at delivery time, when there is no token;
 * - `anonymous` (subscriptions created without authentication, or by an admin with
 *   `?owner=anonymous`): the anonymous caller's grant, every kind but internal ones;
 * - an owner the file no longer names: nothing (a removed partner's subscriptions deliver nothing,
 *   as Kafka ACLs deny a principal whose ACLs were deleted).
 * Without partners (`AUTH=none`) nothing is checked: every owner may read every kind.
 * The decision is deliberately the same as Nakadi's (read authorization checked per event type on
 * every consumption, not only when the subscription is created) and Kafka's (an ACL removed applies
 * to an existing consumer at its next request): see docs/security.md, "Revoking a permission".
 */
export function ownerMayRead(partners: readonly Partner[] | undefined): MayRead {
  if (partners === undefined) return () => true;
  const byId = new Map(partners.map((p) => [p.id, p]));
  return (owner, kind) => {
    const p = byId.get(owner) ?? (owner === DEFAULT_OWNER ? ANONYMOUS : undefined);
    return p !== undefined && kindAllowed(p.subscribe, kind);
  };
}

const accesses = new WeakMap<IncomingMessage, Access>();

/** Attaches the request's authorization (the server's middleware does, before any route runs). */
export function attachAccess(req: IncomingMessage, access: Access): void {
  accesses.set(req, access);
}

/** The access attached to `req`, or undefined on a public path (no authentication ran). */
export function attachedAccess(req: IncomingMessage): Access | undefined {
  return accesses.get(req);
}

/**
 * The authorization of a request that passed the middleware.
 * Errors: CEG_INTERNAL when none is attached (a route mounted outside the middleware: a bug).
 */
export function accessOf(req: IncomingMessage): Access {
  const a = accesses.get(req);
  if (a === undefined) throw new GatewayError('CEG_INTERNAL', 'no authorization attached to this request', { retriable: false });
  return a;
}

/**
 * Whether `partner` may know that the internal kind `kind` exists: an admin, or a partner whose
 * `publish` or `subscribe` names it (internal kinds only count when named). For anyone else an
 * internal kind is answered exactly as a type the catalog lacks, as `/catalog`, AsyncAPI and the
 * JSON Schemas hide it (issue 11; docs/security.md "Internal kinds").
 */
export function seesInternal(partner: Partner, kind: EventKind): boolean {
  return isAdmin(partner) || partner.publish.eventIds.has(kind.eventId) || partner.subscribe.eventIds.has(kind.eventId);
}

/**
 * Ingress authorization, decided from each event's `type` and `source` before its data is looked at:
 * an internal kind is never accepted over HTTP, the kind must be in the partner's `publish`, the
 * `source` must match one of its `sources`. Unknown types are left to validation (400), and so
 * are internal kinds the partner may not know of ({@link seesInternal}): validation answers them
 * as unknown, so a 403 here never confirms one exists.
 * Errors: CEG_FORBIDDEN (nothing is produced) listing every refused event (`index` in a batch) and
 *   naming the first refusal's permission (`internal`, `publish`, `source`).
 */
export function admitEvents(partner: Partner, catalog: Catalog, events: readonly (Envelope | undefined)[], batch: boolean): void {
  const violations: Violation[] = [];
  let permission: string | undefined;
  events.forEach((env, index) => {
    if (env === undefined) return;
    const at = batch ? { index } : {};
    const found = catalog.byEventId(env.attributes.type);
    const kind = found !== undefined && found.internal && !seesInternal(partner, found) ? undefined : found;
    if (kind !== undefined && kind.internal) {
      violations.push({ ...at, attribute: 'type', reason: `${kind.name} is an internal kind: never accepted over HTTP`, code: 'CEG_FORBIDDEN' });
      permission ??= 'internal';
    } else if (kind !== undefined && !kindAllowed(partner.publish, kind)) {
      violations.push({ ...at, attribute: 'type', reason: `partner ${partner.id} may not publish ${kind.name} (publish permission)`, code: 'CEG_FORBIDDEN' });
      permission ??= 'publish';
    }
    if (!sourceAllowed(partner.sources, env.attributes.source)) {
      violations.push({ ...at, attribute: 'source', reason: `partner ${partner.id} may not publish as source ${env.attributes.source.slice(0, 200)}`, code: 'CEG_FORBIDDEN' });
      permission ??= 'source';
    }
  });
  if (violations.length > 0) {
    throw new GatewayError('CEG_FORBIDDEN', `not permitted (${permission ?? 'publish'}): ${violations.map((v) => v.reason).join('; ')}; nothing was produced`, { retriable: false, details: { permission, violations } });
  }
}
