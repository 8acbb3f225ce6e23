/**
 * What `ce-gateway deadletters redrive` tells the operator about when the redriven events arrive.
 *
 * The CLI writes to `<group>.redrive` on Kafka directly, so no gateway hears of it: where the group
 * has a member running, the member reads the topic at once; where it has none (a gateway stops an
 * idle subscription's member after `SUBSCRIPTION_IDLE_STOP_MS`), a gateway finds the records only
 * at its next look at the subscription's own topics, once per 0.75–1.25 × `SUBSCRIPTION_IDLE_STOP_MS`
 * (bus/subscriptions/work-check.ts), then starts a member. The HTTP route wakes the member at once
 * (Reconciler.wake). Without a word, a redrive that said "redriven 2" and delivered nothing for
 * 20–37 s read as broken (new-user report hE).
 */

/** The groups a note is about: what owns the group (subscription-owner.ts `GroupOwner.by`) and its live members now. */
export interface RedriveNoteInput {
  /** How many dead letters were redriven. */
  readonly redriven: number;
  /** `stored` (an HTTP subscription), `file` (a connector file), `members` (a library subscriber…), or undefined (`--force` with no owner). */
  readonly ownedBy: 'stored' | 'file' | 'members' | undefined;
  /** Members in the consumer group now (Kafka DescribeGroups); 0 when none. */
  readonly members: number;
  /** This configuration's `SUBSCRIPTION_IDLE_STOP_MS` (the gateways' own may differ), ms; 0 = members always run. */
  readonly idleStopMs: number;
  /** The subscription's name as given on the command line. */
  readonly name: string;
  /** A stored subscription's state (`active`, `paused`, `gone`); no member runs for one that is not active. */
  readonly state?: string;
}

/**
 * The line to print on stderr after a redrive, or undefined when there is nothing to say (nothing
 * redriven, or a member is running and reads the redrive topic at once).
 * Shape: one line, naming the wait bound in seconds (1.25 × `idleStopMs`, rounded up) and the HTTP
 * route that starts delivery at once. Never throws.
 */
export function redriveNote(i: RedriveNoteInput): string | undefined {
  if (i.redriven === 0 || i.members > 0) return undefined;
  if (i.ownedBy !== 'stored' && i.ownedBy !== 'file') {
    return `note: no member of the group runs now; the events are delivered once a subscriber of it starts (it reads its .redrive topic)`;
  }
  if (i.state !== undefined && i.state !== 'active') {
    return `note: ${i.name} is ${i.state}: no gateway delivers it, and the events are delivered once it is active again (PATCH /subscriptions/${i.name} {"state":"active"})`;
  }
  if (i.idleStopMs === 0) return undefined;
  const bound = Math.ceil((i.idleStopMs * 1.25) / 1000);
  return (
    `note: no gateway runs a member of ${i.name} now (idle); a gateway starts one when it next looks at the subscription's own topics, ` +
    `within ${bound} s (1.25 × SUBSCRIPTION_IDLE_STOP_MS, ${i.idleStopMs} ms here), and the events are delivered then; ` +
    `POST /subscriptions/${i.name}/deadletters/redrive on a gateway starts delivery at once`
  );
}
