import type { Command } from 'commander';
import { subscriptionTopics } from '../../bus/subscriber/index.js';
import { errorMessage } from '../../core/errors.js';
import { assertTopicName } from '../../core/topic-name.js';
import { brokerDeadline, setup, requireKafka, openGateway } from '../context.js';
import { cliKafkaTimeouts } from '../broker-deadline.js';
import { subscriptionNameFormProblem } from '../../connectors/names.js';

/**
 * `ce-gateway topics`: creates the catalog's topics (partitions, retention, cleanup policy) and,
 * with `--subscription`, those subscriptions' own topics, when they do not exist yet (never by
 * broker auto-creation). Registers no schema. Exit 0 when done; 2 on a usage error or when the
 * broker cannot be reached or refuses (after the transport's bounded retries).
 */
export function registerTopicsCommand(program: Command): void {
  program
    .command('topics')
    .description('create the catalog topics (and, with --subscription, a subscription\'s dead-letter, redrive and retry topics) that do not exist yet; never relies on broker auto-creation')
    .option('--subscription <names...>', 'also create these subscriptions\' own topics (<name>.dlq, <name>.redrive, and <name>.retry with --ordering none)')
    .option('--ordering <ordering>', 'the --subscription names\' ordering: key (default) or none')
    .option('--json', 'print the topics as JSON')
    .action(async (opts: { json?: boolean; subscription?: string[]; ordering?: string }) => {
      // Usage first: an --ordering without --subscription was ignored (exit 0, no .retry topic made).
      if (opts.ordering !== undefined && opts.subscription === undefined) program.error('--ordering: applies to the subscriptions named with --subscription NAME…; none given', { exitCode: 2 });
      const ordering = opts.ordering ?? 'key';
      if (ordering !== 'key' && ordering !== 'none') program.error(`--ordering: key or none, got ${ordering}`, { exitCode: 2 });
      const { config, log, brokerTimeoutMs } = setup(program);
      requireKafka(program, config, 'topics');
      // Checked before anything is created: a bad name must not leave the catalog topics half made.
      let own: ReturnType<typeof subscriptionTopics>;
      try {
        for (const s of opts.subscription ?? []) {
          const problem = subscriptionNameFormProblem(s);
          if (problem !== undefined) throw new Error(`${JSON.stringify(s)}: ${problem}`);
        }
        own = (opts.subscription ?? []).flatMap((s) => subscriptionTopics(s, ordering));
        for (const t of own) assertTopicName(t.name);
      } catch (err) {
        program.error(`--subscription: ${errorMessage(err)}`, { exitCode: 2 });
      }
      // Read-only start-up: no schema registered (that is `schemas register`, which checks them
      // first) and no bootstrap retried forever; the topics are created here, once, with the
      // transport's bounded retries, so an unreachable broker fails the command (exit 2).
      const gw = await openGateway(config, log, { readOnly: true, kafkaTimeouts: cliKafkaTimeouts(brokerTimeoutMs) });
      // A broker that does not answer within the deadline ends the command (exit 2).
      const deadline = brokerDeadline(gw.transport, config, brokerTimeoutMs, 'topics');
      try {
        await gw.ready;
        const topics = [...gw.catalog.topics, ...own];
        await gw.transport.ensureTopics(topics);
        if (opts.json) process.stdout.write(`${JSON.stringify(topics)}\n`);
        else for (const t of topics) process.stdout.write(`${t.name}\tpartitions=${t.partitions}\tretention.ms=${t.retentionMs}\tcleanup.policy=${t.cleanupPolicy}\n`);
      } finally {
        await gw.close();
        deadline.stop();
      }
    });
}
