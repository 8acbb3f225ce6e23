/**
 * The wait for a group's coordinator (src/transport/coordinator-wait.ts) on fake time: what it
 * tries again, what it logs, when it gives up and with what error. The coordinator answers of both
 * clients are classified by their own predicates, tested here on the errors the clients build.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatewayError, isGatewayError } from '../../../src/core/errors.js';
import { COORDINATOR_WAIT_MS, whileCoordinatorLoads } from '../../../src/transport/coordinator-wait.js';
import type { CoordinatorWaitOptions } from '../../../src/transport/coordinator-wait.js';
import { coordinatorUnavailable as kafkajsCoordinatorUnavailable, fromKafkaError } from '../../../src/transport/kafka/errors.js';
import { coordinatorUnavailable as platformaticCoordinatorUnavailable } from '../../../src/transport/platformatic/errors.js';

/** What the clients' errors look like from outside (their classes are not exported). */
const notCoordinator = (): Error => Object.assign(new Error('This is not the correct coordinator.'), { apiId: 'NOT_COORDINATOR', canRetry: true });
const refused = (): Error => Object.assign(new Error('Unknown topic'), { apiId: 'UNKNOWN_TOPIC_OR_PARTITION', canRetry: false });

function options(lines: { obj: Record<string, unknown>; msg: string }[], over: Partial<CoordinatorWaitOptions> = {}): CoordinatorWaitOptions {
  return {
    group: 'g1',
    operation: 'consume',
    coordinatorBusy: platformaticCoordinatorUnavailable,
    map: (err) => (isGatewayError(err) ? err : new GatewayError('CEG_BROKER_UNAVAILABLE', `consume: ${(err as Error).message}`, { retriable: false, details: { group: 'g1' } })),
    initialDelayMs: 100,
    maxDelayMs: 1_000,
    logger: { debug: () => undefined, warn: () => undefined, error: () => undefined, info: (obj, msg) => void lines.push({ obj, msg }) },
    ...over,
  };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('whileCoordinatorLoads', () => {
  it('tries again while the coordinator is not there, logging each wait with the group, and resolves', async () => {
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    let calls = 0;
    const p = whileCoordinatorLoads(() => (++calls <= 3 ? Promise.reject(notCoordinator()) : Promise.resolve('joined')), options(lines));
    await vi.runAllTimersAsync();
    await expect(p).resolves.toBe('joined');
    expect(calls).toBe(4);
    expect(lines.map((l) => [l.obj.group, l.obj.attempt])).toEqual([['g1', 1], ['g1', 2], ['g1', 3]]);
    // Backoff: doubling from initialDelayMs (20 % jitter at most).
    const delays = lines.map((l) => Number(l.obj.delayMs));
    expect(delays[0]).toBeGreaterThanOrEqual(80);
    expect(delays[0]).toBeLessThanOrEqual(100);
    expect(delays[2]).toBeGreaterThanOrEqual(320);
  });

  it('gives up after the bound with a retriable CEG_BROKER_UNAVAILABLE naming the group', async () => {
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    let calls = 0;
    const p = whileCoordinatorLoads(() => {
      calls++;
      return Promise.reject(notCoordinator());
    }, options(lines, { waitMs: 5_000 }));
    const settled = p.catch((err: unknown) => err);
    await vi.runAllTimersAsync();
    const err = await settled;
    expect(err).toBeInstanceOf(GatewayError);
    const g = err as GatewayError;
    expect(g.code).toBe('CEG_BROKER_UNAVAILABLE');
    expect(g.retriable).toBe(true);
    expect(g.message).toContain('coordinator of group g1');
    expect(g.details).toMatchObject({ group: 'g1', attempts: calls, reason: 'coordinator-unavailable' });
    // Bounded: 100, 200, 400, 800, 1000… ms apart, no wait begun after 5 s.
    expect(calls).toBeGreaterThan(3);
    expect(calls).toBeLessThan(12);
    expect(COORDINATOR_WAIT_MS).toBe(30_000);
  });

  it('fails at once, mapped, on anything else', async () => {
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    let calls = 0;
    const p = whileCoordinatorLoads(() => {
      calls++;
      return Promise.reject(refused());
    }, options(lines));
    const settled = p.catch((err: unknown) => err);
    await vi.runAllTimersAsync();
    const err = (await settled) as GatewayError;
    expect(calls).toBe(1);
    expect(lines).toEqual([]);
    expect(err.retriable).toBe(false);
    expect(err.message).toBe('consume: Unknown topic');
  });
});

describe('coordinator answers of each client', () => {
  it('@platformatic/kafka: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE anywhere in the error, also under a GatewayError', () => {
    for (const apiId of ['NOT_COORDINATOR', 'COORDINATOR_LOAD_IN_PROGRESS', 'COORDINATOR_NOT_AVAILABLE']) {
      const inner = Object.assign(new Error(apiId), { apiId, canRetry: true });
      const wrapped = Object.assign(new Error('describeGroups failed 1 times.'), { errors: [inner] });
      expect(platformaticCoordinatorUnavailable(wrapped), apiId).toBe(true);
      expect(platformaticCoordinatorUnavailable(new GatewayError('CEG_BROKER_UNAVAILABLE', 'consume', { retriable: true, cause: wrapped })), apiId).toBe(true);
    }
    expect(platformaticCoordinatorUnavailable(refused())).toBe(false);
    expect(platformaticCoordinatorUnavailable(Object.assign(new Error('timed out'), { code: 'PLT_KFK_NETWORK' }))).toBe(false);
  });

  it("kafkajs: its coordinator types (GROUP_COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR_FOR_GROUP, GROUP_LOAD_IN_PROGRESS) and KafkaJSGroupCoordinatorNotFound, which it maps retriable", () => {
    for (const type of ['GROUP_COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR_FOR_GROUP', 'GROUP_LOAD_IN_PROGRESS']) {
      const inner = Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type, retriable: true });
      const wrapped = Object.assign(new Error('retries exceeded'), { name: 'KafkaJSNumberOfRetriesExceeded', cause: inner, retriable: false });
      expect(kafkajsCoordinatorUnavailable(wrapped), type).toBe(true);
      expect(fromKafkaError(wrapped, {}).retriable, type).toBe(true);
    }
    const notFound = Object.assign(new Error('Failed to find group coordinator'), { name: 'KafkaJSGroupCoordinatorNotFound', retriable: false });
    const bailed = Object.assign(new Error('Failed to find group coordinator'), { name: 'KafkaJSNonRetriableError', cause: notFound, retriable: false });
    expect(kafkajsCoordinatorUnavailable(bailed)).toBe(true);
    expect(fromKafkaError(bailed, {}).retriable).toBe(true);
    expect(kafkajsCoordinatorUnavailable(Object.assign(new Error('unknown'), { type: 'UNKNOWN_TOPIC_OR_PARTITION' }))).toBe(false);
  });
});
