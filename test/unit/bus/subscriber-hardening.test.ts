/**
 * Faults a new-user trial found in the consumer side (issue 7), each as a kind: a dead letter the
 * dead-letter topic refuses, forged retry headers, a handler that never returns, a wait beyond a
 * timer's range, control characters in partner text. On the in-memory transport (same semantics
 * as Kafka, tested by the same contract suite).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEAD_LETTER_HEADERS, deadLetterTopic, retry, retryTopic } from '../../../src/bus/subscriber/index.js';
import { printable } from '../../../src/core/printable.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { MAX_REDELIVER_MS, redeliverAfter } from '../../../src/transport/port.js';
import type { TransportRecord } from '../../../src/transport/port.js';
import { PRICE_TOPIC, priceLoaded } from '../../fixtures/events.js';
import { waitFor } from '../../helpers/wait.js';
import { readRecords, subscriberFixtures } from './helpers.js';

const policy = (maxAttempts = 3) => retryPolicy({ maxAttempts, initialDelayMs: 1, factor: 2, maxDelayMs: 5, jitter: 0 });
const fixtures = subscriberFixtures({ subscription: 'sub-h', retry: policy(), startFrom: 'earliest' });
afterEach(fixtures.cleanup);
const setup = fixtures.setup;

const header = (r: TransportRecord, name: string): string | undefined => {
  const h = r.headers.find(([n]) => n === name);
  return h === undefined ? undefined : new TextDecoder().decode(h[1]);
};

describe('consumer hardening (issue 7 trial)', () => {
  it('a dead letter the dead-letter topic refuses for good is stored without its value, and the subscription goes on', async () => {
    const { transport, publisher, sub } = await setup();
    // A dead-letter topic that takes records up to 2,000 bytes: the original (with a 3,000-byte
    // non-CloudEvents header, as a foreign producer may add) fits its own topic, not the dead letter.
    await transport.ensureTopics([{ name: deadLetterTopic('sub-h'), partitions: 1, retentionMs: -1, cleanupPolicy: 'delete', maxMessageBytes: 2000 }]);
    const template = publisher.publish('PriceLoadingCompleted', priceLoaded('BIG/X', 'H1'))!;
    await template.delivered;
    const [original] = await readRecords(transport, PRICE_TOPIC, 1);
    const handled: string[] = [];
    const big = (r: TransportRecord | undefined): boolean => r?.headers.some(([n]) => n === 'x-big') === true;
    const s = await sub({ startFrom: 'latest', handler: (e, ctx) => (big(ctx.record) ? Promise.resolve(retry('always')) : Promise.resolve(void handled.push(e.attributes.id))) });
    await transport.produce(PRICE_TOPIC, [{ key: original!.key, value: original!.value, headers: [...original!.headers, ['x-big', new Uint8Array(3000).fill(97)]] }]);
    const good = publisher.publish('PriceLoadingCompleted', priceLoaded('BIG/X', 'H1'))!;
    await good.delivered;
    await waitFor('the next record handled', () => handled.includes(good.id), 5000, 5);
    const [dead] = await readRecords(transport, deadLetterTopic('sub-h'), 1);
    expect(dead!.value).toBeNull();
    expect(Number(header(dead!, DEAD_LETTER_HEADERS.valueDropped))).toBe(original!.value!.byteLength);
    expect(header(dead!, DEAD_LETTER_HEADERS.reason)).toMatch(/retries exhausted.*refused the full record/);
    expect(header(dead!, 'ce_id')).toBe(template.id);
    expect(s.stats()).toMatchObject({ deadLettered: 1, handled: 1, lost: 0 });
  });

  it('forged retry headers (a wait far beyond the policy, a foreign source topic, a repeated header, an attempt past the budget) are dead-lettered, and real retries keep flowing', async () => {
    const { transport, publisher, sub } = await setup();
    let calls = 0;
    const s = await sub({ ordering: 'none', handler: () => Promise.resolve(++calls === 1 ? retry('once') : undefined) });
    const h = (n: string, v: string): [string, Uint8Array] => [n, new TextEncoder().encode(v)];
    const base = (over: Record<string, string>): [string, Uint8Array][] => {
      const m: Record<string, string> = { retry_subscription: 'sub-h', retry_attempt: '1', retry_not_before: String(Date.now()), retry_first_failure_time: String(Date.now()), retry_source_topic: PRICE_TOPIC, retry_source_partition: '0', retry_source_offset: '0', ...over };
      return Object.entries(m).map(([n, v]) => h(n, v));
    };
    await transport.produce(retryTopic('sub-h'), [
      { key: null, value: null, headers: base({ retry_not_before: '9999999999999' }), partition: 0 },
      { key: null, value: null, headers: base({ retry_source_topic: 'payments.secret' }), partition: 1 },
      { key: null, value: null, headers: [...base({}), h('retry_attempt', '2')], partition: 2 },
      { key: null, value: null, headers: base({ retry_attempt: '99' }), partition: 0 },
    ]);
    const real = publisher.publish('PriceLoadingCompleted', priceLoaded('FORGE/X', 'H1'))!;
    await real.delivered;
    await waitFor('four forged records dead-lettered and the real one handled after its retry', () => s.stats().deadLettered === 4 && s.stats().handled === 1, 5000, 5);
    const reasons = (await readRecords(transport, deadLetterTopic('sub-h'), 4)).map((r) => header(r, DEAD_LETTER_HEADERS.reason)).sort();
    expect(reasons.join('\n')).toMatch(/retry_not_before is \d+ ms away/);
    expect(reasons.join('\n')).toMatch(/payments\.secret is not a topic of this subscription/);
    expect(reasons.join('\n')).toMatch(/missing, repeated or malformed/);
    expect(reasons.join('\n')).toMatch(/retry_attempt 99 is outside/);
  });

  it('a handler that never returns is timed out and retried; its signal is aborted; records after it are handled', async () => {
    const { publisher, sub } = await setup();
    const handled: string[] = [];
    let aborted = 0;
    const s = await sub({
      handlerTimeoutMs: 50,
      retry: policy(2),
      handler: (e, ctx) => {
        if (e.attributes.subject === 'stuck') {
          ctx.signal?.addEventListener('abort', () => aborted++);
          return new Promise(() => undefined);
        }
        handled.push(e.attributes.id);
        return Promise.resolve();
      },
    });
    const stuck = publisher.publish('PriceLoadingCompleted', priceLoaded('HANG/X', 'H1'), { subject: 'stuck' })!;
    const after = publisher.publish('PriceLoadingCompleted', priceLoaded('HANG/X', 'H1'))!;
    await Promise.all([stuck.delivered, after.delivered]);
    await waitFor('the record after the stuck one handled', () => handled.includes(after.id), 5000, 5);
    expect(s.stats()).toMatchObject({ deadLettered: 1, retried: 1, handled: 1 });
    expect(aborted).toBe(2);
  });

  it('a wait beyond a timer\'s range is cut to the longest one, never to zero', () => {
    expect(redeliverAfter(3_000_000_000)).toEqual({ kind: 'redeliver', afterMs: MAX_REDELIVER_MS });
    expect(redeliverAfter(Number.POSITIVE_INFINITY)).toEqual({ kind: 'redeliver', afterMs: MAX_REDELIVER_MS });
    expect(redeliverAfter(-5)).toEqual({ kind: 'redeliver', afterMs: 0 });
  });

  it('partner text is printable: control characters become escapes, other characters stay', () => {
    expect(printable('a\u001b]0;pwned\u0007b\r\nc\u007f\u009b')).toBe('a\\u001b]0;pwned\\u0007b\\u000d\\u000ac\\u007f\\u009b');
    expect(printable('Euro € 😀 "q" 100%')).toBe('Euro € 😀 "q" 100%');
  });

  it('a plain-JS handler returning a value that is not an outcome, or an outcome without its reason, does not stop the subscription (it did)', async () => {
    const { publisher, sub } = await setup();
    const seen = new Map<string, number>();
    const returns: unknown[] = [true, 0, { rowCount: 1 }, 'done', { kind: 'retry' }, { kind: 'retry', reason: 'later', afterMs: Number.NaN }, { kind: 'deadLetter' }, { kind: 'unknown' }];
    const ids: string[] = [];
    for (let i = 0; i < returns.length; i++) ids.push(publisher.publish('PriceLoadingCompleted', priceLoaded(`RET/${i}`, 'H1'))!.id);
    const s = await sub({
      startFrom: 'earliest',
      ordering: 'key',
      // Typed as the library is, called as a plain-JS handler would be.
      handler: ((e: { attributes: { id: string } }) => {
        const n = (seen.get(e.attributes.id) ?? 0) + 1;
        seen.set(e.attributes.id, n);
        const i = ids.indexOf(e.attributes.id);
        // A retry outcome is returned once; the second attempt returns nothing.
        return n === 1 ? returns[i] : undefined;
      }) as unknown as Parameters<typeof sub>[0]['handler'],
    });
    const last = publisher.publish('PriceLoadingCompleted', priceLoaded('RET/last', 'H1'))!;
    await waitFor('the event after them handled', () => seen.has(last.id), 5000, 5);
    await waitFor('every event ended', () => s.stats().handled + s.stats().deadLettered >= returns.length + 1, 5000, 5);
    expect(s.stats()).toMatchObject({ handled: returns.length, deadLettered: 1, lost: 0 });
    // The two retries ran twice, the rest once.
    expect(ids.map((id) => seen.get(id))).toEqual([1, 1, 1, 1, 2, 2, 1, 1]);
  });

  it('a handler throwing a value that cannot be turned into text is retried, then dead-lettered, and the subscription goes on (it stopped)', async () => {
    const { publisher, sub } = await setup();
    const handled: string[] = [];
    const bad = publisher.publish('PriceLoadingCompleted', priceLoaded('THROW/X', 'H1'))!;
    const s = await sub({
      startFrom: 'earliest',
      handler: (e) => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- what a plain-JS handler may throw
        if (e.attributes.id === bad.id) throw Object.create(null) as object;
        handled.push(e.attributes.id);
        return Promise.resolve();
      },
    });
    const next = publisher.publish('PriceLoadingCompleted', priceLoaded('THROW/X', 'H1'))!;
    await waitFor('the event after it handled', () => handled.includes(next.id), 5000, 5);
    expect(s.stats()).toMatchObject({ deadLettered: 1, handled: 1, lost: 0 });
  });

  it('ordering none: a handler asking for a wait longer than a parked record may carry has it cut to that, not dead-lettered as forged', async () => {
    const { publisher, transport, sub } = await setup();
    let calls = 0;
    const s = await sub({ ordering: 'none', handler: () => Promise.resolve(++calls === 1 ? retry('come back in an hour', 3_600_000) : undefined) });
    publisher.publish('PriceLoadingCompleted', priceLoaded('PARK/X', 'H1'));
    const [parked] = await readRecords(transport, retryTopic('sub-h'), 1);
    const notBefore = Number(header(parked!, 'retry_not_before'));
    // The policy's longest backoff is 5 ms: a park may carry at most 2 × 5 ms + 60 s.
    expect(notBefore - Date.now()).toBeGreaterThan(50_000);
    expect(notBefore - Date.now()).toBeLessThanOrEqual(60_010);
    // Read back by the member at once: before, it was dead-lettered there as forged.
    await new Promise((r) => setTimeout(r, 500));
    expect(s.stats()).toMatchObject({ deadLettered: 0, retried: 1 });
  });
});
