/**
 * The `after` token of the dead-letter listing: opaque to clients, it holds the next offset to read
 * per partition of the dead-letter topic (base64url of `<partition>.<offset>` pairs joined by `~`).
 * It works on every instance and survives restarts (it is only Kafka positions).
 * Spec: issue 10 (`GET /subscriptions/{name}/deadletters?limit=&after=`, `next` = an after token or null).
 */
import { GatewayError } from '../../core/errors.js';

/** Next offset to read per partition of the dead-letter topic. */
export type Cursor = ReadonlyMap<number, bigint>;

/** Longest token accepted, characters. */
const MAX_TOKEN = 2048;

export function encodeCursor(c: Cursor): string {
  const text = [...c].sort(([a], [b]) => a - b).map(([p, o]) => `${p}.${o}`).join('~');
  return Buffer.from(text, 'utf8').toString('base64url');
}

/**
 * Reads a token. Errors: CEG_INVALID_PARAMETER (retriable: false, `field: after`) for anything
 * {@link encodeCursor} cannot have written.
 */
export function decodeCursor(token: string): Cursor {
  const bad = (): GatewayError => new GatewayError('CEG_INVALID_PARAMETER', 'after: not a token of this listing (use the `next` of the previous page)', { retriable: false, details: { field: 'after' } });
  if (token.length === 0 || token.length > MAX_TOKEN || !/^[A-Za-z0-9_-]+$/.test(token)) throw bad();
  const text = Buffer.from(token, 'base64url').toString('utf8');
  const out = new Map<number, bigint>();
  for (const part of text.split('~')) {
    const m = /^(\d{1,9})\.(\d{1,19})$/.exec(part);
    if (m === null) throw bad();
    const p = Number(m[1]);
    if (out.has(p)) throw bad();
    out.set(p, BigInt(m[2]!));
  }
  if (encodeCursor(out) !== token) throw bad(); // one spelling per position: no look-alike tokens
  return out;
}
