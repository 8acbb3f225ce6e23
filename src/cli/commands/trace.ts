import type { Command } from 'commander';
import { buildChain, chainSize, readChain, renderChain } from '../../bus/trace/index.js';
import { printable } from '../../core/printable.js';
import { EXIT_CHECK_FAILED, EXIT_OK, brokerDeadline, setup, requireKafka, openGateway } from '../context.js';
import { BROKER_TIMEOUT_VARIABLE, cliKafkaTimeouts } from '../broker-deadline.js';
import { wholeNumber } from '../numbers.js';
import { parseSince } from '../since.js';

/** The shortest wait for the broker's first answer that `--timeout` sets, ms. */
const TRACE_MIN_FIRST_ANSWER_MS = 1000;

/**
 * `ce-gateway trace <correlationid>`: rebuilds a chain from the catalog's topics (bus spec T15).
 * Read-only: no topic created, no schema registered, no consumer group left behind.
 * Exit 0 with a complete chain; 1 when nothing was found, when the time limit cut the read (the
 * chain may be incomplete), or when records of the chain are invalid; 2 on usage or connection errors.
 */
export function registerTraceCommand(program: Command): void {
  program
    .command('trace')
    .description('rebuild the chain of events sharing a correlationid from the topics and print it as a tree (causationid links); read-only')
    .argument('<correlationid>', 'the correlationid to follow')
    .option('--json', 'print the tree as JSON')
    .option('--since <when>', 'read only records written since then: a duration back from now (15m, 2h, 7d) or an RFC 3339 time; default: from the earliest offset', (v) => parseSince(v))
    .option('--timeout <ms>', 'give up reading after this long; the answer then says it may be incomplete (exit 1); also the longest wait for the broker\'s first answer, at least 1000 (exit 2)', wholeNumber(1, 86_400_000), 60_000)
    .action(async (correlationid: string, opts: { json?: boolean; timeout: number; since?: number }) => {
      const { config, log, brokerTimeoutMs } = setup(program);
      requireKafka(program, config, 'trace');
      // --timeout bounds connecting too: the broker's first answer within --timeout (not below
      // 1 s: a shorter wait calls a healthy broker dead, and `--timeout 1` cuts the read, exit 1)
      // or the broker deadline, whichever is shorter.
      const deadlineMs = Math.min(Math.max(opts.timeout, TRACE_MIN_FIRST_ANSWER_MS), brokerTimeoutMs);
      const gw = await openGateway(config, log, { readOnly: true, kafkaTimeouts: cliKafkaTimeouts(deadlineMs) });
      const deadline = brokerDeadline(gw.transport, config, deadlineMs, 'trace', { bound: deadlineMs < brokerTimeoutMs ? '--timeout' : `--broker-timeout or ${BROKER_TIMEOUT_VARIABLE}` });
      try {
        await gw.ready;
        const topics = [...new Set(gw.catalog.kinds.map((k) => k.topic.name))];
        const r = await readChain(gw.transport, gw.codec(), topics, correlationid, { timeoutMs: opts.timeout, ...(opts.since === undefined ? {} : { sinceMs: opts.since }) });
        const roots = buildChain(r.events);
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ correlationid, complete: r.complete, events: chainSize(roots), invalid: r.invalid, scanned: r.scanned, roots })}\n`);
        } else {
          // Partner text is escaped for the terminal line by line (control characters as \uXXXX).
          process.stdout.write(renderChain(correlationid, roots).split('\n').map(printable).join('\n'));
          for (const i of r.invalid) process.stdout.write(`${printable(`INVALID ${i.topic}/${i.partition}@${i.offset}: ${i.reason}`)}\n`);
        }
        if (!r.complete) process.stderr.write(`trace: the read stopped after ${opts.timeout} ms before reaching the end of every partition (${r.scanned} records read): the chain may be incomplete; narrow it with --since or raise --timeout\n`);
        if (r.invalid.length > 0) process.stderr.write(`trace: ${r.invalid.length} record(s) of the chain are invalid (a subscription would dead-letter them)\n`);
        process.exitCode = r.events.length > 0 && r.complete && r.invalid.length === 0 ? EXIT_OK : EXIT_CHECK_FAILED;
      } finally {
        await gw.close();
        deadline.stop();
      }
    });
}
