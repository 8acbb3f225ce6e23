import type { Command } from 'commander';
import { createGateway } from '../../app/index.js';
import { startTail } from '../../bus/tail/index.js';
import { GatewayError } from '../../core/errors.js';
import { printable } from '../../core/printable.js';
import { onSignals, setup } from '../context.js';
import { parseSince } from '../since.js';

/**
 * `ce-gateway tail <kind…>`: prints events of the kinds as they arrive, decoded and validated
 * exactly as a subscription would: a record a subscription would dead-letter is printed as
 * INVALID with the reason. Read-only: no topic created, no schema registered, no consumer group
 * left behind (a group-less read).
 */
export function registerTailCommand(program: Command): void {
  program
    .command('tail')
    .description('print events of the given kinds as they arrive, decoded and validated like a subscription (invalid records marked INVALID with the reason); read-only, no consumer group')
    .argument('<kinds...>', 'event kinds by business name or eventId')
    .option('--from-beginning', 'start at the earliest offset')
    .option('--since <when>', 'start at records written since then: a duration (15m, 2h) or an RFC 3339 time', (v) => parseSince(v))
    .option('--json', 'one JSON object per line instead of a summary line')
    .action(async (kinds: string[], opts: { fromBeginning?: boolean; since?: number; json?: boolean }) => {
      const { config, log } = setup(program);
      const gw = createGateway(config, log, { readOnly: true });
      await gw.ready;
      const ids = new Set<string>();
      for (const k of kinds) {
        const kind = gw.catalog.byName(k) ?? gw.catalog.byEventId(k);
        if (kind === undefined) {
          await gw.close();
          throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${k}" (see ce-gateway catalog or GET /catalog)`, { retriable: false });
        }
        ids.add(kind.eventId);
      }
      const topics = [...new Set(gw.catalog.kinds.filter((k) => ids.has(k.eventId)).map((k) => k.topic.name))];
      const from = opts.since !== undefined ? { kind: 'timestamp' as const, timestampMs: opts.since } : opts.fromBeginning ? { kind: 'earliest' as const } : { kind: 'latest' as const };
      const read = await startTail(gw.transport, gw.codec(), { eventIds: ids, topics, from }, (item) => {
        const where = { topic: item.topic, partition: item.partition, offset: item.offset };
        if (!item.valid) {
          process.stdout.write(opts.json ? `${JSON.stringify({ valid: false, reason: item.reason, ...where })}\n` : `${printable(`INVALID ${item.topic}/${item.partition}@${item.offset}: ${item.reason}`)}\n`);
          return;
        }
        const a = item.attributes;
        process.stdout.write(
          opts.json
            ? `${JSON.stringify({ valid: true, attributes: a, data: item.data, ...where })}\n`
            : `${printable(`${a.time ?? '-'}  ${String(a.eventname ?? a.type)}  id=${a.id}  correlationid=${String(a.correlationid ?? '-')}  key=${String(a.partitionkey ?? '-')}  ${JSON.stringify(item.data)}`)}\n`,
        );
      });
      process.stderr.write(`tailing ${topics.join(', ')}\n`);
      onSignals(async () => {
        await read.stop();
        await gw.close();
      }, log, config.shutdownTimeoutMs);
      await read.done;
    });
}
