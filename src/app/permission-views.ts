/**
 * What a subscription's owner may no longer read, shown where the subscription is shown: the
 * subscription routes' views (`forbiddenKinds`, `forbiddenReason`), the console tail's kinds, and
 * the status answer. The permission itself is the partners' `subscribe` (PARTNERS_FILE), asked
 * through `mayRead` at each call, so a reloaded partners file counts at once.
 * Spec: issue 11 ("Partners"); docs/security.md "Revoking a permission".
 */
import { GatewayError, isGatewayError } from '../core/errors.js';
import type { Catalog } from '../catalog/index.js';
import type { MayRead } from '../http/auth/index.js';
import type { SubscriptionsApi } from '../http/api/subscriptions/routes.js';
import type { SubscriptionOperationsApi } from '../http/api/subscriptions/operations.js';
import type { SubscriptionOperations, SubscriptionStatus } from '../bus/status/index.js';
import { splitReadable } from '../bus/subscriptions/index.js';
import type { SubscriptionService, SubscriptionView } from '../bus/subscriptions/index.js';
import { kindNameOf } from '../catalog/lookup.js';

/** What names a subscription's kinds and whose they are: a stored subscription, a view, a status. */
interface OwnedKinds {
  readonly owner: string;
  readonly kinds: readonly string[];
  /** `file`: declared in a connector file (the operator's, never held back by a partner's permissions). */
  readonly origin?: string;
}

/** `forbiddenKinds` and why, present only when the owner may no longer read some kind. */
export interface ForbiddenFields {
  forbiddenKinds?: string[];
  forbiddenReason?: string;
}

export interface PermissionViewsDeps {
  readonly catalog: Catalog;
  /** The permission now (it changes when the partners file is loaded). */
  readonly mayRead: () => MayRead;
  /** The subscription service; undefined while the subscriptions load. */
  readonly service: () => SubscriptionService | undefined;
}

export interface PermissionViews {
  /** The stored kinds of an HTTP subscription its owner may no longer read, by catalog name (a connector file's: none). */
  readonly forbiddenKinds: (v: OwnedKinds) => string[];
  /**
   * Every catalog kind the owner may not read (a connector file's subscription: none), by name:
   * the dead letters of these are neither shown nor redriven, whether or not the subscription
   * still names the kind (a kind PATCHed out leaves its dead letters on the same topic).
   */
  readonly heldKinds: (v: Omit<OwnedKinds, 'kinds'>) => string[];
  /** The subscription routes' view of the service; undefined while it loads. */
  readonly subscriptionsApi: (svc: SubscriptionService | undefined) => SubscriptionsApi | undefined;
  /**
   * The console tail's view: a subscription's kinds as it delivers them (without those its owner
   * may no longer read). Errors: CEG_FORBIDDEN (403, `permission: subscribe`) from `get` when it
   * delivers nothing, as a pull of it is.
   */
  readonly tailApi: (svc: SubscriptionService | undefined) => SubscriptionsApi | undefined;
  /** The operations routes' view: the status of an HTTP subscription also names the kinds held back. */
  readonly operationsApi: (ops: SubscriptionOperations | undefined) => SubscriptionOperationsApi | undefined;
}

export function permissionViews(deps: PermissionViewsDeps): PermissionViews {
  const { catalog } = deps;
  const forbiddenKinds = (v: OwnedKinds): string[] => (v.origin === 'file' ? [] : splitReadable(catalog, v.kinds, v.owner, deps.mayRead()).refused.map((r) => r.kind.name));
  const allKinds = catalog.kinds.map((k) => k.eventId);
  const heldKinds = (v: Omit<OwnedKinds, 'kinds'>): string[] => forbiddenKinds({ ...v, kinds: allKinds });
  const forbiddenFields = (v: OwnedKinds): ForbiddenFields => {
    const names = forbiddenKinds(v);
    if (names.length === 0) return {};
    const all = names.length === v.kinds.length;
    return {
      forbiddenKinds: names,
      forbiddenReason: `owner ${v.owner} may no longer read ${names.join(', ')} (subscribe permission): ${all ? 'nothing is delivered' : 'not delivered'}; the positions on ${all ? 'its' : 'their'} topics are kept and delivery resumes from them if the permission returns (PATCH kinds without ${names.length === 1 ? 'it' : 'them'}, or delete the subscription)`,
    };
  };
  const subscriptionsApi = (svc: SubscriptionService | undefined): SubscriptionsApi | undefined => {
    if (svc === undefined) return undefined;
    const shown = (v: SubscriptionView): SubscriptionView => ({ ...v, ...forbiddenFields(v) });
    return {
      create: async (body, owner, limits) => {
        const r = await svc.create(body, owner, limits);
        return { ...r, view: shown(r.view) };
      },
      list: (owner) => svc.list(owner).map(shown),
      get: (name, owner) => shown(svc.get(name, owner)),
      update: async (name, patch, owner) => shown(await svc.update(name, patch, owner)),
      remove: (name, owner) => svc.remove(name, owner),
    };
  };
  const tailApi = (svc: SubscriptionService | undefined): SubscriptionsApi | undefined => {
    const api = subscriptionsApi(svc);
    if (api === undefined) return undefined;
    return {
      ...api,
      get: (name, owner) => {
        const v = api.get(name, owner);
        if (v.forbiddenKinds === undefined) return v;
        const held = v.forbiddenKinds;
        const kinds = v.kinds.filter((k) => !held.includes(kindNameOf(catalog, k)));
        if (kinds.length === 0) throw new GatewayError('CEG_FORBIDDEN', `subscription ${v.name} delivers nothing: ${v.forbiddenReason ?? ''}`, { retriable: false, details: { permission: 'subscribe', field: 'kinds', forbiddenKinds: held } });
        return { ...v, kinds };
      },
    };
  };
  const operationsApi = (ops: SubscriptionOperations | undefined): SubscriptionOperationsApi | undefined => {
    if (ops === undefined) return undefined;
    return {
      target: (name, owner) => ops.target(name, owner),
      deadLetters: (name, q, owner) => ops.deadLetters(name, q, owner),
      redrive: (name, sel, owner) => ops.redrive(name, sel, owner),
      purge: (name, sel, owner) => ops.purge(name, sel, owner),
      status: async (name, owner) => {
        const st = await ops.status(name, owner);
        const service = deps.service();
        if (st.origin !== 'api' || service === undefined) return st;
        let view: SubscriptionView;
        try {
          view = service.get(name, owner);
        } catch (err) {
          if (isGatewayError(err, 'CEG_NOT_FOUND')) return st;
          throw err;
        }
        const out: SubscriptionStatus & ForbiddenFields = { ...st, ...forbiddenFields(view) };
        return out;
      },
    };
  };
  return { forbiddenKinds, heldKinds, subscriptionsApi, tailApi, operationsApi };
}
