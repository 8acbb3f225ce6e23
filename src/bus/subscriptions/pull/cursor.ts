/**
 * Pull cursors (issue 9): an opaque text naming, per topic partition of a pull subscription, the
 * next offset to read — signed, so a partner can neither forge a position nor use another
 * subscription's cursor, and self-contained, so any gateway instance can continue from it (no
 * consumer instance lives in one process's memory).
 *
 * Text: `c1.<payload>.<mac>`, both parts base64url without padding. `payload` is the JSON
 * `{ "s": <group>, "i": <createdAt of the subscription>, "p": [[<topic>, <partition>, "<offset>"], …] }`;
 * `mac` = HMAC-SHA256(key, "ce-gateway cursor v1" NUL payload), all 32 bytes. Binding to `createdAt`
 * as well as the group means a cursor of a deleted subscription does not work on a new one of the
 * same name. Checked in constant time.
 *
 * Canonical: one cursor has one text. The MAC covers the payload's text as written (so no other
 * spelling of it verifies), and the MAC's text must be the canonical encoding of its 32 bytes: 43
 * characters carry 258 bits, and the 2 spare bits of the last one must be zero (RFC 4648 §3.5) —
 * Node's decoder ignores them, which would let four texts name one cursor.
 *
 * The key: HKDF-SHA256 of the 32-byte `SUBSCRIPTION_SECRETS_KEY` (info "ce-gateway cursor signing
 * v1"), so every instance that shares the secrets key shares the cursor key and no further secret
 * has to be distributed; a separate key (not the sealing key itself) because one key, one job.
 * Spec: issue 9 ("the cursor names positions per partition and is signed (HMAC with a key all
 *   instances share)"); RFC 2104 (HMAC), RFC 5869 (HKDF), RFC 4648 §5 (base64url).
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../../../core/errors.js';
import type { TopicPartitionOffset } from '../../../transport/port.js';

/** Longest cursor accepted, characters (a subscription of many topics and partitions stays well below). */
export const MAX_CURSOR_CHARS = 16_384;
const PREFIX = 'c1';
const MAC_LABEL = 'ce-gateway cursor v1\u0000';
const OFFSET = /^\d{1,19}$/;

/** What a cursor is bound to: the subscription's consumer group and the instant it was created. */
export interface CursorOwner {
  readonly group: string;
  /** `createdAt` of the stored subscription (RFC 3339): tells incarnations of one name apart. */
  readonly createdAt: string;
}

/** Signs and verifies cursors with one key. */
export interface CursorSigner {
  /** The cursor text for these positions (sorted by topic, then partition). */
  sign(owner: CursorOwner, positions: readonly TopicPartitionOffset[]): string;
  /**
   * The positions a cursor names.
   * Errors: CEG_INVALID_CURSOR (400, `field: cursor`, not retriable) when the text is malformed,
   *   its signature does not verify (altered, forged, another key) or it belongs to another
   *   subscription.
   */
  verify(owner: CursorOwner, text: string): TopicPartitionOffset[];
}

/** The cursor key derived from the 32-byte subscription secrets key (RFC 5869, SHA-256, no salt). */
export function deriveCursorKey(secretsKey: Uint8Array): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', secretsKey, new Uint8Array(0), 'ce-gateway cursor signing v1', 32));
}

function invalid(why: string): GatewayError {
  return new GatewayError('CEG_INVALID_CURSOR', `cursor: ${why}`, { retriable: false, details: { field: 'cursor' } });
}

/**
 * A signer for a key of at least 32 bytes.
 * Errors: CEG_INVALID_OPTIONS when the key is shorter.
 */
export function cursorSigner(key: Uint8Array): CursorSigner {
  if (key.length < 32) throw new GatewayError('CEG_INVALID_OPTIONS', 'the cursor key must be at least 32 bytes', { retriable: false });
  const k = Buffer.from(key);
  const mac = (payload: string): Buffer => createHmac('sha256', k).update(MAC_LABEL).update(payload).digest();
  return Object.freeze({
    sign(owner: CursorOwner, positions: readonly TopicPartitionOffset[]): string {
      const p = [...positions]
        .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
        .map((x) => [x.topic, x.partition, x.offset.toString()]);
      const payload = Buffer.from(JSON.stringify({ s: owner.group, i: owner.createdAt, p }), 'utf8').toString('base64url');
      return `${PREFIX}.${payload}.${mac(payload).toString('base64url')}`;
    },
    verify(owner: CursorOwner, text: string): TopicPartitionOffset[] {
      if (text.length > MAX_CURSOR_CHARS) throw invalid(`longer than ${MAX_CURSOR_CHARS} characters`);
      const parts = text.split('.');
      if (parts.length !== 3 || parts[0] !== PREFIX || !/^[A-Za-z0-9_-]+$/.test(parts[1]!) || !/^[A-Za-z0-9_-]{43}$/.test(parts[2]!)) throw invalid('not a cursor of this gateway');
      const given = Buffer.from(parts[2]!, 'base64url');
      // Not secret (it is the client's own text): a plain comparison of the re-encoding is fine.
      if (given.toString('base64url') !== parts[2]) throw invalid('not a cursor of this gateway (the signature is not canonical base64url)');
      const expected = mac(parts[1]!);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid('the signature does not verify (altered, forged, or signed with another key)');
      let body: unknown;
      try {
        body = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
      } catch {
        throw invalid('unreadable'); // cannot happen for a text this gateway signed
      }
      const b = body as { s?: unknown; i?: unknown; p?: unknown };
      if (b.s !== owner.group || b.i !== owner.createdAt) throw invalid('it belongs to another subscription');
      if (!Array.isArray(b.p)) throw invalid('unreadable');
      return b.p.map((e: unknown) => {
        const [topic, partition, offset] = Array.isArray(e) ? (e as unknown[]) : [];
        if (typeof topic !== 'string' || typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0 || typeof offset !== 'string' || !OFFSET.test(offset)) throw invalid('unreadable');
        return { topic, partition, offset: BigInt(offset) };
      });
    },
  });
}
