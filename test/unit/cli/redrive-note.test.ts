/**
 * `ce-gateway deadletters redrive` says when the redriven events arrive (new-user report hE: the CLI
 * printed "redriven 2" and the sink got nothing for 20 s, since no gateway hears of a redrive
 * written to Kafka directly while the subscription's member is stopped for idleness).
 */
import { describe, expect, it } from 'vitest';
import { redriveNote } from '../../../src/cli/redrive-note.js';

describe('deadletters redrive: when the events arrive', () => {
  it('an idle gateway subscription: the wait bound (1.25 × SUBSCRIPTION_IDLE_STOP_MS) and the HTTP route that starts delivery at once', () => {
    const note = redriveNote({ redriven: 2, ownedBy: 'stored', members: 0, idleStopMs: 30_000, name: 'orders' });
    expect(note).toContain('no gateway runs a member of orders now (idle)');
    expect(note).toContain('within 38 s (1.25 × SUBSCRIPTION_IDLE_STOP_MS, 30000 ms here)');
    expect(note).toContain('POST /subscriptions/orders/deadletters/redrive on a gateway starts delivery at once');
    expect(redriveNote({ redriven: 1, ownedBy: 'file', members: 0, idleStopMs: 4_000, name: 'gitops' })).toContain('within 5 s');
  });

  it('a paused or gone subscription: delivered once it is active again (no gateway runs a member of it)', () => {
    expect(redriveNote({ redriven: 1, ownedBy: 'stored', members: 0, idleStopMs: 30_000, name: 'orders', state: 'paused' })).toBe(
      'note: orders is paused: no gateway delivers it, and the events are delivered once it is active again (PATCH /subscriptions/orders {"state":"active"})',
    );
    expect(redriveNote({ redriven: 1, ownedBy: 'stored', members: 0, idleStopMs: 0, name: 'orders', state: 'gone' })).toContain('orders is gone');
    expect(redriveNote({ redriven: 1, ownedBy: 'stored', members: 0, idleStopMs: 30_000, name: 'orders', state: 'active' })).toContain('(idle)');
  });

  it('a library group without members: delivered when a subscriber starts', () => {
    expect(redriveNote({ redriven: 1, ownedBy: undefined, members: 0, idleStopMs: 30_000, name: 'my-group' })).toBe('note: no member of the group runs now; the events are delivered once a subscriber of it starts (it reads its .redrive topic)');
  });

  it('nothing to say: a member runs (it reads the redrive topic at once), nothing was redriven, or members always run', () => {
    expect(redriveNote({ redriven: 2, ownedBy: 'stored', members: 1, idleStopMs: 30_000, name: 'orders' })).toBeUndefined();
    expect(redriveNote({ redriven: 2, ownedBy: 'members', members: 3, idleStopMs: 30_000, name: 'g' })).toBeUndefined();
    expect(redriveNote({ redriven: 0, ownedBy: 'stored', members: 0, idleStopMs: 30_000, name: 'orders' })).toBeUndefined();
    expect(redriveNote({ redriven: 2, ownedBy: 'stored', members: 0, idleStopMs: 0, name: 'orders' })).toBeUndefined();
  });
});
