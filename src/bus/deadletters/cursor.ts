/**
 * The `after` token of the dead-letter listing: opaque to clients, it holds the next offset to read
 * per partition of the dead-letter topic and a tag of that topic (base64url of `<tag>:` and
 * `<partition>.<offset>` pairs joined by `~`; the tag is 8 hex digits of the topic name's SHA-256),
 * so a token of another subscription's listing is refused rather than read as positions here.
 * It works on every instance and survives restarts (it is only Kafka positions).
 * Spec: issue 10 (`GET /subscriptions/{name}/deadletters?limit=&after=`, `next` = an after token or null).
 */
import { createHash } from 'node:crypto';
import { GatewayError } from '../../core/errors.js';

/** Next offset to read per partition of the dead-letter topic. */
export type Cursor = ReadonlyMap<number, bigint>;

/** Longest token accepted, characters. */
const MAX_TOKEN = 2048;

/** The listing's tag: 8 hex digits of the SHA-256 of its dead-letter topic's name. */
function tagOf(listing: string): string {
  return createHash('sha256').update(listing, 'utf8').digest('hex').slice(0, 8);
}

/** The token of positions `c` in the listing of dead-letter topic `listing`. */
export function encodeCursor(c: Cursor, listing: string): string {
  const text = [...c].sort(([a], [b]) => a - b).map(([p, o]) => `${p}.${o}`).join('~');
  return Buffer.from(`${tagOf(listing)}:${text}`, 'utf8').toString('base64url');
}

/**
 * Reads a token of the listing of dead-letter topic `listing`. Errors: CEG_INVALID_PARAMETER
 * (retriable: false, `field: after`) for anything {@link encodeCursor} cannot have written for it.
 */
export function decodeCursor(token: string, listing: string): Cursor {
  const bad = (): GatewayError => new GatewayError('CEG_INVALID_PARAMETER', 'after: not a token of this listing (use the `next` of the previous page)', { retriable: false, details: { field: 'after' } });
  if (token.length === 0 || token.length > MAX_TOKEN || !/^[A-Za-z0-9_-]+$/.test(token)) throw bad();
  const decoded = Buffer.from(token, 'base64url').toString('utf8');
  const tag = `${tagOf(listing)}:`;
  if (!decoded.startsWith(tag)) throw bad();
  const text = decoded.slice(tag.length);
  const out = new Map<number, bigint>();
  for (const part of text.split('~')) {
    const m = /^(\d{1,9})\.(\d{1,19})$/.exec(part);
    if (m === null) throw bad();
    const p = Number(m[1]);
    if (out.has(p)) throw bad();
    out.set(p, BigInt(m[2]!));
  }
  if (encodeCursor(out, listing) !== token) throw bad(); // one spelling per position: no look-alike tokens
  return out;
}
