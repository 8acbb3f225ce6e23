import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import { createGateway } from '../../app/index.js';
import { brokerDeadline, onSignals, setup, requireKafka } from '../context.js';
import { cliKafkaTimeouts } from '../broker-deadline.js';
import { wholeNumber } from '../numbers.js';
import { subscriptionNameProblem } from '../../connectors/names.js';

/**
 * A commander option parser for `--subscription`: the name becomes the consumer group and names
 * `<name>.dlq`, so it has a subscription name's form (starting with a letter or digit), and the
 * groups of HTTP subscriptions are refused (joining one steals its events).
 * Errors: commander's InvalidArgumentError (exit 2 with the usage) naming `subscription`.
 * Spec: src/connectors/names.ts `subscriptionNameProblem`.
 */
export function subscriptionOption(value: string): string {
  const problem = subscriptionNameProblem(value);
  if (problem !== undefined) throw new InvalidArgumentError(`subscription: ${problem}`);
  return value;
}

export function registerSubscribeCommand(program: Command): void {
  program
    .command('subscribe')
    .description('subscribe under a durable name and print each event as a JSON line (a second-process subscriber); read-only: creates no topic and registers no schema')
    .requiredOption('-s, --subscription <name>', 'subscription name (the consumer group)', subscriptionOption)
    .requiredOption('-k, --kind <kinds...>', 'event kinds by eventId or business name')
    .option('--from-beginning', 'a new subscription starts at the earliest offset instead of the latest')
    .option('--max-events <n>', 'exit after this many events (1 or more)', wholeNumber(1))
    .action(async (opts: { subscription: string; kind: string[]; fromBeginning?: boolean; maxEvents?: number }) => {
      const { config, log, brokerTimeoutMs } = setup(program);
      requireKafka(program, config, 'subscribe');
      const gw = createGateway(config, log, { readOnly: true, kafkaTimeouts: cliKafkaTimeouts(brokerTimeoutMs) });
      // Only the start is bounded: once the broker answered, the subscription runs until stopped.
      brokerDeadline(gw.transport, config, brokerTimeoutMs, 'subscribe');
      let seen = 0;
      let finish: () => void = () => {};
      const finished = new Promise<void>((r) => (finish = r));
      const sub = await gw.subscribe({
        subscription: opts.subscription,
        kinds: opts.kind,
        startFrom: opts.fromBeginning ? 'earliest' : 'latest',
        // Read-only: dead letters go to <name>.dlq when it exists (ce-gateway topics --subscription), else to the log.
        createTopics: false,
        handler: (event, ctx) => {
          process.stdout.write(`${JSON.stringify({ attributes: event.attributes, data: event.data?.kind === 'json' ? event.data.value : null, topic: ctx.topic, partition: ctx.partition, offset: ctx.offset.toString() })}\n`);
          if (opts.maxEvents !== undefined && ++seen >= opts.maxEvents) finish();
          return Promise.resolve();
        },
      });
      log.info({ subscription: sub.name }, 'subscribed');
      process.stderr.write(`subscribed ${sub.name}\n`);
      onSignals(() => gw.close(), log, config.shutdownTimeoutMs);
      await Promise.race([finished, sub.done]);
      await gw.close();
    });
}
