/**
 * The CloudEvents webhook validation handshake ("abuse protection"), before the first delivery to
 * a new sink: `OPTIONS <url>` with `WebHook-Request-Origin: <this gateway>` (and
 * `WebHook-Request-Rate` when the subscription has a rate limit, in requests per minute). The sink
 * agrees by answering 2xx with `WebHook-Allowed-Origin` equal to the origin or `*`; it may grant a
 * rate with `WebHook-Allowed-Rate` (requests per minute, or `*` for no limit), which the delivery
 * then respects. Anything else is a refusal: nothing is delivered and the attempt counts as failed
 * (retried, since a sink being deployed may not answer yet).
 * Spec: CloudEvents HTTP 1.1 Web Hooks for Event Delivery 1.0.2 §4.1 (validation request), §4.2
 *   (validation response).
 */

export interface HandshakeAnswer {
  readonly ok: boolean;
  /** Why not, for the log and the dead letter. */
  readonly reason?: string;
  readonly status?: number;
  /** Granted rate, requests per second; undefined = no limit granted or none asked. */
  readonly allowedPerSecond?: number;
}

/** Headers of the validation request. */
export function handshakeHeaders(origin: string, ratePerSecond: number | null): Record<string, string> {
  return {
    'webhook-request-origin': origin,
    ...(ratePerSecond === null ? {} : { 'webhook-request-rate': String(Math.max(1, Math.floor(ratePerSecond * 60))) }),
  };
}

/**
 * What a sink that refused the handshake must do, or the subscription instead: the reason goes to
 * `GET …/status` (`lastError`) and, once the retries are spent, to the dead letter, where a
 * partner reads it without the gateway's log (which says the same once per sink). Until 2026-12-07
 * the reason said only `OPTIONS answered 405`: a plain POST endpoint answers OPTIONS so.
 */
function remedy(origin: string): string {
  return `: answer OPTIONS with a 2xx and WebHook-Allowed-Origin: ${origin.slice(0, 100)} (or *), or create the subscription with delivery.handshake false`;
}

/** Reads the sink's answer to the validation request; a refusal's reason says what would pass (see {@link remedy}). */
export function readHandshake(status: number, header: (name: string) => string | undefined, origin: string): HandshakeAnswer {
  if (status < 200 || status > 299) return { ok: false, status, reason: `validation handshake refused: OPTIONS answered ${status}${remedy(origin)}` };
  const allowed = header('webhook-allowed-origin')?.trim();
  if (allowed === undefined) return { ok: false, status, reason: `validation handshake: no WebHook-Allowed-Origin in the answer${remedy(origin)}` };
  if (allowed !== '*' && allowed.toLowerCase() !== origin.toLowerCase()) return { ok: false, status, reason: `validation handshake: WebHook-Allowed-Origin is ${allowed.slice(0, 100)}, not ${origin}${remedy(origin)}` };
  const rate = header('webhook-allowed-rate')?.trim();
  if (rate === undefined || rate === '*') return { ok: true, status };
  const significant = /^\d+$/.test(rate) ? rate.replace(/^0+/, '') : '';
  // More than nine significant digits grants over 16 million requests a second: no limit in effect.
  if (significant.length > 9) return { ok: true, status };
  const perMinute = significant === '' ? Number.NaN : Number(significant);
  if (!(perMinute > 0)) return { ok: false, status, reason: `validation handshake: WebHook-Allowed-Rate ${rate.slice(0, 40)} is not a positive integer or *` };
  return { ok: true, status, allowedPerSecond: perMinute / 60 };
}
