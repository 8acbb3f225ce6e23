/**
 * A gateway on the in-memory adapters with one library subscription whose handler dead-letters
 * every event at once (one attempt), for the tests of listing, redrive and purge over HTTP.
 * Registers its own beforeAll/afterAll: call it at the top of a test file.
 */
import { afterAll, beforeAll } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { deadLetter } from '../../src/bus/subscriber/index.js';
import type { Subscription } from '../../src/bus/subscriber/index.js';
import { loadConfig } from '../../src/config/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import { createLogger } from '../../src/observability/index.js';

/** An answer with its body parsed (`{}` when empty). */
export interface JsonAnswer {
  readonly status: number;
  readonly type: string;
  readonly body: Record<string, unknown>;
}

export interface DeadLetterGateway {
  /** The gateway (after beforeAll). */
  readonly gw: () => Gateway;
  /** The base URL (after beforeAll). */
  readonly url: () => string;
  /** A request to the gateway, its answer parsed. */
  readonly call: (path: string, init?: RequestInit) => Promise<JsonAnswer>;
}

/** A JSON request body; a string is sent as it is (to send malformed JSON). */
export const jsonInit = (method: string, body: unknown): RequestInit => ({ method, headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

export function deadLetterGateway(instanceId: string, subscription: string): DeadLetterGateway {
  let gw: Gateway | undefined;
  let url: string | undefined;
  let sub: Subscription | undefined;
  beforeAll(async () => {
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', INSTANCE_ID: instanceId }), createLogger({ level: 'silent' }));
    const addr = await gw.listen();
    await gw.ready;
    await gw.subscriptionsLoaded();
    url = `http://127.0.0.1:${addr.port}`;
    sub = await gw.subscribe({ subscription, kinds: ['PriceLoadingCompleted'], retry: retryPolicy({ maxAttempts: 1, initialDelayMs: 0, factor: 1, maxDelayMs: 0, jitter: 0 }), handler: () => Promise.resolve(deadLetter('refused here')) });
  });
  afterAll(async () => {
    await sub?.unsubscribe();
    await gw?.close();
  });
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('the dead-letter gateway is not started (use it inside tests)');
    return v;
  };
  return {
    gw: () => started(gw),
    url: () => started(url),
    call: async (path, init = {}) => {
      const res = await fetch(`${started(url)}${path}`, init);
      const text = await res.text();
      return { status: res.status, type: res.headers.get('content-type') ?? '', body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
    },
  };
}
