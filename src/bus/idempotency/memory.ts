/**
 * In-memory idempotency store: a bounded LRU with per-entry expiry. Nothing survives the process;
 * use it for the embedded default and tests, or where a restart re-running a few events is fine.
 * Spec: bus spec S4 (bounded window), T14 (same caller code on the in-memory path).
 */
import { GatewayError } from '../../core/errors.js';
import { MAX_TIMER_MS } from '../../core/timer-limit.js';
import type { FinalOutcome, IdempotencyKey, IdempotencyStore } from './port.js';
import { assertWindowMs, keyString } from './port.js';

export interface MemoryIdempotencyStoreOptions {
  /** Most entries kept; the least recently used is evicted beyond it. Integer ≥ 1, default 100 000. */
  readonly maxEntries?: number;
  /** Sweep of expired entries every this many ms; 0 (default) = only lazily and on purgeExpired(). */
  readonly cleanupIntervalMs?: number;
  /** Clock, epoch ms; default Date.now (inject a fake one in tests). */
  readonly now?: () => number;
}

export interface MemoryIdempotencyStore extends IdempotencyStore {
  readonly kind: 'memory';
  /** Entries held now (expired ones not yet swept included); `evicted` = dropped for the size bound. */
  stats(): { readonly size: number; readonly evicted: number };
}

interface Entry {
  readonly outcome: FinalOutcome;
  readonly expiresAtMs: number;
}

/**
 * Builds a memory store. Errors: CEG_INVALID_OPTIONS (retriable: false) naming each bad option.
 * Spec: bus spec S4.
 */
export function createMemoryIdempotencyStore(options: MemoryIdempotencyStoreOptions = {}): MemoryIdempotencyStore {
  const maxEntries = options.maxEntries ?? 100_000;
  const cleanupIntervalMs = options.cleanupIntervalMs ?? 0;
  const problems = [
    !(Number.isSafeInteger(maxEntries) && maxEntries >= 1) && 'maxEntries: integer ≥ 1',
    !(Number.isSafeInteger(cleanupIntervalMs) && cleanupIntervalMs >= 0 && cleanupIntervalMs <= MAX_TIMER_MS) && `cleanupIntervalMs: integer milliseconds from 0 to ${MAX_TIMER_MS}`,
  ].filter((p): p is string => typeof p === 'string');
  if (problems.length > 0) {
    throw new GatewayError('CEG_INVALID_OPTIONS', problems.join('; '), { retriable: false, details: { fields: problems.map((p) => p.slice(0, p.indexOf(':'))) } });
  }
  const now = options.now ?? Date.now;
  // Map iteration order = recency: the first entry is the least recently used.
  const entries = new Map<string, Entry>();
  let evicted = 0;
  let closed = false;

  const purge = (): number => {
    const t = now();
    let n = 0;
    for (const [k, e] of entries) {
      if (e.expiresAtMs <= t) {
        entries.delete(k);
        n++;
      }
    }
    return n;
  };
  const timer = cleanupIntervalMs > 0 ? setInterval(purge, cleanupIntervalMs) : undefined;
  timer?.unref();

  /** Runs a synchronous step as a promise: a throw becomes a rejection, and a closed store refuses. */
  const settle = <T>(step: () => T): Promise<T> =>
    new Promise<T>((resolve) => {
      if (closed) throw new GatewayError('CEG_CLOSED', 'idempotency store is closed', { retriable: true });
      resolve(step());
    });

  return {
    kind: 'memory',
    lookup: (key: IdempotencyKey): Promise<FinalOutcome | undefined> =>
      settle(() => {
        const k = keyString(key);
        const e = entries.get(k);
        if (e === undefined) return undefined;
        entries.delete(k);
        if (e.expiresAtMs <= now()) return undefined;
        entries.set(k, e); // most recently used
        return e.outcome;
      }),
    markDone: (key: IdempotencyKey, outcome: FinalOutcome, windowMs: number): Promise<void> =>
      settle(() => {
        assertWindowMs(windowMs);
        const k = keyString(key);
        entries.delete(k);
        entries.set(k, { outcome, expiresAtMs: now() + windowMs });
        while (entries.size > maxEntries) {
          const oldest = entries.keys().next();
          if (oldest.done === true) break;
          entries.delete(oldest.value);
          evicted++;
        }
      }),
    purgeExpired: (): Promise<number> => settle(purge),
    close(): Promise<void> {
      closed = true;
      if (timer !== undefined) clearInterval(timer);
      entries.clear();
      return Promise.resolve();
    },
    stats: () => ({ size: entries.size, evicted }),
  };
}
