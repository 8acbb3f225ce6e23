/**
 * The record runner (issue 7, both Kafka adapters): every record it runs settles exactly once and
 * never within the call that started it — with the handler's decision, 'failed' when the handler
 * fails while the member runs (the consumption is told), 'abandoned' when it fails while the member
 * stops or is still in hand at the stop deadline (a late answer then changes nothing).
 */
import { describe, expect, it } from 'vitest';
import { RecordRunner } from '../../../src/transport/record-runner.js';
import type { RunOutcome } from '../../../src/transport/record-runner.js';
import type { RecordContext, RecordDecision, RecordHandler, TransportRecord } from '../../../src/transport/port.js';
import { redeliverAfter } from '../../../src/transport/port.js';
import { silentLogger } from '../../../src/transport/kafka/logging.js';

const record = (offset: number): TransportRecord => ({ topic: 't', partition: 0, offset: BigInt(offset), timestampMs: 0, key: null, value: null, headers: [] });

function runner(handler: RecordHandler, stopTimeoutMs = 30) {
  const failures: unknown[] = [];
  const r = new RecordRunner({ handler, stopTimeoutMs, log: silentLogger, group: 'g', onFailure: (err) => void failures.push(err) });
  const ctx: RecordContext = { signal: r.signal, heartbeat: () => Promise.resolve() };
  const outcomes: [RunOutcome, bigint, string][] = [];
  const start = (offset: number, tag = `tag${offset}`): void => r.runThen(record(offset), ctx, (o, rec, t) => void outcomes.push([o, rec.offset, t]), tag);
  return { r, ctx, start, outcomes, failures };
}

const turn = (): Promise<void> => new Promise((res) => setImmediate(res));

describe('RecordRunner', () => {
  it('hands back the decision, the record and the tag once, on a later turn; no decision is done', async () => {
    const decisions: (RecordDecision | undefined)[] = [undefined, redeliverAfter(250)];
    const h = runner(() => Promise.resolve(decisions.shift()));
    h.start(1);
    h.start(2);
    expect(h.outcomes).toEqual([]);
    await turn();
    expect(h.outcomes).toEqual([
      [{ kind: 'done' }, 1n, 'tag1'],
      [{ kind: 'redeliver', afterMs: 250 }, 2n, 'tag2'],
    ]);
    expect(h.failures).toEqual([]);
  });

  it('a handler that rejects or throws while the member runs: failed, and the consumption is told', async () => {
    let n = 0;
    const h = runner(() => {
      if (n++ === 0) throw new Error('thrown');
      return Promise.reject(new Error('rejected'));
    });
    h.start(1);
    h.start(2);
    expect(h.outcomes).toEqual([]); // a synchronous throw too settles on a later turn
    await turn();
    expect(h.outcomes.map(([o]) => o)).toEqual(['failed', 'failed']);
    expect(h.failures.map((e) => (e as Error).message)).toEqual(['thrown', 'rejected']);
  });

  it('at the stop deadline a record still in hand is abandoned; its late answer changes nothing', async () => {
    let answer: ((d: RecordDecision) => void) | undefined;
    const h = runner((r) => (r.offset === 1n ? new Promise<RecordDecision>((res) => (answer = res)) : Promise.resolve(undefined)));
    h.start(1);
    h.start(2);
    await turn();
    expect(h.outcomes).toEqual([[{ kind: 'done' }, 2n, 'tag2']]);
    const cancel = h.r.beginStop();
    expect(h.ctx.signal.aborted).toBe(true);
    await new Promise((res) => setTimeout(res, 60));
    expect(h.outcomes.slice(1)).toEqual([['abandoned', 1n, 'tag1']]);
    answer!({ kind: 'done' });
    await turn();
    expect(h.outcomes).toHaveLength(2);
    cancel();
  });

  it('while stopping: a failing handler is abandoned (not a failure); a record started after the deadline is abandoned', async () => {
    const h = runner((r) => (r.offset === 1n ? Promise.reject(new Error('aborted')) : new Promise<void>(() => undefined)));
    const cancel = h.r.beginStop();
    h.start(1);
    await turn();
    expect(h.outcomes).toEqual([['abandoned', 1n, 'tag1']]);
    await new Promise((res) => setTimeout(res, 60));
    h.start(2);
    await turn();
    expect(h.outcomes).toEqual([
      ['abandoned', 1n, 'tag1'],
      ['abandoned', 2n, 'tag2'],
    ]);
    expect(h.failures).toEqual([]);
    cancel();
  });

  it('run() is the same as a promise', async () => {
    const h = runner(() => Promise.resolve(redeliverAfter(5)));
    await expect(h.r.run(record(7), h.ctx)).resolves.toEqual({ kind: 'redeliver', afterMs: 5 });
  });
});
