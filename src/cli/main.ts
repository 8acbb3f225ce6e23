#!/usr/bin/env node
/**
 * `ce-gateway`: one file per command under commands/. Exit codes: 0 ok, 1 a check failed,
 * 2 usage or connection error (DESIGN "Conventions users already know").
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerServeCommand } from './commands/serve.js';
import { registerSubscribeCommand } from './commands/subscribe.js';
import { registerTopicsCommand } from './commands/topics.js';
import { registerTraceCommand } from './commands/trace.js';
import { registerTailCommand } from './commands/tail.js';
import { registerCatalogCommand } from './commands/catalog.js';
import { registerSchemasCommand } from './commands/schemas.js';
import { registerOutboxCommand } from './commands/outbox.js';
import { registerConnectorsCommand } from './commands/connectors.js';
import { registerReplayCommand } from './commands/replay.js';
import { registerDeadLettersCommand } from './commands/deadletters.js';
import { registerConfigCommand } from './commands/config.js';
import { EXIT_USAGE } from './context.js';
import { BROKER_TIMEOUT_VARIABLE, DEFAULT_BROKER_TIMEOUT_MS, brokerTimeoutOption, commandFailureMessage } from './broker-deadline.js';

/** The package's version (package.json is two folders up from both src/cli and dist/cli). */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command()
  .name('ce-gateway')
  .description('Kafka-based CloudEvents gateway and event bus')
  .version(version, '-V, --version', 'print the version of ce-gateway')
  .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (default: LOG_LEVEL or info)')
  .option('--broker-timeout <ms>', `commands on Kafka give up (exit 2) when the broker has not answered within this long; bounds connecting and the first answer, not a long run (default: ${BROKER_TIMEOUT_VARIABLE} or ${DEFAULT_BROKER_TIMEOUT_MS})`, brokerTimeoutOption)
  .exitOverride();

// The command that runs (`tail`, `deadletters list`): its failure names it (commandFailureMessage).
let running: string | undefined;
program.hook('preAction', (_root, action) => {
  const path: string[] = [];
  for (let c: Command | null = action; c !== null && c !== program; c = c.parent) path.unshift(c.name());
  running = path.join(' ');
});

registerServeCommand(program);
registerTopicsCommand(program);
registerSubscribeCommand(program);
registerTraceCommand(program);
registerTailCommand(program);
registerCatalogCommand(program);
registerSchemasCommand(program);
registerOutboxCommand(program);
registerConnectorsCommand(program);
registerReplayCommand(program);
registerDeadLettersCommand(program);
registerConfigCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
  process.stderr.write(`${commandFailureMessage(running, err)}\n`);
  process.exit(EXIT_USAGE);
}
