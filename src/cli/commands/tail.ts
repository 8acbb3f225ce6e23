import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { createGateway } from '../../app/index.js';
import { GatewayError } from '../../core/errors.js';
import { onSignals, setup } from '../context.js';

/** `ce-gateway tail <kind…>`: prints decoded events of the kinds as they arrive. */
export function registerTailCommand(program: Command): void {
  program
    .command('tail')
    .description('print decoded events of the given kinds as they arrive (a throw-away consumer group; no durable subscription)')
    .argument('<kinds...>', 'event kinds by business name or eventId')
    .option('--from-beginning', 'start at the earliest offset')
    .option('--json', 'one JSON object per line instead of a summary line')
    .action(async (kinds: string[], opts: { fromBeginning?: boolean; json?: boolean }) => {
      const { config, log } = setup(program);
      const gw = createGateway(config, log);
      await gw.ready;
      const ids = new Set<string>();
      for (const k of kinds) {
        const kind = gw.catalog.byName(k) ?? gw.catalog.byEventId(k);
        if (kind === undefined) {
          await gw.close();
          throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${k}"`, { retriable: false });
        }
        ids.add(kind.eventId);
      }
      const topics = [...new Set(gw.catalog.kinds.filter((k) => ids.has(k.eventId)).map((k) => k.topic.name))];
      const codec = gw.codec();
      const consumption = await gw.transport.consume({ group: `ce-gateway-tail-${randomUUID()}`, topics, startFrom: opts.fromBeginning ? 'earliest' : 'latest' }, async (r) => {
        try {
          const e = await codec.fromRecord(r);
          if (!ids.has(e.attributes.type)) return;
          const data = e.data?.kind === 'json' ? e.data.value : null;
          const a = e.attributes;
          process.stdout.write(
            opts.json
              ? `${JSON.stringify({ attributes: a, data, topic: r.topic, partition: r.partition, offset: r.offset.toString() })}\n`
              : `${a.time ?? '-'}  ${String(a.eventname ?? a.type)}  id=${a.id}  correlationid=${String(a.correlationid ?? '-')}  key=${String(a.partitionkey ?? '-')}  ${JSON.stringify(data)}\n`,
          );
        } catch (err) {
          process.stderr.write(`${r.topic}/${r.partition}@${r.offset}: cannot decode: ${(err as Error).message}\n`);
        }
      });
      process.stderr.write(`tailing ${topics.join(', ')}\n`);
      onSignals(async () => {
        await consumption.stop();
        await gw.close();
      }, log, config.shutdownTimeoutMs);
      await consumption.done;
    });
}
