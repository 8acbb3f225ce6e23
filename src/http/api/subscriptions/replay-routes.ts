/**
 * Replay over HTTP (issue 9):
 * - `POST /subscriptions/{name}/replay` with `{ "to": "earliest" | "latest" | "<RFC 3339 time>" |
 *   { "<partition>": <offset>, … }, "dryRun": bool }` → 200 with `{ at, by, to, dryRun,
 *   partitions: { "<p>": { from, to, events, skipped } }, events, skipped }` (the audit entry).
 *   A real replay answers once the offsets moved and delivery resumed on every instance; when its
 *   audit entry could not be written, still 200 (the offsets moved: an error would have the
 *   operator replay again), with `auditFailure: { code, message }`.
 * - `GET /subscriptions/{name}/replays` → the audit log of the subscription: a JSON array of those
 *   entries, oldest first.
 * Errors are RFC 9457 problem+json naming the field (`to`, `to.3`, `dryRun`): 400
 * CEG_INVALID_REPLAY, 404 CEG_NOT_FOUND, 409 CEG_CONFLICT (a replay under way; a subscription of a
 * connector file, or a stored one such a file shadows), 503 CEG_REPLAY_FAILED / CEG_BROKER_UNAVAILABLE (retriable, with `Retry-After`:
 * the same request again is safe, e.g. after the group's coordinator moved mid-replay), answered
 * as soon as the replay failed (its `failed` state and audit entry are written behind it).
 * Who may replay (issue 11): the owner holding the `replay` permission, or an admin (`?owner=` for
 * another owner's subscription); others get 404 for it. `by` is the caller's partner id; every
 * replay that began (a dry run, or one that paused delivery, with its outcome) is written to the
 * replay audit log, and every request to the security audit log with `to` and `dryRun`
 * ({@link replayAuditFields}). In `GET …/replays` a caller that is not an admin sees `by`
 * as its own id or, for a replay an admin made, `"admin"` ({@link REDACTED_BY}): admins' partner
 * ids are not shown to partners (the audit log keeps them).
 */
import express from 'express';
import { loadedApi, notAllowed, ownerParam, subscriptionName } from './route-parts.js';
import { isContentType, jsonBody } from '../json-body.js';
import { NEUTRAL_BY, accessOf } from '../../auth/index.js';
import type { NextFunction, Request, Response } from 'express';
import { GatewayError } from '../../../core/errors.js';
import { MAX_REPLAY_ENTRY_BYTES, MAX_REPLAY_PARTITIONS } from '../../../bus/subscriptions/index.js';
import type { ReplayAnswer, ReplayAuditEntry } from '../../../bus/subscriptions/index.js';

/** What the routes need (ReplayCoordinator fits). */
export interface ReplaysApi {
  replay(name: string, body: unknown, by: string, owner: string): Promise<ReplayAnswer>;
  list(name: string, owner: string): Promise<readonly ReplayAuditEntry[]>;
}

/** `by` of a replay an owner did not make itself, in `GET …/replays` for a caller that is not an admin (never a partner's id: reserved). */
export const REDACTED_BY = NEUTRAL_BY;

/**
 * Largest replay request body, bytes (3,201,024): room for {@link MAX_REPLAY_PARTITIONS} partitions
 * of explicit offsets written the longest way ({@link MAX_REPLAY_ENTRY_BYTES} each: a 249-character
 * topic, offsets as strings, indented) plus 1 KiB for the rest, so a request listing too many
 * partitions is answered 400 naming `to`, not 413 naming `body`. Larger than the other management
 * routes' 64 KiB: this route alone takes a list that grows with the partitions of a subscription
 * (at 64 KiB about 2,000 one-topic partitions fit, and 230 of the longest keys). The server checks
 * an `Expect: 100-continue` request to it against this bound too ({@link MAX_API_BODY_BYTES}).
 */
export const MAX_REPLAY_BODY_BYTES = MAX_REPLAY_PARTITIONS * MAX_REPLAY_ENTRY_BYTES + 1024;


/** Characters of a `to` text kept in the security audit line, and partitions of explicit offsets listed there. */
const AUDIT_TO_CHARS = 100;
const AUDIT_TO_PARTITIONS = 10;

const cut = (text: string, n: number): string => (text.length > n ? `${text.slice(0, n)}…` : text);

/**
 * What the security audit line of a replay says of its request (pure): `to` and `dryRun` as the
 * caller sent them, bounded, since they come from outside and the line is written for a refused
 * request too — a text cut to 100 characters; explicit offsets as `{ partitions: <count>,
 * offsets: { <key>: <offset>, … } }` with the first 10 partitions (keys cut to 100, offsets to 30
 * characters); anything else as `{ type }`. `dryRun` absent is `false` (the default), a value
 * that is not a boolean is `{ type }`. The line is JSON (pino), so control characters in a value
 * are escaped, never a line of their own; nothing of the request is a secret (no credential goes in
 * a replay body), and the logger's redaction still applies.
 */
export function replayAuditFields(body: unknown): { readonly to?: unknown; readonly dryRun?: unknown } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return {};
  const { to, dryRun } = body as { to?: unknown; dryRun?: unknown };
  const typeOf = (v: unknown): { type: string } => ({ type: v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v });
  let shown: unknown;
  if (typeof to === 'string') shown = cut(to, AUDIT_TO_CHARS);
  else if (typeof to === 'object' && to !== null && !Array.isArray(to)) {
    const entries = Object.entries(to as Record<string, unknown>);
    // fromEntries defines own properties: a key `__proto__` stays a key, never the prototype.
    const offsets = Object.fromEntries(entries.slice(0, AUDIT_TO_PARTITIONS).map(([k, v]) => [cut(k, AUDIT_TO_CHARS), typeof v === 'number' ? v : typeof v === 'string' ? cut(v, 30) : typeOf(v)]));
    shown = { partitions: entries.length, offsets };
  } else if (to !== undefined) shown = typeOf(to);
  return { ...(shown === undefined ? {} : { to: shown }), dryRun: dryRun === undefined ? false : typeof dryRun === 'boolean' ? dryRun : typeOf(dryRun) };
}

/** The router; `api()` is undefined until the subscriptions are loaded (then 503). */
export function replayRouter(api: () => ReplaysApi | undefined): express.Router {
  const r = express.Router();
  const need = loadedApi(api);
  const name = (req: Request): string => subscriptionName(req);
  const json = jsonBody({ limit: MAX_REPLAY_BODY_BYTES, type: 'application/json' });
  const requireJson = (req: Request, _res: Response, next: NextFunction): void => {
    // By the header alone: req.is() answers null without a body (an empty POST is then read as `{}`: `to` required).
    if (!isContentType(req, ['application/json'])) {
      next(new GatewayError('CEG_UNSUPPORTED_MEDIA_TYPE', 'send the replay request as application/json', { retriable: false, details: { field: 'body', contentType: String(req.headers['content-type'] ?? '').slice(0, 100), supported: ['application/json'] } }));
      return;
    }
    next();
  };

  // Who may replay (issue 9, 11): the owner holding the `replay` permission, or an admin (BFLA 403);
  // another owner's subscription is 404 (BOLA). Every replay is audited, with its `to` and `dryRun`.
  r.post('/subscriptions/:name/replay', requireJson, json, async (req, res) => {
    const access = accessOf(req);
    const owner = access.owner(ownerParam(req));
    access.require('replay', owner);
    const n = name(req);
    const entry = await access.audited('replay', { owner, subscription: n, ...replayAuditFields(req.body) }, () => need().replay(n, req.body, access.partner.id, owner));
    res.set('cache-control', 'no-store').json(entry);
  });
  r.all('/subscriptions/:name/replay', notAllowed('POST'));
  r.get('/subscriptions/:name/replays', async (req, res) => {
    const access = accessOf(req);
    const owner = access.owner(ownerParam(req));
    access.assertOwns(owner);
    const entries = await need().list(name(req), owner);
    // An admin sees who replayed. An owner sees its own id, and `admin` for a replay someone
    // else made — only an admin can replay another's subscription — so admins' partner ids do
    // not leak to partners (they are accounts worth attacking).
    res.set('cache-control', 'no-store').json(access.admin ? entries : entries.map((e) => (e.by === access.partner.id ? e : { ...e, by: REDACTED_BY })));
  });
  r.all('/subscriptions/:name/replays', notAllowed('GET'));
  return r;
}
