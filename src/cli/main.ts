#!/usr/bin/env node
/**
 * `ce-gateway`: one file per command under commands/. Exit codes: 0 ok, 1 a check failed,
 * 2 usage or connection error (DESIGN "Conventions users already know").
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { EXIT_USAGE, runKafkaSecurity } from './context.js';
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

/** Each command's module by the command's name, in the order `--help` lists them. */
const COMMANDS: Readonly<Record<string, () => Promise<(program: Command) => void>>> = {
  serve: async () => (await import('./commands/serve.js')).registerServeCommand,
  topics: async () => (await import('./commands/topics.js')).registerTopicsCommand,
  subscribe: async () => (await import('./commands/subscribe.js')).registerSubscribeCommand,
  trace: async () => (await import('./commands/trace.js')).registerTraceCommand,
  tail: async () => (await import('./commands/tail.js')).registerTailCommand,
  catalog: async () => (await import('./commands/catalog.js')).registerCatalogCommand,
  schemas: async () => (await import('./commands/schemas.js')).registerSchemasCommand,
  outbox: async () => (await import('./commands/outbox.js')).registerOutboxCommand,
  connectors: async () => (await import('./commands/connectors.js')).registerConnectorsCommand,
  replay: async () => (await import('./commands/replay.js')).registerReplayCommand,
  deadletters: async () => (await import('./commands/deadletters.js')).registerDeadLettersCommand,
  config: async () => (await import('./commands/config.js')).registerConfigCommand,
};

/**
 * The command a run names: its first argument that is neither an option of the program's own nor
 * the value of one (`--log-level debug`, `--broker-timeout 500`); undefined when there is none or
 * after `--`. What commander dispatches on, for the arguments it takes.
 */
function namedCommand(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') return undefined;
    if (arg === '--log-level' || arg === '--broker-timeout') i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

// Only the named command's module is loaded: each command's module brings its own part of the
// package (the connectors, the registry client, the auth checks…), and loading all twelve took
// most of every run's start-up (0.45 of 0.5 s of CPU for a usage error of one command; the CLI is
// started several hundred times per test run). Without a known command (--help, --version,
// `help`, a typo) all are registered, so the help, the listing and the "unknown command"
// suggestions are those of the whole CLI.
const named = namedCommand(process.argv.slice(2));
const wanted = named !== undefined && Object.hasOwn(COMMANDS, named) ? [COMMANDS[named]!] : Object.values(COMMANDS);
for (const register of await Promise.all(wanted.map((load) => load()))) register(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
  process.stderr.write(`${commandFailureMessage(running, err, runKafkaSecurity())}\n`);
  process.exit(EXIT_USAGE);
}
