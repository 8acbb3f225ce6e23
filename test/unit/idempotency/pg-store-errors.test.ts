/**
 * The PostgreSQL idempotency store and idempotentPg fail with the code their TSDoc names
 * (CEG_STORE_UNAVAILABLE, retriable when the database cannot be reached), checked on a real
 * pool whose database does not answer (nothing listens on port 1).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPgIdempotencyStore, idempotentPg } from '../../../src/bus/idempotency/index.js';
import { caughtAsync } from '../../helpers/errors.js';
import { delivery, priceEvent } from '../connectors/helpers.js';

const pool = new pg.Pool({ host: '127.0.0.1', port: 1, user: 'nobody', database: 'none', connectionTimeoutMillis: 2000 });
afterAll(() => pool.end());

/** The `Errors` part of the TSDoc blocks of a source file. */
function documentedCodes(file: string): string[] {
  const text = readFileSync(new URL(`../../../src/bus/idempotency/pg/${file}`, import.meta.url), 'utf8');
  return [...text.matchAll(/\bCEG_[A-Z_]+\b/g)].map((m) => m[0]);
}

describe('PostgreSQL idempotency: errors as documented', () => {
  it('a store whose database does not answer rejects with CEG_STORE_UNAVAILABLE (retriable), as store.ts documents', async () => {
    const store = createPgIdempotencyStore({ pool, cleanupIntervalMs: 0 });
    const err = await caughtAsync(store.lookup({ scope: 's', source: 'urn:a', id: '1' }));
    await store.close();
    expect(err.code).toBe('CEG_STORE_UNAVAILABLE');
    expect(err.retriable).toBe(true);
    expect(documentedCodes('store.ts')).toContain(err.code);
    expect(documentedCodes('store.ts')).not.toContain('CEG_INTERNAL');
  });

  it('refuses a cleanup interval a Node timer cannot hold (it would sweep every 1 ms)', () => {
    expect(() => createPgIdempotencyStore({ pool, cleanupIntervalMs: 3e9 })).toThrow(/^cleanupIntervalMs: integer milliseconds from 0 to 2147483647/);
  });

  it('idempotentPg rejects the delivery with the same code, as transactional.ts documents', async () => {
    const handler = idempotentPg(pool, async () => undefined, { windowMs: 60_000 });
    const err = await caughtAsync(handler(priceEvent(), delivery));
    expect(err.code).toBe('CEG_STORE_UNAVAILABLE');
    expect(err.retriable).toBe(true);
    expect(documentedCodes('transactional.ts')).toContain(err.code);
    expect(documentedCodes('transactional.ts')).not.toContain('CEG_INTERNAL');
  });
});
