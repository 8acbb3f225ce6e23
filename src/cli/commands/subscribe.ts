import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import { brokerDeadline, onSignals, setup, requireKafka, openGateway } from '../context.js';
import { cliKafkaTimeouts } from '../broker-deadline.js';
import { wholeNumber } from '../numbers.js';
import { refuseRepeatedKind } from '../repeated-kinds.js';
import { subscriptionNameProblem } from '../../connectors/names.js';
import { retry } from '../../bus/subscriber/index.js';
import type { Outcome } from '../../bus/subscriber/index.js';

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

/**
 * The outcome of a record handed to `subscribe --max-events N` after its N events were taken: it
 * is neither printed nor acknowledged, but held until the subscription stops (`signal`, the
 * delivery's, aborts), then answered `retry`. The subscriber counts a retry that comes once its
 * member is stopping as the stop's doing, not a failure: no attempt, no dead letter, no commit
 * (bus/subscriber onRecord), so the record comes again to the next run of the same subscription
 * (at-least-once). Answering `ack` (what the handler used to do) committed it unprinted, and
 * printing it broke the count: up to one record per partition in flight went past N.
 * Without a signal (not the case in the subscriber, which always sets one) it waits for good: the
 * stop's deadline then leaves the record uncommitted all the same. The command runs without a
 * handler timeout, so `signal` aborts only at the stop.
 */
export function heldUntilStop(signal: AbortSignal | undefined): Promise<Outcome> {
  return new Promise((resolve) => {
    if (signal === undefined) return;
    const answer = (): void => resolve(retry('subscribe --max-events: the count was reached; left for the next run'));
    if (signal.aborted) answer();
    else signal.addEventListener('abort', answer, { once: true });
  });
}

/**
 * The line `subscribe` prints on stderr once it has joined. Without `<name>.dlq` (the command
 * creates no topic, so a new subscription has none) it says, once per run and as a note, where
 * dead letters go and the command that creates the topic: the subscriber's warning on every run
 * of a new subscription alarmed users who had done nothing wrong. `deadLetterTopic`: the
 * subscription's (`Subscription.deadLetterTopic`), undefined when it keeps none.
 */
export function subscribedLine(name: string, deadLetterTopic: string | undefined): string {
  if (deadLetterTopic !== undefined) return `subscribed ${name} (dead letters go to ${deadLetterTopic})`;
  return `subscribed ${name} (note: no ${name}.dlq, so a record that cannot be decoded is logged and skipped; to keep such records, create it with \`ce-gateway topics --subscription ${name}\`)`;
}

/**
 * The line `subscribe --max-events N` prints on stderr once its count was reached and the
 * subscription stopped: how many it printed (and committed), and how many later deliveries it had
 * in hand and held back uncommitted (heldUntilStop), which the next run of `name` gets first. Said
 * in the command's own words whatever LOG_LEVEL: the subscriber's info line about deliveries a stop
 * cut short was the only trace, hidden at `LOG_LEVEL=warn`, and read as calls aborted by accident.
 * `printed`: events printed; `held`: deliveries answered by heldUntilStop (0 or more).
 */
export function maxEventsStopLine(name: string, printed: number, held: number): string {
  const head = `subscribe: stopped after ${printed} event${printed === 1 ? '' : 's'} (--max-events), committed`;
  if (held === 0) return `${head}; no later delivery was in hand`;
  return `${head}; ${held} later deliver${held === 1 ? 'y was' : 'ies were'} in hand and held back, not committed: the next run of ${name} gets ${held === 1 ? 'it' : 'them'} first`;
}

export function registerSubscribeCommand(program: Command): void {
  program
    .command('subscribe')
    .description('subscribe under a durable name and print each event as a JSON line (a second-process subscriber); follows the topics until Ctrl-C / SIGTERM, or exits after --max-events; read-only: creates no topic and registers no schema')
    .requiredOption('-s, --subscription <name>', 'subscription name (the consumer group)', subscriptionOption)
    .requiredOption('-k, --kind <kinds...>', 'event kinds by eventId or business name')
    .option('--from-beginning', 'a new subscription starts at the earliest offset instead of the latest')
    .option('--max-events <n>', 'exit after this many events (1 or more); only they are committed, later ones come to the next run', wholeNumber(1))
    .action(async (opts: { subscription: string; kind: string[]; fromBeginning?: boolean; maxEvents?: number }) => {
      const { config, log, brokerTimeoutMs } = setup(program);
      refuseRepeatedKind(program, config, opts.kind, 'subscribe --kind');
      requireKafka(program, config, 'subscribe');
      const gw = await openGateway(config, log, { readOnly: true, kafkaTimeouts: cliKafkaTimeouts(brokerTimeoutMs) });
      // Only the start is bounded: once the broker answered, the subscription runs until stopped.
      brokerDeadline(gw.transport, config, brokerTimeoutMs, 'subscribe');
      let seen = 0;
      let held = 0;
      let finish: () => void = () => {};
      const finished = new Promise<void>((r) => (finish = r));
      const sub = await gw.subscribe({
        subscription: opts.subscription,
        kinds: opts.kind,
        startFrom: opts.fromBeginning ? 'earliest' : 'latest',
        // Read-only: dead letters go to <name>.dlq when it exists (ce-gateway topics --subscription), else to the log.
        createTopics: false,
        // No handler timeout: the handler prints at once, or holds a record past --max-events until
        // the stop (heldUntilStop); a bound would count that wait as a failed attempt (retried, in
        // the end dead-lettered) should the stop take longer than it.
        handlerTimeoutMs: Infinity,
        handler: (event, ctx) => {
          // Partitions are handled side by side, and the consumer hands over more records until the
          // stop that finish() starts: once N were taken, the later ones wait for that stop and stay
          // uncommitted (heldUntilStop). Counted and printed in one synchronous step, so exactly N print.
          if (opts.maxEvents !== undefined && seen >= opts.maxEvents) {
            held++;
            return heldUntilStop(ctx.signal);
          }
          process.stdout.write(`${JSON.stringify({ attributes: event.attributes, data: event.data?.kind === 'json' ? event.data.value : null, topic: ctx.topic, partition: ctx.partition, offset: ctx.offset.toString() })}\n`);
          if (opts.maxEvents !== undefined && ++seen >= opts.maxEvents) finish();
          return Promise.resolve();
        },
      });
      log.info({ subscription: sub.name, deadLetterTopic: sub.deadLetterTopic ?? null }, 'subscribed');
      process.stderr.write(`${subscribedLine(sub.name, sub.deadLetterTopic)}\n`);
      onSignals(() => gw.close(), log, config.shutdownTimeoutMs);
      await Promise.race([finished, sub.done]);
      await gw.close();
      // After the close: the held deliveries are answered by the stop, and only then is the count whole.
      if (opts.maxEvents !== undefined && seen >= opts.maxEvents) process.stderr.write(`${maxEventsStopLine(sub.name, seen, held)}\n`);
    });
}
