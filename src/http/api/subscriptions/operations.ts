/**
 * A subscription's dead letters and status over HTTP (issue 10), for every subscription the
 * gateway knows by name — HTTP resources, connector files, and library or connector subscriptions
 * run by this process (named by their consumer group, dots allowed):
 * - `GET /subscriptions/{name}/deadletters?limit=&after=` → `{ "items": [ … ], "next": "<token>" | null }`
 *   (`limit` 1–1,000, default 100);
 * - `POST /subscriptions/{name}/deadletters/redrive` with `{ "events": [ { "source", "id" }, … ] }`
 *   (exactly those events), `{ "ids": [ … ] }` (those ids from any source), `{ "deadLetters":
 *   [ { "partition", "offset" }, … ] }` (exactly those dead letters on the subscription's
 *   dead-letter topic, readable or not) or `{ "all": true }`
 *   → 200 `{ "redriven", "items", "skipped", "notFound" }`;
 * - `DELETE /subscriptions/{name}/deadletters` — no body and no Content-Type (all), `{ "all": true }`,
 *   `{ "events": [ … ] }`, `{ "ids": [ … ] }` or `{ "deadLetters": [ … ] }` → 200 `{ "purged", "items",
 *   "notFound" }`; a Content-Type without content is 400 naming `body` (a selection that did not
 *   arrive must not purge everything);
 * - `GET /subscriptions/{name}/status` → state, lag per partition, counts, last error and delivery.
 * Errors are RFC 9457 problem+json naming the field: CEG_INVALID_PARAMETER for `limit`/`after`,
 * CEG_MALFORMED_REQUEST for the body (`ids`, `ids[i]`, `events`, `events[i]`, `events[i].source`,
 * `events[i].id`, `deadLetters`, `deadLetters[i]`, `deadLetters[i].partition|offset|topic`, `all`,
 * `body`), CEG_NOT_FOUND for `name`,
 * CEG_CONFLICT for a redrive of a pull subscription.
 * Spec: issue 10; RFC 9457.
 */
import express from 'express';
import { ROUTE_NAME, loadedApi, notAllowed, ownerParam, subscriptionName } from './route-parts.js';
import { jsonBody as readJsonBody } from '../json-body.js';
import { accessOf } from '../../auth/index.js';
import type { NextFunction, Request, Response } from 'express';
import { GatewayError } from '../../../core/errors.js';
import { MAX_IDS, deadLetterRefProblem } from '../../../bus/deadletters/index.js';
import type { DeadLetterPage, DeadLetterRef, EventRef, PurgeResult, RedriveResult, Selection } from '../../../bus/deadletters/index.js';
import type { SubscriptionStatus } from '../../../bus/status/index.js';
import { MAX_SUBSCRIPTION_BODY_BYTES } from './routes.js';

/** What the routes need (SubscriptionOperations fits). */
export interface SubscriptionOperationsApi {
  /** The subscription as `owner` addresses it (its `owner` decides who may act on it). Errors: CEG_NOT_FOUND. */
  target(name: string, owner: string): { readonly name: string; readonly owner: string };
  deadLetters(name: string, q: { readonly limit?: number; readonly after?: string }, owner: string): Promise<DeadLetterPage>;
  redrive(name: string, sel: Selection, owner: string): Promise<RedriveResult>;
  purge(name: string, sel: Selection, owner: string): Promise<PurgeResult>;
  status(name: string, owner: string): Promise<SubscriptionStatus>;
}

/** Longest event id accepted in `ids` and `events`, characters. */
const MAX_ID_LENGTH = 1000;
/** Longest event source accepted in `events`, characters (a URI-reference; CloudEvents sets no bound, this is generous). */
const MAX_SOURCE_LENGTH = 4096;
/** The selections a body may hold, exactly one of them. */
const SELECTORS = ['events', 'ids', 'deadLetters', 'all'];
const SHAPES = '{ "events": [ { "source": …, "id": … } ] }, { "ids": [ … ] }, { "deadLetters": [ { "partition": …, "offset": "…" } ] } or { "all": true }';

const bad = (field: string, message: string): GatewayError => new GatewayError('CEG_MALFORMED_REQUEST', `${field}: ${message}`, { retriable: false, details: { field } });

/**
 * `{ "events": [ { "source": "…", "id": "…" }, … ] }` (exactly those events: CloudEvents 1.0.2
 * §id identifies an event by `source` + `id`), `{ "ids": [...] }` (those ids from any source),
 * `{ "deadLetters": [ { "partition": 0, "offset": "12" }, … ] }` (exactly those dead letters on the
 * subscription's dead-letter topic, the listing's `deadLetter`; a `topic` member is allowed and
 * checked against that topic by the service; break report E5: a dead letter that does not decode
 * has no id or source) or `{ "all": true }` (and, when `emptyMeansAll`, no body at all; an empty
 * object `{}` selects nothing and is refused, so a half-built request never purges everything).
 * One kind per body. Each list holds 1–MAX_IDS entries; duplicates count once.
 * Errors: CEG_MALFORMED_REQUEST naming `body` (also for several kinds at once), `ids`, `ids[i]`,
 *   `events`, `events[i]`, `events[i].source`, `events[i].id`, `deadLetters`, `deadLetters[i]`,
 *   `deadLetters[i].partition`, `deadLetters[i].offset`, `deadLetters[i].topic` (or an unknown
 *   member of one, `events[i].<name>`, `deadLetters[i].<name>`) or `all`.
 */
export function parseSelection(body: unknown, emptyMeansAll: boolean): Selection {
  if (body === undefined) {
    if (emptyMeansAll) return { all: true };
    throw bad('body', `send ${SHAPES} as application/json`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('body', `a JSON object: ${SHAPES}`);
  const o = body as Record<string, unknown>;
  const unknown = Object.keys(o).find((k) => !SELECTORS.includes(k));
  if (unknown !== undefined) throw bad(unknown.slice(0, 100), `unknown field; send ${SHAPES}`);
  const given = SELECTORS.filter((k) => k in o);
  if (given.length > 1) throw bad('body', `one of events, ids, deadLetters or all, not several (got ${given.join(' and ')})`);
  // `{}` selects nothing: said about the body, not about `ids` (which the caller did not send). Not
  // "all" either where an absent body means all: a purge of everything is asked for explicitly.
  if (given.length === 0) throw bad('body', `one of events, ids, deadLetters or all: ${SHAPES}`);
  if ('all' in o) {
    if (o.all !== true) throw bad('all', 'true (to select every dead letter), or send events, ids or deadLetters instead');
    return { all: true };
  }
  if ('events' in o) return { events: parseEvents(o.events) };
  if ('deadLetters' in o) return { deadLetters: parseDeadLetters(o.deadLetters) };
  if (!Array.isArray(o.ids)) throw bad('ids', `an array of 1–${MAX_IDS} event ids`);
  if (o.ids.length === 0 || o.ids.length > MAX_IDS) throw bad('ids', `an array of 1–${MAX_IDS} event ids`);
  o.ids.forEach((id, i) => {
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) throw bad(`ids[${i}]`, `an event id: a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  });
  return { ids: [...new Set(o.ids as string[])] };
}

/** The `events` of a selection. Errors: CEG_MALFORMED_REQUEST naming `events`, `events[i]` or a member of one. */
function parseEvents(list: unknown): EventRef[] {
  const shape = `an array of 1–${MAX_IDS} objects { "source": "<event source>", "id": "<event id>" }`;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_IDS) throw bad('events', shape);
  const seen = new Map<string, EventRef>();
  list.forEach((e: unknown, i) => {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) throw bad(`events[${i}]`, 'an object { "source": "<event source>", "id": "<event id>" }');
    const m = e as Record<string, unknown>;
    const extra = Object.keys(m).find((k) => k !== 'source' && k !== 'id');
    if (extra !== undefined) throw bad(`events[${i}].${extra.slice(0, 100)}`, 'unknown member; an event is named by source and id only');
    if (typeof m.source !== 'string' || m.source.length === 0 || m.source.length > MAX_SOURCE_LENGTH) throw bad(`events[${i}].source`, `the event's source: a non-empty string of at most ${MAX_SOURCE_LENGTH} characters`);
    if (typeof m.id !== 'string' || m.id.length === 0 || m.id.length > MAX_ID_LENGTH) throw bad(`events[${i}].id`, `the event's id: a non-empty string of at most ${MAX_ID_LENGTH} characters`);
    seen.set(JSON.stringify([m.source, m.id]), { source: m.source, id: m.id });
  });
  return [...seen.values()];
}

/**
 * The `deadLetters` of a selection, in the order given (the service names a wrong `topic` by its
 * index; duplicates count once there).
 * Errors: CEG_MALFORMED_REQUEST naming `deadLetters`, `deadLetters[i]` or a member of one.
 */
function parseDeadLetters(list: unknown): DeadLetterRef[] {
  const shape = `an array of 1–${MAX_IDS} objects { "partition": <integer ≥ 0>, "offset": "<decimal text>" } (the listing's deadLetter)`;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_IDS) throw bad('deadLetters', shape);
  return list.map((d: unknown, i) => {
    if (typeof d !== 'object' || d === null || Array.isArray(d)) throw bad(`deadLetters[${i}]`, 'an object { "partition": <integer ≥ 0>, "offset": "<decimal text>" }');
    const m = d as Record<string, unknown>;
    const extra = Object.keys(m).find((k) => k !== 'partition' && k !== 'offset' && k !== 'topic' && k !== 'time');
    if (extra !== undefined) throw bad(`deadLetters[${i}].${extra.slice(0, 100)}`, 'unknown member; a dead letter is named by partition and offset (topic optional)');
    const problem = deadLetterRefProblem(m);
    if (problem !== undefined) throw bad(`deadLetters[${i}].${problem.member}`, problem.message);
    return { ...(m.topic === undefined ? {} : { topic: m.topic as string }), partition: m.partition as number, offset: m.offset as string };
  });
}

const badParameter = (field: string, message: string): GatewayError => new GatewayError('CEG_INVALID_PARAMETER', `${field}: ${message}`, { retriable: false, details: { field } });

/** `limit` and `after` of the listing. Errors: CEG_INVALID_PARAMETER naming the parameter (an unknown or repeated one too). */
export function parseListQuery(query: Request['query']): { limit?: number; after?: string } {
  const unknown = Object.keys(query).find((k) => k !== 'limit' && k !== 'after' && k !== 'owner');
  if (unknown !== undefined) throw badParameter(unknown.slice(0, 100), 'unknown parameter; the listing takes limit and after');
  const one = (name: string): string | undefined => {
    const v = query[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw badParameter(name, 'give it once');
    return v;
  };
  const limit = one('limit');
  const after = one('after');
  if (limit !== undefined && !/^\d{1,4}$/.test(limit)) throw badParameter('limit', 'an integer from 1 to 1000');
  return { ...(limit === undefined ? {} : { limit: Number(limit) }), ...(after === undefined ? {} : { after }) };
}


/** The router; `api()` is undefined until the gateway is ready (then 503). */
export function subscriptionOperationsRouter(api: () => SubscriptionOperationsApi | undefined): express.Router {
  const r = express.Router();
  const need = loadedApi(api);
  const name = (req: Request): string => subscriptionName(req, ROUTE_NAME);
  // A body is optional on DELETE; when there is one it is JSON.
  const json = readJsonBody({ limit: MAX_SUBSCRIPTION_BODY_BYTES, type: () => true });
  const jsonBody = (req: Request, _res: Response, next: NextFunction): void => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (length === 0 && req.headers['transfer-encoding'] === undefined) {
      // A Content-Type with no content is a body that did not arrive, not "no body": Node's
      // http.request sends a DELETE's written body with neither Content-Length nor chunked framing
      // (so by RFC 9112 §6.3 it is no body, and its bytes then fail as a next request). Read as
      // "no body" that selection became "purge everything". Purging all takes no Content-Type,
      // or `{ "all": true }`.
      if (req.headers['content-type'] !== undefined) {
        next(new GatewayError('CEG_MALFORMED_REQUEST', 'a Content-Type came without content (empty JSON is not JSON): send the selection with a Content-Length, or no Content-Type and no body to select every dead letter', { retriable: false, details: { field: 'body' } }));
        return;
      }
      next();
      return;
    }
    if (!req.is('application/json')) {
      next(new GatewayError('CEG_UNSUPPORTED_MEDIA_TYPE', 'send the selection as application/json', { retriable: false, details: { field: 'body', contentType: String(req.headers['content-type'] ?? '').slice(0, 100), supported: ['application/json'] } }));
      return;
    }
    json(req, _res, next);
  };
  const noStore = (res: Response): Response => res.set('cache-control', 'no-store');

  // Who may act (issue 11): another owner's subscription is 404 (BOLA); redrive and purge need
  // the `redrive` permission or the admin role (BFLA) and are written to the audit log.
  const addressed = (req: Request, capability?: 'redrive', also: readonly string[] = []): { name: string; owner: string; access: ReturnType<typeof accessOf> } => {
    const access = accessOf(req);
    const n = name(req);
    const t = need().target(n, access.owner(ownerParam(req, also)));
    if (capability === undefined) access.assertOwns(t.owner);
    else access.require(capability, t.owner);
    return { name: n, owner: t.owner, access };
  };
  r.get('/subscriptions/:name/deadletters', async (req, res) => {
    const a = addressed(req, undefined, ['limit', 'after']);
    noStore(res).json(await need().deadLetters(a.name, parseListQuery(req.query), a.owner));
  });
  r.delete('/subscriptions/:name/deadletters', jsonBody, async (req, res) => {
    const a = addressed(req, 'redrive');
    const sel = parseSelection(req.body, true);
    noStore(res).json(await a.access.audited('purge', { owner: a.owner, subscription: a.name }, () => need().purge(a.name, sel, a.owner)));
  });
  r.all('/subscriptions/:name/deadletters', notAllowed('GET, DELETE'));
  r.post('/subscriptions/:name/deadletters/redrive', jsonBody, async (req, res) => {
    const a = addressed(req, 'redrive');
    const sel = parseSelection(req.body, false);
    noStore(res).json(await a.access.audited('redrive', { owner: a.owner, subscription: a.name }, () => need().redrive(a.name, sel, a.owner)));
  });
  r.all('/subscriptions/:name/deadletters/redrive', notAllowed('POST'));
  r.get('/subscriptions/:name/status', async (req, res) => {
    const a = addressed(req);
    noStore(res).json(await need().status(a.name, a.owner));
  });
  r.all('/subscriptions/:name/status', notAllowed('GET'));
  return r;
}
