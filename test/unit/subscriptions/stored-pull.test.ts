/**
 * The stored shape with pull delivery (issue 9): a push record as gateways before pull wrote it
 * still loads unchanged; a pull record loads; a pull record with push fields missing its own, or a
 * mode nobody knows, is refused (logged and ignored by the store, never run half-understood).
 */
import { describe, expect, it } from 'vitest';
import { parseStored } from '../../../src/bus/subscriptions/index.js';

const common = {
  v: 1,
  name: 'acme',
  owner: 'anonymous',
  group: 'ce-gateway.sub.anonymous.acme',
  kinds: ['PriceLoadingCompleted'],
  filters: [],
  start: 'latest',
  ordering: 'key',
  retry: { maxAttempts: 8, backoff: { initialMs: 1000, factor: 2, maxMs: 60000, jitter: 0.2 }, maxAgeMs: 86400000, timeoutMs: 10000 },
  concurrency: 4,
  rateLimit: null,
  state: 'active',
  createdAt: '2026-12-01T10:00:00.000Z',
  updatedAt: '2026-12-01T10:00:00.000Z',
  generation: 1,
};

describe('stored subscriptions with pull delivery', () => {
  it('loads a push record written before pull existed, unchanged', () => {
    const delivery = { mode: 'push', url: 'https://hooks.example/x', contentMode: 'binary', data: 'json', handshake: true, secretCount: 1, headerNames: [], sealed: 'v1.abcd1234.x.y.z' };
    const r = parseStored({ ...common, delivery });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.delivery).toEqual(delivery);
  });

  it('loads a pull record', () => {
    const r = parseStored({ ...common, delivery: { mode: 'pull', data: 'avro' } });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.delivery).toEqual({ mode: 'pull', data: 'avro' });
  });

  it('refuses a pull record without its data, and an unknown mode', () => {
    expect(parseStored({ ...common, delivery: { mode: 'pull' } }).ok).toBe(false);
    expect(parseStored({ ...common, delivery: { mode: 'carrier-pigeon', data: 'json' } }).ok).toBe(false);
  });
});
