/**
 * `POST /events`: the CloudEvents HTTP binding (binary, structured, batch) to Kafka records.
 * Answers `202` only after the broker acknowledged every event of the request; when it cannot
 * confirm within the deadline, `503` with `Retry-After` and, per event, whether it was stored —
 * nothing half-written is reported as accepted. Runs on node:http ahead of express (DESIGN
 * "Performance notes"): the router and the SDK parser stay off this hot path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError } from '../../core/errors.js';
import type { RecordPublisher } from '../../bus/publisher/index.js';
import type { EventCodec } from '../../codec/event/index.js';
import { BatchViolationsError, parseHttpRequest } from '../../codec/http/index.js';
import type { ParsedHttpRequest } from '../../codec/http/index.js';
import type { Violation } from '../../envelope/index.js';
import type { Logger } from '../../observability/index.js';
import type { Position } from '../../transport/port.js';
import { readBody } from '../body.js';
import { sendJson, sendProblem } from '../respond.js';
import { prepareEvents } from './prepare.js';

export interface IngressOptions {
  /** Largest request body, bytes. */
  readonly maxBodyBytes: number;
  /** Most events in one batch request. */
  readonly maxBatchEvents: number;
  /** How long to wait for the broker's acknowledgement, ms. */
  readonly ackTimeoutMs: number;
  /** `Retry-After` on 503, seconds. */
  readonly retryAfterS: number;
  readonly dataschemaBase: string;
}

export interface IngressDeps {
  readonly codec: EventCodec;
  readonly publisher: RecordPublisher;
  readonly log: Logger;
  readonly options: IngressOptions;
}

type Settled = { readonly ok: true; readonly position: Position } | { readonly ok: false; readonly error: GatewayError } | undefined;

/**
 * Node joins repeated headers with ", " — which would turn two `ce-id` headers into one id.
 * CloudEvents attributes appear once: a repeated `ce-` header or Content-Type is refused.
 * Errors: CEG_INVALID_ATTRIBUTE naming each repeated attribute.
 */
function refuseRepeatedHeaders(req: IncomingMessage): void {
  const violations: Violation[] = [];
  for (const [name, values] of Object.entries(req.headersDistinct)) {
    if (values === undefined || values.length < 2) continue;
    if (name.startsWith('ce-')) violations.push({ attribute: name.slice(3), reason: `header ${name} appears ${values.length} times; an attribute has one value`, code: 'CEG_INVALID_ATTRIBUTE' });
    else if (name === 'content-type') violations.push({ attribute: 'datacontenttype', reason: 'Content-Type appears more than once', code: 'CEG_INVALID_ATTRIBUTE' });
  }
  if (violations.length > 0) throw new GatewayError('CEG_INVALID_ATTRIBUTE', violations.map((v) => v.reason).join('; '), { retriable: false, details: { violations } });
}

/** Handles one `POST /events`; never rejects (every failure becomes a problem+json answer). */
export async function handleIngress(req: IncomingMessage, res: ServerResponse, deps: IngressDeps): Promise<void> {
  const { options: o } = deps;
  try {
    const body = await readBody(req, o.maxBodyBytes);
    refuseRepeatedHeaders(req);
    let parsed: ParsedHttpRequest | { mode: 'batch'; events: readonly (ParsedHttpRequest['events'][number] | undefined)[] };
    let earlier: Violation[] = [];
    try {
      parsed = parseHttpRequest(req.headers, body, { maxBatchEvents: o.maxBatchEvents });
    } catch (err) {
      // A batch with some malformed events: check the others too, so every bad event is listed.
      if (!(err instanceof BatchViolationsError)) throw err;
      parsed = { mode: 'batch', events: err.partial };
      earlier = ((err.details.violations ?? []) as Violation[]).map((v) => ({ ...v, code: v.code ?? err.code }));
    }
    const batch = parsed.mode === 'batch';
    const prepared = prepareEvents(parsed.events, deps.codec, { dataschemaBase: o.dataschemaBase }, batch, earlier);
    if (prepared.length === 0) {
      sendJson(res, 202, { events: [] });
      return;
    }
    const pending = deps.publisher.send(prepared.map((p) => ({ topic: p.topic, record: p.record })));
    const settled: Settled[] = new Array<Settled>(pending.length);
    const all = Promise.all(
      pending.map((p, i) =>
        p.then(
          (position) => void (settled[i] = { ok: true, position }),
          (error: GatewayError) => void (settled[i] = { ok: false, error }),
        ),
      ),
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([all.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), o.ackTimeoutMs)))]);
    clearTimeout(timer);

    const stored = prepared.flatMap((p, i) => {
      const s = settled[i];
      return s?.ok ? [{ index: p.index, id: p.id, topic: s.position.topic, partition: s.position.partition, offset: s.position.offset.toString() }] : [];
    });
    if (!timedOut && stored.length === prepared.length) {
      sendJson(res, 202, { events: stored.map(({ index: _i, ...e }) => e) });
      return;
    }
    const failure = settled.find((s): s is { ok: false; error: GatewayError } => s !== undefined && !s.ok)?.error;
    const notStored = prepared.filter((_, i) => !settled[i]?.ok).map((p) => ({ index: p.index, id: p.id }));
    deps.log.warn({ timedOut, stored: stored.length, notStored: notStored.length, code: failure?.code }, 'ingress: broker did not confirm every event');
    const err =
      timedOut || failure === undefined
        ? new GatewayError('CEG_DELIVERY_TIMEOUT', `the broker did not confirm within ${o.ackTimeoutMs} ms; retry the request (events not confirmed may still be stored: consumers drop duplicates by source+id)`, { retriable: true })
        : failure;
    const list = <T extends { index: number }>(xs: T[]): (T | Omit<T, 'index'>)[] => (batch ? xs : xs.map(({ index: _i, ...e }) => e));
    sendProblem(res, err, { retryAfterS: o.retryAfterS, extra: { stored: list(stored), notStored: list(notStored) } });
  } catch (err) {
    if (!(err instanceof GatewayError)) deps.log.error({ err }, 'ingress: unexpected failure');
    sendProblem(res, err, { retryAfterS: o.retryAfterS });
  }
}
