import type { Command } from 'commander';
import { createGateway } from '../../app/index.js';
import { DEAD_LETTER_HEADERS, decodeRecord, headerBoundsProblem, peekHeaders, peekType } from '../../bus/subscriber/index.js';
import { GatewayError } from '../../core/errors.js';
import { assertTopicName } from '../../core/topic-name.js';
import { printable } from '../../core/printable.js';
import { DEFAULT_ENVELOPE_LIMITS } from '../../envelope/index.js';
import type { TransportRecord } from '../../transport/port.js';
import { onSignals, setup } from '../context.js';
import { parseSince } from '../since.js';

/** What a dead letter's headers say (`dlq_reason`, attempts, the sink's last status), for the line printed. */
function deadLetterInfo(r: TransportRecord): { reason: string; attempts?: string; lastStatus?: string } | undefined {
  const get = (name: string): string | undefined => {
    const h = r.headers.find(([n]) => n === name);
    return h === undefined ? undefined : new TextDecoder().decode(h[1]);
  };
  const reason = get(DEAD_LETTER_HEADERS.reason);
  if (reason === undefined) return undefined;
  const attempts = get(DEAD_LETTER_HEADERS.attempts);
  const lastStatus = get(DEAD_LETTER_HEADERS.lastStatus);
  return { reason, ...(attempts === undefined ? {} : { attempts }), ...(lastStatus === undefined ? {} : { lastStatus }) };
}

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
    .option('--from-beginning', 'start at the earliest offset')
    .option('--since <when>', 'start at records written since then: a duration (15m, 2h) or an RFC 3339 time', (v) => parseSince(v))
    .option('--json', 'one JSON object per line instead of a summary line')
    .action(async (kinds: string[], opts: { fromBeginning?: boolean; since?: number; json?: boolean; topic?: string[] }) => {
      if (kinds.length === 0 && opts.topic === undefined) program.error('tail: name event kinds, or topics with --topic', { exitCode: 2 });
      for (const t of opts.topic ?? []) assertTopicName(t);
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
      if (kinds.length === 0) for (const k of gw.catalog.kinds) ids.add(k.eventId);
      const topics = opts.topic ?? [...new Set(gw.catalog.kinds.filter((k) => ids.has(k.eventId)).map((k) => k.topic.name))];
      const codec = gw.codec();
      const at = (r: TransportRecord): { topic: string; partition: number; offset: string } => ({ topic: r.topic, partition: r.partition, offset: r.offset.toString() });
      const invalid = (r: TransportRecord, reason: string): void => {
        process.stdout.write(opts.json ? `${JSON.stringify({ valid: false, reason, ...at(r) })}\n` : `${printable(`INVALID ${r.topic}/${r.partition}@${r.offset}: ${reason}`)}\n`);
      };
      const from = opts.since !== undefined ? { kind: 'timestamp' as const, timestampMs: opts.since } : opts.fromBeginning ? { kind: 'earliest' as const } : { kind: 'latest' as const };
      const read = await gw.transport.read({ topics, from }, async (r) => {
        const tooBig = headerBoundsProblem(r, DEFAULT_ENVELOPE_LIMITS);
        if (tooBig !== undefined) return invalid(r, tooBig);
        const headers = peekHeaders(r);
        const type = peekType(headers);
        if (type !== undefined && !ids.has(type)) return;
        const d = await decodeRecord(codec, r, headers);
        if (!d.ok) return invalid(r, d.reason);
        if (!ids.has(d.event.attributes.type)) return;
        const e = d.event;
        const data = e.data?.kind === 'json' ? e.data.value : null;
        const a = e.attributes;
        const dead = deadLetterInfo(r);
        const deadText = dead === undefined ? '' : `DEAD-LETTER attempts=${dead.attempts ?? '-'}${dead.lastStatus === undefined ? '' : ` status=${dead.lastStatus}`} reason=${dead.reason}  `;
        process.stdout.write(
          opts.json
            ? `${JSON.stringify({ valid: true, attributes: a, data, ...at(r), ...(dead === undefined ? {} : { deadLetter: dead }) })}\n`
            : `${printable(`${deadText}${a.time ?? '-'}  ${String(a.eventname ?? a.type)}  id=${a.id}  correlationid=${String(a.correlationid ?? '-')}  key=${String(a.partitionkey ?? '-')}  ${JSON.stringify(data)}`)}\n`,
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
