/**
 * The operator console: one page at `/console` and the two read-only data routes only it needs.
 * Everything else the page shows comes from the public API (`/catalog`, `/subscriptions`, a
 * subscription's `status` and `deadletters`), with the same `Authorization` header, so the console
 * can do nothing an API caller with the same key cannot.
 * - `GET /console`, `/console/app.js`, `/console/app.css`: the page (no inline script: the answer
 *   carries a Content-Security-Policy that allows scripts and styles from this origin only).
 * The page and its assets are public (a browser loads them without a key); the data routes need
 * a key: the trace an admin's (it crosses every partner's kinds), the tail the subscription's owner
 * (or an admin with `?owner=`), as everywhere (issue 11).
 * - `GET /console/api/trace/{correlationid}[?since=<ms epoch>]` → `{ correlationid, complete,
 *   roots: [ChainNode + data], invalid }` — the chain as a tree (bus spec T15), read like
 *   `ce-gateway trace` (group-less, bounded by `traceTimeoutMs`, 10 s in the gateway).
 * - `GET /console/api/tail/{subscription}` → `text/event-stream`: the subscription's kinds from now
 *   on, one `data:` JSON message per record (`{ valid, attributes, data, topic, partition, offset }`
 *   or `{ valid: false, reason, … }`), a `: heartbeat` comment every 15 s; the read stops when the
 *   client goes. Read-only: no consumer group is left behind, nothing is committed.
 * Spec: issue 16 ("Operator console"); WHATWG HTML §9.2 (server-sent events).
 */
import { Router } from 'express';
import type { Request, Response } from 'express';
import type { Catalog } from '../../catalog/index.js';
import type { EventCodec } from '../../codec/event/index.js';
import { buildChain, readChain } from '../../bus/trace/index.js';
import type { ChainNode, LocatedEvent } from '../../bus/trace/index.js';
import { startTail } from '../../bus/tail/index.js';
import { GatewayError } from '../../core/errors.js';
import type { Logger } from '../../observability/index.js';
import type { Transport } from '../../transport/port.js';
import type { SubscriptionsApi } from '../api/subscriptions/routes.js';
import { accessOf } from '../auth/index.js';
import type { PullSlots } from '../api/subscriptions/pull-slots.js';
import { STREAM_SEND_STALL_MS, cutWhenStalled, writeWithBackpressure } from '../api/subscriptions/send-stall.js';
import { STREAM_MAX_LIFE_MS } from '../api/subscriptions/pull-routes.js';
import { notAllowed, queryParams } from '../api/subscriptions/route-parts.js';
import { streamErrorMessage } from '../api/errors.js';
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_ICON, CONSOLE_JS } from './page.js';
import { kindOf } from '../../catalog/lookup.js';

export interface ConsoleDeps {
  readonly catalog: Catalog;
  readonly transport: Transport;
  readonly codec: () => EventCodec;
  /** The subscription resources (their kinds name what the live tail reads); undefined while they load. */
  readonly subscriptions: () => SubscriptionsApi | undefined;
  /** Upper bound of one chain read, ms. */
  readonly traceTimeoutMs: number;
  readonly log: Logger;
  /**
   * How long a live tail's answer may make no progress (a client that stopped reading), ms, a whole
   * number ≥ 1; past it the connection is closed. Default STREAM_SEND_STALL_MS (pull's).
   */
  readonly sendStallMs?: number;
  /**
   * How long one live tail may stay open, ms, a whole number ≥ 1: then it ends with a closing
   * comment (the console page tails again). Default STREAM_MAX_LIFE_MS (10 min, a pull stream's):
   * the send-stall cut cannot see a client that stopped reading an idle tail (the connection's
   * buffers take its heartbeats for days), which would hold the caller's slot and a broker read
   * for ever.
   */
  readonly tailMaxLifeMs?: number;
}

/** A correlationid as the console accepts it in a path: 1–256 visible characters, no controls. */
const CORRELATION_ID = /^[^\p{Cc}\p{Cf}]{1,256}$/u;
/** Heartbeat comment interval of the live tail, ms: below the usual 30–60 s proxy idle timeouts. */
const HEARTBEAT_MS = 15_000;
/** A strict policy: this origin's script and style only, no framing, no plugins. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

type ConsoleNode = Omit<ChainNode, 'children'> & { readonly data: unknown; readonly children: ConsoleNode[] };

function withData(nodes: readonly ChainNode[], dataAt: ReadonlyMap<string, unknown>): ConsoleNode[] {
  return nodes.map((n) => ({ ...n, data: dataAt.get(`${n.topic}/${n.partition}/${n.offset}`) ?? null, children: withData(n.children, dataAt) }));
}

function staticAsset(type: string, body: string): (req: Request, res: Response) => void {
  return (_req, res) => {
    res.set({ 'content-security-policy': CSP, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'cache-control': 'no-cache' }).type(type).send(body);
  };
}

/**
 * The console's router (mounted after authentication, like the rest of the API).
 * `slots`: the caller's cap on long-lived reads, shared with the pull routes; a live tail holds
 * one slot (it runs a Kafka read for as long as it is open, as a stream does). Absent: uncapped.
 * Errors (answered as problem+json): CEG_RATE_LIMITED (429, `Retry-After`) for a tail over the cap.
 *   RangeError (thrown here) when `deps.sendStallMs` is not a whole number ≥ 1.
 */
export function consoleRouter(deps: ConsoleDeps, slots?: PullSlots): Router {
  const r = Router();
  const stallMs = deps.sendStallMs ?? STREAM_SEND_STALL_MS;
  if (!Number.isInteger(stallMs) || stallMs < 1) throw new RangeError(`sendStallMs: a whole number ≥ 1, not ${String(stallMs)}`);
  const maxLifeMs = deps.tailMaxLifeMs ?? STREAM_MAX_LIFE_MS;
  if (!Number.isInteger(maxLifeMs) || maxLifeMs < 1) throw new RangeError(`tailMaxLifeMs: a whole number ≥ 1, not ${String(maxLifeMs)}`);
  r.get('/console', staticAsset('text/html; charset=utf-8', CONSOLE_HTML));
  r.get('/console/app.js', staticAsset('text/javascript; charset=utf-8', CONSOLE_JS));
  r.get('/console/app.css', staticAsset('text/css; charset=utf-8', CONSOLE_CSS));
  r.get('/console/favicon.svg', staticAsset('image/svg+xml', CONSOLE_ICON));

  // express answers HEAD with the GET handler: a HEAD would start a tail (a broker read holding the
  // caller's pull slot) or read every topic for a trace, for an answer without a body. Refused as
  // the pull routes refuse it.
  r.head(['/console/api/trace/:correlationid', '/console/api/tail/:name'], notAllowed('GET', false));
  r.get('/console/api/trace/:correlationid', async (req, res) => {
    // A chain crosses every partner's kinds and shows their data: admins only (issue 11).
    const access = accessOf(req);
    access.require('admin', access.partner.id);
    const id = String(req.params.correlationid);
    if (!CORRELATION_ID.test(id)) throw new GatewayError('CEG_MALFORMED_REQUEST', 'correlationid: 1–256 characters without control characters', { retriable: false, details: { field: 'correlationid' } });
    // The query checked as on every /subscriptions route: an unknown or repeated parameter is a 400
    // naming it (a misspelt `?snce=` read the whole log without a word).
    const sinceText = queryParams(req, ['since']).get('since');
    const since = sinceText === undefined ? undefined : Number(sinceText);
    if (since !== undefined && !(Number.isSafeInteger(since) && since >= 0)) throw new GatewayError('CEG_MALFORMED_REQUEST', 'since: milliseconds since the epoch', { retriable: false, details: { field: 'since' } });
    const topics = [...new Set(deps.catalog.kinds.map((k) => k.topic.name))];
    const chain = await readChain(deps.transport, deps.codec(), topics, id, { timeoutMs: deps.traceTimeoutMs, ...(since === undefined ? {} : { sinceMs: since }) });
    const dataAt = new Map(chain.events.map((e: LocatedEvent) => [`${e.topic}/${e.partition}/${e.offset}`, e.event.data?.kind === 'json' ? e.event.data.value : null]));
    res.set('cache-control', 'no-store').json({ correlationid: id, complete: chain.complete, roots: withData(buildChain(chain.events), dataAt), invalid: chain.invalid });
  });

  r.get('/console/api/tail/:name', async (req, res) => {
    const api = deps.subscriptions();
    if (api === undefined) throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'the gateway is starting: subscriptions are not loaded yet', { retriable: true });
    // The caller's own subscription (an admin: ?owner=); CEG_NOT_FOUND for an unknown name or another partner's (issue 11).
    // Only `owner`, once, as on the /subscriptions routes (it ignored any other parameter).
    const view = api.get(String(req.params.name), accessOf(req).owner(queryParams(req, ['owner']).get('owner')));
    // Before the read starts: a refused tail costs the broker nothing. Held by the caller, as a pull's slot.
    slots?.take(accessOf(req).partner.id, res);
    const kinds = view.kinds.map((k) => kindOf(deps.catalog, k)).filter((k) => k !== undefined);
    const eventIds = new Set(kinds.map((k) => k.eventId));
    const topics = [...new Set(kinds.map((k) => k.topic.name))];
    // The read starts (its positions pinned at the end offsets) before the answer does, so a
    // failure to start is still a problem+json answer and every record after the 200 is shown.
    const pending: string[] = [];
    let open = false;
    // Backpressure: the read takes its next record only once the socket took this one (a client
    // that stops reading held every record read since in memory); a stalled answer is cut below.
    const send = (chunk: string): void | Promise<void> => {
      if (!open) {
        pending.push(chunk);
        return;
      }
      return writeWithBackpressure(res, chunk);
    };
    const read = await startTail(deps.transport, deps.codec(), { eventIds, topics, from: { kind: 'latest' } }, (item) => send(`data: ${JSON.stringify(item)}\n\n`));
    res.status(200).set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.flushHeaders();
    cutWhenStalled(res, stallMs, (waitingBytes) => deps.log.warn({ subscription: view.name, waitingBytes, stallMs }, 'console tail: the client read nothing for the send-stall bound; connection closed'));
    res.write(': tailing\n\n');
    open = true;
    for (const chunk of pending.splice(0)) res.write(chunk);
    // Skipped while the socket is backed up (something is waiting to be sent anyway).
    const heartbeat = setInterval(() => {
      if (!res.writableNeedDrain && !res.destroyed) res.write(': heartbeat\n\n');
    }, HEARTBEAT_MS);
    let stopped = false;
    const stop = (): void => {
      if (stopped) return;
      stopped = true;
      clearInterval(heartbeat);
      clearTimeout(lifetime);
      read.stop().catch((err: unknown) => deps.log.warn({ subscription: view.name, err: String(err) }, 'console tail: stopping the read failed'));
    };
    // The tail's lifetime (tailMaxLifeMs): the read stops, and its end ends the answer cleanly.
    const lifetime = setTimeout(() => {
      if (!res.destroyed) res.write(`: this tail's lifetime (${maxLifeMs} ms) is over: tail again\n\n`);
      stop();
    }, maxLifeMs);
    req.on('close', stop);
    read.done.then(
      () => res.end(),
      (err: unknown) => {
        deps.log.warn({ subscription: view.name, err: String(err) }, 'console tail: the read failed');
        // Said before the end, as a pull stream does: the page showed nothing and tailed again each second.
        if (!stopped && !res.destroyed) res.write(streamErrorMessage(err, req.originalUrl));
        res.end();
      },
    );
  });
  return r;
}
