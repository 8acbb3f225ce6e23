import type { Command } from 'commander';
import { createGateway } from '../../app/index.js';
import { setup } from '../context.js';

export function registerTopicsCommand(program: Command): void {
  program
    .command('topics')
    .description('create the catalog topics that do not exist yet (never relies on broker auto-creation)')
    .option('--json', 'print the topics as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { config, log } = setup(program);
      const gw = createGateway(config, log);
      try {
        await gw.ready;
        const topics = gw.catalog.topics;
        if (opts.json) process.stdout.write(`${JSON.stringify(topics)}\n`);
        else for (const t of topics) process.stdout.write(`${t.name}\tpartitions=${t.partitions}\tretention.ms=${t.retentionMs}\tcleanup.policy=${t.cleanupPolicy}\n`);
      } finally {
        await gw.close();
      }
    });
}
