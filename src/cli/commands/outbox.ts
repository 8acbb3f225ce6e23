import type { Command } from 'commander';
import pg from 'pg';
import { createGateway } from '../../app/index.js';
import { ensureOutboxSchema, startOutboxRelay } from '../../bus/outbox/index.js';
import { GatewayError } from '../../core/errors.js';
import type { Config } from '../../config/index.js';
import { onSignals, setup } from '../context.js';

function outboxDatabase(config: Config): string {
  const url = config.outbox.databaseUrl;
  if (url === undefined) {
    // The outbox lives in the producer's own database (bus spec P3), never in the bus's DATABASE_URL.
    throw new GatewayError('CEG_INVALID_OPTIONS', 'OUTBOX_DATABASE_URL is not set: the outbox lives in the producing service\'s own database', { retriable: false, details: { field: 'OUTBOX_DATABASE_URL' } });
  }
  return url;
}

/** `ce-gateway outbox migrate | relay`: the transactional outbox (bus spec P3; docs/outbox.md). */
export function registerOutboxCommand(program: Command): void {
  const outbox = program.command('outbox').description('the transactional outbox in a producer\'s PostgreSQL database (OUTBOX_DATABASE_URL, OUTBOX_TABLE)');
  outbox
    .command('migrate')
    .description('create the outbox table and its indexes if they do not exist')
    .action(async () => {
      const { config } = setup(program);
      const client = new pg.Client({ connectionString: outboxDatabase(config) });
      await client.connect();
      try {
        const t = await ensureOutboxSchema(client, { table: config.outbox.table });
        process.stdout.write(`outbox table ready: ${t.name}\n`);
      } finally {
        await client.end();
      }
    });
  outbox
    .command('relay')
    .description('publish committed outbox rows in order per partition key; wakes on LISTEN/NOTIFY and polls')
    .action(async () => {
      const { config, log } = setup(program);
      const gw = createGateway(config, log);
      await gw.ready;
      const relay = await startOutboxRelay({
        connectionString: outboxDatabase(config),
        transport: gw.transport,
        table: config.outbox.table,
        batchSize: config.outbox.batchSize,
        pollIntervalMs: config.outbox.pollIntervalMs,
        log: log.child({ component: 'outbox-relay' }),
        name: config.instance,
      });
      log.info({ table: relay.table.name }, 'outbox relay running');
      onSignals(async () => {
        await relay.stop();
        await gw.close();
      }, log, config.shutdownTimeoutMs);
    });
}
