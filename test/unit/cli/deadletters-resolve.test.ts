/**
 * `ce-gateway deadletters <subscription>` finds a subscription of a connector file (`kind:
 * subscription`, owner `connectors`) by its name without `--owner` (break report D7: "no
 * dead-letter topic … (looked for ce-gateway.sub.anonymous.gitops2.dlq, gitops2.dlq)" although the
 * help says "subscription name (HTTP or connector file)"); an HTTP subscription of the same name
 * (owner anonymous) comes first, and `--owner` looks only at that owner's.
 */
import { describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app/index.js';
import { resolveGroup } from '../../../src/cli/commands/deadletters.js';
import { unknownTopic } from '../../../src/transport/topics.js';

/** A gateway whose transport knows exactly `topics` (any other is missing, as the transports say it: unknownTopic). */
const withTopics = (topics: readonly string[]): Gateway =>
  ({
    transport: {
      partitionCount: (t: string) => (topics.includes(t) ? Promise.resolve(1) : Promise.reject(unknownTopic(t))),
    },
  }) as unknown as Gateway;

describe('deadletters: which group a subscription name means', () => {
  it('without --owner: the HTTP subscription (anonymous), else the connector file\'s (connectors), else the name as a group', async () => {
    await expect(resolveGroup(withTopics(['ce-gateway.sub.connectors.gitops2.dlq']), 'gitops2', 'anonymous', false)).resolves.toBe('ce-gateway.sub.connectors.gitops2');
    await expect(resolveGroup(withTopics(['ce-gateway.sub.connectors.g.dlq', 'ce-gateway.sub.anonymous.g.dlq']), 'g', 'anonymous', false)).resolves.toBe('ce-gateway.sub.anonymous.g');
    await expect(resolveGroup(withTopics(['my-group.dlq']), 'my-group', 'anonymous', false)).resolves.toBe('my-group');
  });

  it('with --owner: only that owner\'s subscription, then the name as a group', async () => {
    await expect(resolveGroup(withTopics(['ce-gateway.sub.connectors.gitops2.dlq']), 'gitops2', 'anonymous', true)).rejects.toThrow('looked for ce-gateway.sub.anonymous.gitops2.dlq, gitops2.dlq');
    await expect(resolveGroup(withTopics(['ce-gateway.sub.connectors.gitops2.dlq']), 'gitops2', 'connectors', true)).resolves.toBe('ce-gateway.sub.connectors.gitops2');
  });

  it("names the owner of a partner's subscription of that name, and the --owner to give (new-user report hE)", async () => {
    const gw = withTopics(['ce-gateway.sub.acme.orders.dlq']);
    const asked: string[] = [];
    const ownersOf = (name: string): Promise<string[]> => {
      asked.push(name);
      return Promise.resolve(name === 'orders' ? ['acme'] : []);
    };
    await expect(resolveGroup(gw, 'orders', 'anonymous', false, ownersOf)).rejects.toThrow(/looked for ce-gateway\.sub\.anonymous\.orders\.dlq, ce-gateway\.sub\.connectors\.orders\.dlq, orders\.dlq\); orders is a subscription of acme: give --owner acme$/);
    // A wrong --owner gets the same hint; several owners are all named.
    const two = (): Promise<string[]> => Promise.resolve(['acme', 'beta']);
    const err: unknown = await resolveGroup(gw, 'orders', 'gamma', true, two).catch((e: unknown) => e);
    expect(String(err)).toContain('partners acme, beta each have a subscription named orders: give --owner <partner>');
    expect((err as { details?: { owners?: string[] } }).details?.owners).toEqual(['acme', 'beta']);
    // The right owner finds it, without asking; the owners looked at already are not offered again.
    await expect(resolveGroup(gw, 'orders', 'acme', true, ownersOf)).resolves.toBe('ce-gateway.sub.acme.orders');
    expect(asked).toEqual(['orders']);
    await expect(resolveGroup(gw, 'orders', 'anonymous', false, () => Promise.resolve(['anonymous']))).rejects.toThrow(/orders\.dlq\)$/);
  });
});
