/**
 * Replay fixtures on a transport (in-memory in the unit tests): a started subscription store with
 * its replay audit log, and a stored push subscription as POST /subscriptions would have written it.
 */
import { DEFAULT_PUSH_RETRY, ReplayLog, SubscriptionStore } from '../../src/bus/subscriptions/index.js';
import type { StoredSubscription } from '../../src/bus/subscriptions/index.js';
import { silentLogger } from '../../src/observability/index.js';
import type { Transport } from '../../src/transport/index.js';

export interface StoreAndAudit {
  readonly store: SubscriptionStore;
  readonly audit: ReplayLog;
  /** Stops the audit log, then the store (the transport stays open). */
  readonly stop: () => Promise<void>;
}

/** The subscription store on `<prefix>.subscriptions` and the replay audit log on `<prefix>.subscriptions.replays`, both started, silent. */
export async function startedStoreAndAudit(transport: Transport, prefix: string): Promise<StoreAndAudit> {
  const log = silentLogger();
  const store = new SubscriptionStore(transport, `${prefix}.subscriptions`, log);
  const audit = new ReplayLog(transport, `${prefix}.subscriptions.replays`, log);
  await store.start();
  await audit.start();
  return {
    store,
    audit,
    stop: async () => {
      await audit.stop();
      await store.stop();
    },
  };
}

/**
 * A stored push subscription of `anonymous` named `name` (group `ce-gateway.sub.anonymous.<name>`)
 * on `kinds`: active, ordering by key, the default retry, generation 1, created now; `over` replaces
 * any of these.
 */
export function storedPush(name: string, kinds: readonly string[], over: Partial<StoredSubscription> = {}): StoredSubscription {
  const now = new Date().toISOString();
  return {
    v: 1, name, owner: 'anonymous', group: `ce-gateway.sub.anonymous.${name}`, kinds, filters: [], start: 'latest', ordering: 'key',
    retry: { maxAttempts: DEFAULT_PUSH_RETRY.maxAttempts, backoff: { initialMs: 1000, factor: 2, maxMs: 60_000, jitter: 0.2 }, maxAgeMs: DEFAULT_PUSH_RETRY.maxAgeMs, timeoutMs: DEFAULT_PUSH_RETRY.timeoutMs },
    concurrency: 1, rateLimit: null, state: 'active', delivery: { mode: 'push', url: 'https://example.test/', contentMode: 'binary', data: 'json', handshake: true, secretCount: 1, headerNames: [], sealed: 'x' },
    createdAt: now, updatedAt: now, generation: 1,
    ...over,
  };
}
