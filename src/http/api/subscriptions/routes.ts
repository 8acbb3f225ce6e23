/**
 * `/subscriptions`: the subscription resources over HTTP (JSON).
 * - `POST /subscriptions` → 201 with `Location: /subscriptions/{name}` and the resource; when the
 *   request had no `delivery.secrets` the generated secret is in `delivery.secrets` of this answer
 *   only (`Cache-Control: no-store`).
 * - `GET /subscriptions` → `{ "items": [ … ] }`; `GET /subscriptions/{name}` → the resource. Never
 *   a secret or a sink header's value (`secretCount`, `headerNames` instead). Connector files'
 *   subscriptions are among them, read-only (`origin: file`, `connector: { kind, name }`), the
 *   short-form shell hooks and file drops this process runs included (owner `anonymous`).
 * - `PATCH /subscriptions/{name}` (JSON merge patch, `application/merge-patch+json` or
 *   `application/json`) → 200 with the resource.
 * - `DELETE /subscriptions/{name}` → 204.
 * Errors are RFC 9457 problem+json naming the field (`violations[].field`, e.g. `delivery.url`);
 * a body with a member name twice in one object is 400 CEG_MALFORMED_REQUEST naming it by its JSON
 * pointer (`/delivery/url`): nothing is created or changed.
 * Ownership (issue 11): a subscription belongs to the partner that created it. Every route
 * addresses the caller's own subscriptions; an admin addresses another owner's with `?owner=<id>`
 * (and `GET /subscriptions` without it lists every owner's). Others' subscriptions are 404. Kinds
 * need the `subscribe` permission (403), creating one past `maxSubscriptions` is 403
 * `CEG_QUOTA_EXCEEDED`, and changes to others' subscriptions are written to the audit log.
 * Spec: issue 8; issue 11; RFC 9110 §15.3.2 (201 + Location), RFC 7396 (merge patch), RFC 9457.
 */
import express from 'express';
import { ROUTE_NAME, loadedApi, notAllowed, ownerParam, subscriptionName } from './route-parts.js';
import { isContentType, isEmptyBody, jsonBody } from '../json-body.js';
import type { NextFunction, Request, Response } from 'express';
import { GatewayError } from '../../../core/errors.js';
import type { Catalog } from '../../../catalog/index.js';
import type { SubscriptionView } from '../../../bus/subscriptions/index.js';
import { accessOf } from '../../auth/index.js';

/** What the routes need (SubscriptionService fits). `owner`: the partner id the subscription belongs to; `list()` without one lists every owner's. */
export interface SubscriptionsApi {
  /** `limits.maxSubscriptions`: the owner's quota, decided with the create across instances (CEG_QUOTA_EXCEEDED). */
  create(body: unknown, owner: string, limits?: { readonly maxSubscriptions?: number }): Promise<{ view: SubscriptionView; generatedSecrets?: readonly string[] }>;
  list(owner?: string): SubscriptionView[];
  get(name: string, owner: string): SubscriptionView;
  update(name: string, patch: unknown, owner: string): Promise<SubscriptionView>;
  remove(name: string, owner: string): Promise<void>;
}

/** Largest request body of these routes, bytes. */
export const MAX_SUBSCRIPTION_BODY_BYTES = 65_536;

const JSON_TYPES = ['application/json', 'application/merge-patch+json'];



/** The router; `api()` is undefined until the subscriptions are loaded (then 503). `catalog`: for the `subscribe` permission of `kinds`. */
export function subscriptionsRouter(api: () => SubscriptionsApi | undefined, catalog: Catalog): express.Router {
  const r = express.Router();
  const need = loadedApi(api);
  const json = jsonBody({ limit: MAX_SUBSCRIPTION_BODY_BYTES, type: JSON_TYPES });
  const requireJson = (req: Request, _res: Response, next: NextFunction): void => {
    const ct = req.headers['content-type'];
    // By the header alone: req.is() answers null without a body (an empty POST is then read as `{}`).
    if (!isContentType(req, JSON_TYPES)) {
      next(new GatewayError('CEG_UNSUPPORTED_MEDIA_TYPE', 'send the subscription as application/json (PATCH: application/merge-patch+json or application/json)', { retriable: false, details: { field: 'body', contentType: (ct ?? '').slice(0, 100), supported: JSON_TYPES } }));
      return;
    }
    next();
  };
  // A short-form connector's name (its consumer group) may hold dots: GET answers it, PATCH and
  // DELETE say it is a file's (409); any other name that no resource can have is simply not there.
  const name = (req: Request): string => subscriptionName(req, ROUTE_NAME);

  const body = (req: Request): Record<string, unknown> | undefined => (typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : undefined);

  r.post('/subscriptions', requireJson, json, async (req, res) => {
    const access = accessOf(req);
    const owner = access.owner(ownerParam(req));
    // An admin creating for another partner (?owner=) is held to that partner's grant and quota.
    const ownerPartner = access.ownerPartner(owner);
    access.requireSubscribe(catalog, body(req)?.kinds, ownerPartner);
    const max = ownerPartner?.maxSubscriptions;
    // The quota is the service's: after the body's checks, then decided across instances.
    const { view, generatedSecrets } = await need().create(req.body, owner, max === undefined ? {} : { maxSubscriptions: max });
    access.audit('create-subscription', { owner, subscription: view.name });
    res.status(201)
      .location(`/subscriptions/${encodeURIComponent(view.name)}${owner === access.partner.id ? '' : `?owner=${encodeURIComponent(owner)}`}`)
      .set('cache-control', 'no-store')
      .json(generatedSecrets === undefined ? view : { ...view, delivery: { ...view.delivery, secrets: generatedSecrets } });
  });
  r.get('/subscriptions', (req, res) => {
    const access = accessOf(req);
    // An admin without ?owner= sees every owner's subscriptions; everyone else only their own.
    const asked = ownerParam(req);
    const owner = access.admin && asked === undefined ? undefined : access.owner(asked);
    res.set('cache-control', 'no-store').json({ items: need().list(owner) });
  });
  r.all('/subscriptions', notAllowed('GET, POST'));
  r.get('/subscriptions/:name', (req, res) => {
    const owner = accessOf(req).owner(ownerParam(req));
    res.set('cache-control', 'no-store').json(need().get(name(req), owner));
  });
  r.patch('/subscriptions/:name', requireJson, json, async (req, res) => {
    // RFC 7396: the body is the patch; none at all is a client mistake, not "no change" ({} is that).
    if (isEmptyBody(res)) throw new GatewayError('CEG_MALFORMED_REQUEST', 'the body is empty: a PATCH needs a JSON merge patch (send {} for no change)', { retriable: false, details: { field: 'body' } });
    const access = accessOf(req);
    const owner = access.owner(ownerParam(req));
    const n = name(req);
    access.requireSubscribe(catalog, body(req)?.kinds, access.ownerPartner(owner));
    const view = await need().update(n, req.body, owner);
    access.audit('update-subscription', { owner, subscription: n });
    res.set('cache-control', 'no-store').json(view);
  });
  r.delete('/subscriptions/:name', async (req, res) => {
    const access = accessOf(req);
    const owner = access.owner(ownerParam(req));
    const n = name(req);
    await need().remove(n, owner);
    access.audit('delete-subscription', { owner, subscription: n });
    res.status(204).end();
  });
  r.all('/subscriptions/:name', notAllowed('GET, PATCH, DELETE'));
  return r;
}
