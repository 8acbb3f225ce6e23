/**
 * `ce-gateway deadletters purge --help` says what a purge leaves behind as docs/subscriptions.md
 * ("Purge") does: the records stay on the dead-letter topic, whose retention is unlimited by
 * default (`retention.ms` -1), so nothing expires unless the operator sets it.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerDeadLettersCommand } from '../../../src/cli/commands/deadletters.js';
import { subscriptionTopics } from '../../../src/bus/subscriber/subscriber.js';

function helpOf(...path: string[]): string {
  const program = new Command('ce-gateway');
  registerDeadLettersCommand(program);
  let cmd: Command = program;
  for (const name of path) cmd = cmd.commands.find((c) => c.name() === name)!;
  return cmd.helpInformation().replace(/\s+/g, ' ');
}

describe('deadletters purge --help', () => {
  it('does not promise that the purged records expire: the dead-letter topic keeps them (retention.ms -1) unless its retention is set', () => {
    expect(subscriptionTopics('s')[0]).toMatchObject({ name: 's.dlq', retentionMs: -1 });
    const help = helpOf('deadletters', 'purge');
    expect(help).not.toMatch(/expire by retention/);
    expect(help).toMatch(/stay on the dead-letter topic until its retention\.ms, unlimited by default/);
  });
});
