/** What every CLI command shares: configuration from the environment (and env file), a logger, signal handling. */
import cluster from 'node:cluster';
import type { Command } from 'commander';
import { errorMessage } from '../core/errors.js';
import { environment, loadConfig } from '../config/index.js';
import type { Config } from '../config/index.js';
// The logger's own module, not the observability barrel: that one loads prom-client and OpenTelemetry.
import { createLogger } from '../observability/logger.js';
import type { Logger } from '../observability/index.js';
import type { Transport } from '../transport/index.js';
import type { Gateway, createGateway } from '../app/index.js';
import { kafkaClientSecurity } from '../core/tls-errors.js';
import type { KafkaClientSecurity } from '../core/tls-errors.js';
import { awaitBroker, brokerTimeoutMs, codeSuffix } from './broker-deadline.js';

/**
 * `createGateway`, its module (the app with its Kafka client, HTTP server and registry client)
 * imported at the first call. Why: the gateway's modules were most of each run's start-up (0.7 of
 * 1 s of CPU), paid also by runs that create no gateway (`--help`, which loads every command's
 * module, a usage error, an HTTP-only `replay`). Errors: those of `createGateway`.
 */
export async function openGateway(...args: Parameters<typeof createGateway>): Promise<Gateway> {
  const app = await import('../app/index.js');
  return app.createGateway(...args);
}

/** Exit codes (DESIGN "Conventions"): 0 ok, 1 a check failed, 2 usage or connection error. */
export const EXIT_OK = 0;
export const EXIT_CHECK_FAILED = 1;
export const EXIT_USAGE = 2;

/** What the run's Kafka client speaks, once {@link setup} read the settings with KAFKA_BROKERS. */
let security: KafkaClientSecurity | undefined;

/**
 * What this run's Kafka client speaks (TLS, a SASL login), read from the settings by
 * {@link setup}; undefined before that or without KAFKA_BROKERS. Why kept here: main.ts words a
 * command's failure (broker-deadline.ts commandFailureMessage) after the command's own scope has
 * ended, and its hint on the listener depends on it — one place for every command, none passing it.
 */
export function runKafkaSecurity(): KafkaClientSecurity | undefined {
  return security;
}

/**
 * Loads the configuration; logs go to stderr so that commands printing data keep stdout clean.
 * `overrides`: variables a command's options set for this run (they win over the environment).
 * `vars`: the environment over the env file, as read (the CLI's own client settings, e.g.
 * CE_GATEWAY_API_KEY, come from there: gateway-client.ts).
 * `brokerTimeoutMs`: the broker deadline, ms (`--broker-timeout`, CE_GATEWAY_BROKER_TIMEOUT_MS,
 * default 30000: broker-deadline.ts).
 * Errors: commander's usage error, exit 2, for a CE_GATEWAY_BROKER_TIMEOUT_MS that is no whole
 *   number of ms; loadConfig's errors.
 */
export function setup(program: Command, overrides: Readonly<Record<string, string>> = {}): { config: Config; log: Logger; vars: Readonly<Record<string, string | undefined>>; brokerTimeoutMs: number } {
  const opts = program.opts<{ logLevel?: string; brokerTimeout?: number }>();
  const { vars, file } = environment(process.env, process.cwd());
  const config = loadConfig({ ...vars, ...(opts.logLevel ? { LOG_LEVEL: opts.logLevel } : {}), ...overrides });
  let deadline: number;
  try {
    deadline = brokerTimeoutMs(opts.brokerTimeout, vars);
  } catch (err) {
    program.error(errorMessage(err), { exitCode: EXIT_USAGE });
  }
  if (config.kafka !== undefined) security = kafkaClientSecurity(config.kafka);
  const log = createLogger({ level: config.logLevel, destination: process.stderr });
  if (file) log.debug({ file }, 'settings read from env file (environment variables win)');
  return { config, log, vars, brokerTimeoutMs: deadline };
}

/**
 * Starts the broker deadline of a command (broker-deadline.ts `awaitBroker`), next to the command's
 * own work: when the broker has not answered within `deadlineMs` ms, writes `ce-gateway <command>:
 * kafka: no answer from <brokers> within <ms> ms …` (or `o.message` of that text) to stderr and
 * exits with `o.exitCode` (default 2) at once, without closing: a client still connecting to a
 * broker that does not answer would hold the close (and the process) for as long as its own retries
 * take; the text then ends `; last error: <the latest probe's failure>`. A probe failure retrying
 * cannot mend (refused SASL login, untrusted TLS certificate) ends the command the same way at once,
 * with `kafka: <brokers>: <reason>`. A failure of the command's own first (a refused connection, credentials) is reported by the
 * command as before. `stop()` ends the watch (call it when the command is done, after closing);
 * it also ends by itself at the broker's first answer. `o.bound`: what set the deadline, for the
 * message. Without KAFKA_BROKERS it watches nothing.
 */
export function brokerDeadline(transport: Pick<Transport, 'isHealthy' | 'lastHealthFailure'>, config: Config, deadlineMs: number, command: string, o: { readonly exitCode?: number; readonly bound?: string; readonly message?: (text: string) => string } = {}): { stop(): void } {
  const stopped = new AbortController();
  if (config.kafka !== undefined) {
    awaitBroker(transport, config.kafka.brokers, deadlineMs, { ...(o.bound === undefined ? {} : { bound: o.bound }), stop: stopped.signal, security: kafkaClientSecurity(config.kafka) }).catch((err: unknown) => {
      const text = errorMessage(err) + codeSuffix(err);
      process.stderr.write(o.message === undefined ? `ce-gateway ${command}: ${text}\n` : o.message(text));
      process.exit(o.exitCode ?? EXIT_USAGE);
    });
  }
  return { stop: () => stopped.abort() };
}

/**
 * Refuses a command that only means something against a broker when KAFKA_BROKERS is unset: the
 * in-memory transport of a fresh CLI process is empty and dies with it, so `topics` would report
 * topics it never made, `tail`/`trace`/`subscribe`/`deadletters` would read a bus nobody else can
 * reach, and `outbox relay` would mark rows published into it (events lost).
 * Errors: commander's usage error, exit 2 (`<command>: KAFKA_BROKERS is not set …`).
 */
export function requireKafka(program: Command, config: Config, command: string): void {
  if (config.kafka !== undefined) return;
  program.error(`${command}: KAFKA_BROKERS is not set: this command works on a Kafka cluster (set KAFKA_BROKERS in the environment, or in the env file the CLI reads: ./.stack/env, which \`npm run stack:up\` writes, or the file CE_GATEWAY_ENV_FILE names); the in-memory transport lives only inside one gateway process`, { exitCode: EXIT_USAGE });
}

/**
 * Runs `stop` once on SIGINT/SIGTERM/SIGHUP, then exits: 0, or 1 when stopping failed or did not
 * finish within `timeoutMs` (SHUTDOWN_TIMEOUT_MS), so a hung close never outlives the
 * orchestrator's grace period unnoticed: the process says why it gave up and exits before SIGKILL
 * would. A repeated SIGTERM or SIGHUP is ignored (logged); a repeated SIGINT outside a cluster
 * worker exits 130 at once. SIGHUP drains as SIGTERM does (see {@link SHUTDOWN_SIGNALS}) and
 * warns that nothing was reloaded.
 */
export function onSignals(stop: () => Promise<void>, log: Logger, timeoutMs: number): void {
  let stopping = false;
  const handler = (signal: string): void => {
    if (stopping) {
      // Ctrl-C again in a terminal: the user wants out now (a cluster worker gets the terminal's
      // SIGINT besides its primary's SIGTERM, so it keeps draining).
      if (signal === 'SIGINT' && !cluster.isWorker) {
        log.warn({ signal }, 'interrupted again: exiting without finishing the drain');
        process.exit(130);
      }
      log.info({ signal }, 'already shutting down');
      return;
    }
    stopping = true;
    if (signal === 'SIGHUP') log.warn({ signal }, SIGHUP_NO_RELOAD);
    log.info({ signal, timeoutMs }, 'shutting down');
    // Kept referenced: should stopping wait on nothing that keeps the event loop alive, the
    // process still ends through here, with its reason.
    setTimeout(() => {
      log.error({ timeoutMs }, 'shutdown did not finish within SHUTDOWN_TIMEOUT_MS; exiting');
      process.exit(1);
    }, timeoutMs);
    const startedAt = performance.now();
    stop().then(
      () => {
        log.info({ signal, tookMs: Math.round(performance.now() - startedAt) }, 'stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err: errorMessage(err) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // `on`, not `once`: a second SIGTERM while draining (a process-group kill, as systemd and `tini -g`
  // send, on top of the cluster primary's own SIGTERM to its workers) must not end the drain; the
  // stop runs once, and the timeout above bounds the wait.
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, handler);
}

/**
 * The signals that start the drain. SIGHUP is among them because Node's default for it ends the
 * process at once — no drain, offsets of records in hand not committed, nothing logged — and
 * operators do send it: `kill -HUP` out of habit (nginx, Kafka Connect reload on it), a closed
 * terminal or SSH session, a supervisor's "reload". Reloading is not offered (the partners file and
 * the environment are read once at start-up: docs/security.md), so the safe reading is a stop.
 */
export const SHUTDOWN_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Logged (warn) on SIGHUP, before the drain it starts: whoever sent it for a reload learns why the process stops. */
export const SIGHUP_NO_RELOAD = 'SIGHUP does not reload the configuration (PARTNERS_FILE, the environment are read once at start-up): draining and exiting as on SIGTERM; restart the gateway to apply a change';
