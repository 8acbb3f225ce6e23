import { Option } from 'commander';
import type { Command } from 'commander';
import { startTail } from '../../bus/tail/index.js';
import { GatewayError, errorMessage } from '../../core/errors.js';
import { assertTopicName } from '../../core/topic-name.js';
import { printable } from '../../core/printable.js';
import { brokerDeadline, onSignals, setup, requireKafka, openGateway } from '../context.js';
import { cliKafkaTimeouts } from '../broker-deadline.js';
import { parseSince } from '../since.js';
import { refuseRepeatedKind } from '../repeated-kinds.js';

/**
 * `ce-gateway tail <kind…>`: prints events of the kinds as they arrive, decoded and validated
 * exactly as a subscription would: a record a subscription would dead-letter is printed as
 * INVALID with the reason. `--topic` reads named topics instead of the kinds' — a subscription's
 * dead-letter topic `<subscription>.dlq` for one: each dead letter prints with its `dlq_reason`
 * (issue 10). Read-only: no topic created, no schema registered, no consumer group left behind
 * (a group-less read).
 */
export function registerTailCommand(program: Command): void {
  program
    .command('tail')
    .description('print events of the given kinds as they arrive, decoded and validated like a subscription (invalid records marked INVALID with the reason); read-only, no consumer group')
    .argument('[kinds...]', 'event kinds by business name or eventId (with --topic: only these kinds; default every kind)')
    .option('--topic <topics...>', 'read these topics instead of the kinds\' topics, e.g. a dead-letter topic <subscription>.dlq')
    // Two starts at once: one was silently ignored (--since won), so it is a usage error (exit 2).
    .addOption(new Option('--from-beginning', 'start at the earliest offset (not with --since)').conflicts('since'))
    .option('--since <when>', 'start at records written since then: a duration (15m, 2h) or an RFC 3339 time', (v) => parseSince(v))
    .option('--json', 'one JSON object per line instead of a summary line')
    .action(async (kinds: string[], opts: { fromBeginning?: boolean; since?: number; json?: boolean; topic?: string[] }) => {
      if (kinds.length === 0 && opts.topic === undefined) program.error('tail: name event kinds, or topics with --topic', { exitCode: 2 });
      for (const t of opts.topic ?? []) assertTopicName(t);
      const { config, log, brokerTimeoutMs } = setup(program);
      refuseRepeatedKind(program, config, kinds, 'tail');
      requireKafka(program, config, 'tail');
      const gw = await openGateway(config, log, { readOnly: true, kafkaTimeouts: cliKafkaTimeouts(brokerTimeoutMs) });
      await gw.ready;
      const ids = new Set<string>();
      for (const k of kinds) {
        const kind = gw.catalog.byName(k) ?? gw.catalog.byEventId(k);
        if (kind === undefined) {
          await gw.close();
          throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${k}"; the catalog has ${gw.catalog.kinds.map((c) => c.name).join(', ')} (business name or eventId)`, { retriable: false });
        }
        ids.add(kind.eventId);
      }
      if (kinds.length === 0) for (const k of gw.catalog.kinds) ids.add(k.eventId);
      const topics = opts.topic ?? [...new Set(gw.catalog.kinds.filter((k) => ids.has(k.eventId)).map((k) => k.topic.name))];
      // Only the start is bounded: once the broker answered, tail runs until stopped.
      brokerDeadline(gw.transport, config, brokerTimeoutMs, 'tail');
      const from = opts.since !== undefined ? { kind: 'timestamp' as const, timestampMs: opts.since } : opts.fromBeginning ? { kind: 'earliest' as const } : { kind: 'latest' as const };
      const read = await startTail(gw.transport, gw.codec(), { eventIds: ids, topics, from }, (item) => {
        const where = { topic: item.topic, partition: item.partition, offset: item.offset, ...(item.deadLetter === undefined ? {} : { deadLetter: item.deadLetter }) };
        const d = item.deadLetter;
        const dead = d === undefined ? '' : `DEAD-LETTER attempts=${d.attempts ?? '-'}${d.lastStatus === undefined ? '' : ` status=${d.lastStatus}`} reason=${d.reason}  `;
        if (!item.valid) {
          process.stdout.write(opts.json ? `${JSON.stringify({ valid: false, reason: item.reason, ...where })}\n` : `${printable(`${dead}INVALID ${item.topic}/${item.partition}@${item.offset}: ${item.reason}`)}\n`);
          return;
        }
        const a = item.attributes;
        process.stdout.write(
          opts.json
            ? `${JSON.stringify({ valid: true, attributes: a, data: item.data, ...where })}\n`
            : `${printable(`${dead}${a.time ?? '-'}  ${String(a.eventname ?? a.type)}  id=${a.id}  correlationid=${String(a.correlationid ?? '-')}  key=${String(a.partitionkey ?? '-')}  ${JSON.stringify(item.data)}`)}\n`,
        );
      });
      process.stderr.write(`tailing ${topics.join(', ')}\n`);
      onSignals(async () => {
        await read.stop();
        await gw.close();
      }, log, config.shutdownTimeoutMs);
      // The reader went away (`tail … | head`): stop reading and end with 0, as a pipe's writer
      // does, instead of an unhandled EPIPE with its stack. Later writes fail the same way: one stop.
      let readerGone: string | undefined;
      process.stdout.on('error', (err: NodeJS.ErrnoException) => {
        if (readerGone !== undefined) return;
        readerGone = err.code ?? 'error';
        if (err.code !== 'EPIPE') log.error({ err: errorMessage(err) }, 'tail: cannot write to standard output; stopping');
        read.stop().catch((e: unknown) => log.error({ err: errorMessage(e) }, 'tail: stopping the read failed'));
      });
      await read.done;
      if (readerGone !== undefined) {
        await gw.close();
        process.exitCode = readerGone === 'EPIPE' ? 0 : 1;
      }
    });
}
