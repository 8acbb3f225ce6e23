import type { Command } from 'commander';
import { createGateway } from '../../app/index.js';
import { buildChain, readChain, renderChain } from '../../bus/trace/index.js';
import { EXIT_CHECK_FAILED, EXIT_OK, setup } from '../context.js';

/** `ce-gateway trace <correlationid>`: rebuilds a chain from the catalog's topics (bus spec T15). */
export function registerTraceCommand(program: Command): void {
  program
    .command('trace')
    .description('rebuild the chain of events sharing a correlationid from the topics and print it as a tree (causationid links)')
    .argument('<correlationid>', 'the correlationid to follow')
    .option('--json', 'print the tree as JSON')
    .option('--timeout <ms>', 'give up reading after this long', (v) => Number.parseInt(v, 10), 60_000)
    .action(async (correlationid: string, opts: { json?: boolean; timeout: number }) => {
      const { config, log } = setup(program);
      const gw = createGateway(config, log);
      try {
        await gw.ready;
        const topics = [...new Set(gw.catalog.kinds.map((k) => k.topic.name))];
        const { events, undecodable } = await readChain(gw.transport, gw.codec(), topics, correlationid, opts.timeout);
        const roots = buildChain(events);
        if (opts.json) process.stdout.write(`${JSON.stringify({ correlationid, events: events.length, undecodable, roots })}\n`);
        else process.stdout.write(renderChain(correlationid, roots));
        if (undecodable > 0) log.warn({ undecodable }, 'some records of the chain could not be decoded');
        process.exitCode = events.length > 0 ? EXIT_OK : EXIT_CHECK_FAILED;
      } finally {
        await gw.close();
      }
    });
}
