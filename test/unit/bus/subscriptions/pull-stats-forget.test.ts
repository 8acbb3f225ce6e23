/**
 * The pull counters (`ce_gateway_pull_records_total`, `ce_gateway_pull_commits_total`) of a
 * deleted pull subscription were dropped only when something read them (a /metrics scrape): on an
 * instance nobody scrapes, every deleted pull subscription's counters stayed in memory for the
 * life of the process. Now they go when the definitions store applies the delete (its onChange,
 * which every instance gets), whether or not anything reads them.
 *
 * On the in-memory transport, with the store's change feed stood in for by a listener list; the
 * counters are looked at through the live view `stats()` handed out before the delete, so nothing
 * reads (and cleans) them after it. The gateway's wiring and /metrics: test/http/pull.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED } from '../../../../src/catalog/generated/index.js';
import { DEFAULT_PUSH_RETRY, PullService, cursorSigner } from '../../../../src/bus/subscriptions/index.js';
import type { StoredSubscription } from '../../../../src/bus/subscriptions/index.js';
import { silentLogger } from '../../../../src/observability/index.js';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { Transport } from '../../../../src/transport/index.js';
import { codecFixture } from '../helpers.js';

const name = 'forget';
const group = `ce-gateway.sub.anonymous.${name}`;
const now = new Date().toISOString();
const stored: StoredSubscription = {
  v: 1, name, owner: 'anonymous', group, kinds: [PRICE_LOADING_COMPLETED.name], filters: [], start: 'latest', ordering: 'key',
  retry: { maxAttempts: DEFAULT_PUSH_RETRY.maxAttempts, backoff: { initialMs: 1000, factor: 2, maxMs: 60_000, jitter: 0.2 }, maxAgeMs: DEFAULT_PUSH_RETRY.maxAgeMs, timeoutMs: DEFAULT_PUSH_RETRY.timeoutMs },
  concurrency: 1, rateLimit: null, state: 'active', delivery: { mode: 'pull', data: 'json' }, createdAt: now, updatedAt: now, generation: 1,
};

let transport: Transport;
let service: PullService;
let current: StoredSubscription | undefined = stored;
const listeners: (() => void)[] = [];

beforeAll(async () => {
  const f = await codecFixture();
  transport = createMemoryTransport();
  await transport.ensureTopics([{ name: PRICE_LOADING_COMPLETED.topic, partitions: 3, retentionMs: -1, cleanupPolicy: 'delete' }]);
  service = new PullService({
    subscription: (g) => (g === group ? current : undefined),
    catalog: f.catalog,
    codec: () => f.codec,
    transport,
    signer: cursorSigner(randomBytes(32)),
    log: silentLogger(),
    onChange: (l) => listeners.push(l),
  });
});
afterAll(async () => {
  await transport?.close();
});

describe('pull counters of a deleted subscription', () => {
  it('are dropped when the store applies the delete, not at the next read', async () => {
    const live = service.stats();
    const answer = await (await service.open(name)).next({ max: 10, maxBytes: 1_048_576, waitMs: 0, signal: new AbortController().signal });
    await service.commit(name, answer.cursor);
    expect(live.get(group)?.commits).toBe(1);

    // Deleted: the store no longer has it and tells its listeners. Nothing reads the counters.
    current = undefined;
    for (const l of listeners) l();
    expect(live.has(group)).toBe(false);
  });
});
