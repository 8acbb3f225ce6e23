#!/usr/bin/env node
/**
 * `ce-gateway`: serve | topics | subscribe. Exit codes: 0 ok, 1 a check failed, 2 usage or
 * connection error (DESIGN "Conventions users already know").
 */
import { Command, CommanderError } from 'commander';
import { errorMessage } from '../core/errors.js';
import { environment, loadConfig } from '../config/index.js';
import type { Config } from '../config/index.js';
import { createGateway } from '../app/index.js';
import { createLogger } from '../observability/index.js';
import type { Logger } from '../observability/index.js';

function setup(opts: { logLevel?: string }): { config: Config; log: Logger } {
  const { vars, file } = environment(process.env, process.cwd());
  const config = loadConfig(opts.logLevel ? { ...vars, LOG_LEVEL: opts.logLevel } : vars);
  // Logs go to stderr so that commands printing data (subscribe --json) keep stdout clean.
  const log = createLogger({ level: config.logLevel, destination: process.stderr });
  if (file) log.info({ file }, 'settings read from env file (environment variables win)');
  return { config, log };
}

function onSignals(stop: () => Promise<void>, log: Logger): void {
  let stopping = false;
  const handler = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err: errorMessage(err) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
}

const program = new Command()
  .name('ce-gateway')
  .description('Kafka-based CloudEvents gateway and event bus')
  .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (default: LOG_LEVEL or info)')
  .exitOverride();

program
  .command('serve')
  .description('run the HTTP gateway (POST /events, /readyz, /metrics); Kafka and the registry from KAFKA_BROKERS / SCHEMA_REGISTRY_URL, in-memory when unset')
  .action(async () => {
    const { config, log } = setup(program.opts());
    const gw = createGateway(config, log);
    const addr = await gw.listen();
    log.info({ url: `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`, transport: gw.transport.kind }, 'listening');
    onSignals(() => gw.close(), log);
  });

program
  .command('topics')
  .description('create the catalog topics that do not exist yet (never relies on broker auto-creation)')
  .option('--json', 'print the topics as JSON')
  .action(async (opts: { json?: boolean }) => {
    const { config, log } = setup(program.opts());
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

program
  .command('subscribe')
  .description('subscribe under a durable name and print each event as a JSON line (a second-process subscriber)')
  .requiredOption('-s, --subscription <name>', 'subscription name (the consumer group)')
  .requiredOption('-k, --kind <kinds...>', 'event kinds by eventId or business name')
  .option('--from-beginning', 'a new subscription starts at the earliest offset instead of the latest')
  .option('--max-events <n>', 'exit after this many events', (v) => Number.parseInt(v, 10))
  .action(async (opts: { subscription: string; kind: string[]; fromBeginning?: boolean; maxEvents?: number }) => {
    const { config, log } = setup(program.opts());
    const gw = createGateway(config, log);
    let seen = 0;
    let finish: () => void = () => {};
    const finished = new Promise<void>((r) => (finish = r));
    const sub = await gw.subscribe({
      subscription: opts.subscription,
      kinds: opts.kind,
      startFrom: opts.fromBeginning ? 'earliest' : 'latest',
      handler: async (event, ctx) => {
        process.stdout.write(`${JSON.stringify({ attributes: event.attributes, data: event.data?.kind === 'json' ? event.data.value : null, topic: ctx.topic, partition: ctx.partition, offset: ctx.offset.toString() })}\n`);
        if (opts.maxEvents !== undefined && ++seen >= opts.maxEvents) finish();
        return Promise.resolve();
      },
    });
    log.info({ subscription: sub.name }, 'subscribed');
    process.stderr.write(`subscribed ${sub.name}\n`);
    onSignals(() => gw.close(), log);
    await Promise.race([finished, sub.done]);
    await gw.close();
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  process.stderr.write(`ce-gateway: ${errorMessage(err)}\n`);
  process.exit(2);
}
