/**
 * raceAbort (src/core/race-abort.ts): a wait a caller may give up, on work that goes on — the
 * produce request sent, the pooled connection being checked out.
 */
import { describe, expect, it } from 'vitest';
import { raceAbort } from '../../../src/core/race-abort.js';

const deferred = <T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } => {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

describe('raceAbort', () => {
  it('gives the work\'s value or error when the signal does not abort (a non-Error wrapped)', async () => {
    const ac = new AbortController();
    await expect(raceAbort(Promise.resolve(7), ac.signal, () => new Error('stopped'))).resolves.toBe(7);
    await expect(raceAbort(Promise.reject(new RangeError('bad')), ac.signal, () => new Error('stopped'))).rejects.toBeInstanceOf(RangeError);
    const notAnError = deferred<number>();
    const wrapped = raceAbort(notAnError.promise, ac.signal, () => new Error('stopped'));
    notAnError.reject('text');
    await expect(wrapped).rejects.toThrow('text');
    await expect(raceAbort(Promise.resolve(1), undefined, () => new Error('stopped'))).resolves.toBe(1);
  });

  it('rejects with onAbort() when the signal aborts first, and hands a value that comes later to onLateValue', async () => {
    const ac = new AbortController();
    const work = deferred<{ id: number }>();
    const late: number[] = [];
    const waiting = raceAbort(work.promise, ac.signal, () => new Error('stopped'), (v) => late.push(v.id));
    ac.abort();
    await expect(waiting).rejects.toThrow('stopped');
    work.resolve({ id: 3 });
    await expect.poll(() => late).toEqual([3]);
  });

  it('rejects at once when the signal has already aborted; a later failure of the work is not unhandled', async () => {
    const ac = new AbortController();
    ac.abort();
    const work = deferred<number>();
    const late: number[] = [];
    await expect(raceAbort(work.promise, ac.signal, () => new Error('stopped'), (v) => late.push(v))).rejects.toThrow('stopped');
    work.reject(new Error('failed after the wait ended'));
    await new Promise((r) => setTimeout(r, 10));
    expect(late).toEqual([]);
  });
});
