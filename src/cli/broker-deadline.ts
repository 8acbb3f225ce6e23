/**
 * The CLI's broker deadline (break report D4): how long a command waits for the Kafka broker's
 * first answer before it gives up with exit 2, naming the broker. A frozen broker (the kernel
 * accepts the TCP connection, nothing answers) held a command ~190 s on kafkajs (five retries of a
 * 30 s request, with backoff) and ~33 s on @platformatic/kafka.
 * `--broker-timeout <ms>`, else `CE_GATEWAY_BROKER_TIMEOUT_MS` (environment or env file), else 30000.
 * It bounds connecting and the first answer only: a long-running command (`tail`, `subscribe`)
 * runs on once the broker answered; its later requests time out after the deadline (5–30 s).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { GatewayError, errorMessage } from '../core/errors.js';
import { listenerHint, tlsListenerHint } from '../core/tls-errors.js';
import type { KafkaClientSecurity } from '../core/tls-errors.js';
import { linkedSignal } from '../core/abort-fanout.js';
import { raceAbort } from '../core/race-abort.js';
import { MAX_TIMER_MS } from '../core/timer-limit.js';
import type { KafkaTransportOptions, Transport } from '../transport/index.js';
import { wholeNumber } from './numbers.js';

/** The environment variable (or env-file entry) giving the deadline, ms, when `--broker-timeout` is not given. */
export const BROKER_TIMEOUT_VARIABLE = 'CE_GATEWAY_BROKER_TIMEOUT_MS';

/** The deadline without option or variable, ms. */
export const DEFAULT_BROKER_TIMEOUT_MS = 30_000;

/** Pause between two broker probes that failed before the deadline, ms. */
const PROBE_PAUSE_MS = 250;

/**
 * commander's parser for `--broker-timeout`: whole milliseconds, 1 to the longest Node timer.
 * Errors: commander's InvalidArgumentError (exit 2 with the usage), naming the range.
 */
export const brokerTimeoutOption: (value: string) => number = wholeNumber(1, MAX_TIMER_MS);

/**
 * The deadline, ms: `option` (`--broker-timeout`, already parsed) when given, else
 * `vars.CE_GATEWAY_BROKER_TIMEOUT_MS`, else {@link DEFAULT_BROKER_TIMEOUT_MS}.
 * Errors: commander's InvalidArgumentError for a variable that is not a whole number from 1 to
 *   the longest Node timer (message prefixed with the variable's name).
 */
export function brokerTimeoutMs(option: number | undefined, vars: Readonly<Record<string, string | undefined>>): number {
  if (option !== undefined) return option;
  const text = vars[BROKER_TIMEOUT_VARIABLE];
  if (text === undefined || text === '') return DEFAULT_BROKER_TIMEOUT_MS;
  try {
    return brokerTimeoutOption(text);
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `${BROKER_TIMEOUT_VARIABLE}: ${errorMessage(err)} (ms), got ${JSON.stringify(text.slice(0, 40))}`, { retriable: false, details: { field: BROKER_TIMEOUT_VARIABLE } });
  }
}

/**
 * The Kafka clients' timeouts under a deadline of `deadlineMs`: connect within min(3000, deadline)
 * ms, each request within the deadline held to 5000–30000 ms (not below 5 s: a read's fetch waits
 * up to a second for data, and must not time out for that). Pure.
 */
export function cliKafkaTimeouts(deadlineMs: number): Pick<KafkaTransportOptions, 'connectionTimeoutMs' | 'requestTimeoutMs'> {
  return { connectionTimeoutMs: Math.min(3_000, deadlineMs), requestTimeoutMs: Math.min(30_000, Math.max(5_000, deadlineMs)) };
}

/** The message of a broker that did not answer within the deadline. Pure. */
export function noAnswerMessage(brokers: readonly string[], deadlineMs: number, bound = `--broker-timeout or ${BROKER_TIMEOUT_VARIABLE}`): string {
  return `kafka: no answer from ${brokers.join(',')} within ${deadlineMs} ms (${bound}): the broker is down, stopped or unreachable, or refuses this client (--log-level debug shows the client's errors)`;
}

/**
 * ` (<hint>)` when core/tls-errors has one for a Kafka client's error `text`, else ''. The one
 * place every CLI failure line on a broker connection gets its hint from (the broker deadline's
 * "last error", a command's own failure), in the words of the gateway's bootstrap warning and
 * BrokerOutage line: with `security` (what the run's client speaks, core/tls-errors
 * kafkaClientSecurity), listenerHint — also a connection a TLS or SASL listener closed on a client
 * without KAFKA_SSL or KAFKA_SASL_MECHANISM; without it (the settings were never read), only
 * tlsListenerHint's TLS hello a plain listener dropped. Pure.
 */
function hinted(text: string, security?: KafkaClientSecurity): string {
  const hint = security === undefined ? tlsListenerHint(text) : listenerHint(text, security);
  return hint === undefined ? '' : ` (${hint})`;
}

/**
 * The message of a broker that refused this client for good (the probe's failure is not
 * retriable: refused SASL login or mechanism, untrusted TLS certificate): `reason` is the
 * client's error as the adapter words it. Pure.
 */
export function refusedMessage(brokers: readonly string[], reason: string): string {
  return `kafka: ${brokers.join(',')}: ${reason}`;
}

/** Options of {@link awaitBroker}. */
export interface AwaitBrokerOptions {
  /** What set the deadline, for the message (default the option and variable). */
  readonly bound?: string;
  /** Ends the wait without an error (the command finished first): resolves false. */
  readonly stop?: AbortSignal;
  /** What the client speaks, for the hint after the last error ({@link hinted}). */
  readonly security?: KafkaClientSecurity;
}

/**
 * Waits until the broker answers (`transport.isHealthy()`, tried again every 250 ms while it says
 * no), at most `deadlineMs` ms in all (AbortSignal.timeout and core raceAbort: a probe stuck on a
 * broker that accepts connections but never answers is stopped waiting for), or until `stop`
 * aborts (the command ended first). Resolves true when the broker answered, false when stopped.
 * After each failed probe, and every 250 ms while one lasts, `transport.lastHealthFailure?.()`
 * says why it failed so far: a failure that is not retriable ends the wait at once.
 * `o`: {@link AwaitBrokerOptions}.
 * Errors: GatewayError CEG_BROKER_UNAVAILABLE (retriable: false) with {@link refusedMessage} for a
 *   probe failure that is not retriable; CEG_BROKER_UNAVAILABLE (retriable) with
 *   {@link noAnswerMessage} and `; last error: <reason>` (when a probe failed) once the deadline
 *   passed without an answer.
 */
export async function awaitBroker(transport: Pick<Transport, 'isHealthy' | 'lastHealthFailure'>, brokers: readonly string[], deadlineMs: number, o: AwaitBrokerOptions = {}): Promise<boolean> {
  const { bound, stop, security } = o;
  const deadline = AbortSignal.timeout(deadlineMs);
  const linked = stop === undefined ? undefined : linkedSignal([deadline, stop]);
  const signal = linked?.signal ?? deadline;
  const ended = (): Error => new Error('broker wait ended');
  try {
    const refused = (): void => {
      const failure = transport.lastHealthFailure?.();
      if (failure !== undefined && !failure.retriable) {
        throw new GatewayError('CEG_BROKER_UNAVAILABLE', refusedMessage(brokers, failure.message), { retriable: false, details: { brokers: [...brokers] } });
      }
    };
    for (;;) {
      const probe = transport.isHealthy();
      // While the probe lasts (a client retrying its connect), its failures so far are looked at
      // every 250 ms: one retrying cannot mend ends the wait before the probe gives up.
      for (;;) {
        const up = await raceAbort(Promise.race([probe, sleep(PROBE_PAUSE_MS, undefined, { signal }).then(() => undefined)]), signal, ended);
        if (up === true) return true;
        refused();
        if (up === false) break;
      }
      await raceAbort(sleep(PROBE_PAUSE_MS, undefined, { signal }), signal, ended);
    }
  } catch (err) {
    if (stop?.aborted === true) return false;
    if (deadline.aborted && !(err instanceof GatewayError)) {
      const last = transport.lastHealthFailure?.();
      const text = noAnswerMessage(brokers, deadlineMs, bound) + (last === undefined ? '' : `; last error: ${last.message}${hinted(last.message, security)}`);
      throw new GatewayError('CEG_BROKER_UNAVAILABLE', text, { retriable: true, details: { brokers: [...brokers], deadlineMs } });
    }
    throw err;
  } finally {
    linked?.release();
  }
}

/**
 * The line (without newline) main.ts prints for a command that failed with `err`. A failure of the
 * Kafka client — a GatewayError CEG_BROKER_UNAVAILABLE or CEG_DELIVERY_TIMEOUT that a Kafka adapter
 * made (it carries the adapter's `details.operation`) — reads `ce-gateway <command>: kafka:
 * <reason>`, the form of the broker deadline's own messages (README "From the command line"): a
 * refused connection on @platformatic/kafka used to read `ce-gateway: partitionCount: metadata
 * failed 6 times. (connect ECONNREFUSED …)`, with no command and the adapter's internal operation
 * name. That prefix is dropped; the client's reason (broker address, socket error) is kept whole,
 * with {@link hinted}'s hint on what the listener may want (TLS never set up; a TLS or SASL listener
 * closing on a client without KAFKA_SSL or KAFKA_SASL_MECHANISM).
 * Anything else reads `ce-gateway <command>: <message>` (until 2026-12-07 without the command).
 * Both end with the error's code, ` [CEG_…]` ({@link codeSuffix}). `command`: the command's path
 * (`tail`, `deadletters list`), undefined when the failure came before any command ran.
 * `security`: what the run's Kafka client speaks (context.ts runKafkaSecurity), undefined when the
 * settings were not read. Pure.
 */
export function commandFailureMessage(command: string | undefined, err: unknown, security?: KafkaClientSecurity): string {
  const text = errorMessage(err);
  const who = `ce-gateway${command === undefined ? '' : ` ${command}`}`;
  if (!(err instanceof GatewayError) || (err.code !== 'CEG_BROKER_UNAVAILABLE' && err.code !== 'CEG_DELIVERY_TIMEOUT')) return `${who}: ${text}${codeSuffix(err)}`;
  const operation = err.details.operation;
  if (typeof operation !== 'string') return `${who}: ${text}${codeSuffix(err)}`;
  const reason = text.startsWith(`${operation}: `) ? text.slice(operation.length + 2) : text;
  return `${who}: kafka: ${reason.startsWith('kafka: ') ? reason.slice('kafka: '.length) : reason}${hinted(reason, security)}${codeSuffix(err)}`;
}

/**
 * What ends every CLI failure line: ` [<code>]`, the error's code — a GatewayError's `CEG_*`
 * (docs/errors.md), else the code a system or database error carries (`ECONNREFUSED`, a
 * PostgreSQL SQLSTATE such as `28P01`) — so a script or an operator greps one token, as the
 * commands that print a gateway's refusal show its `code`. Empty when the error has none. Pure.
 */
export function codeSuffix(err: unknown): string {
  const code = err instanceof GatewayError ? err.code : (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code) ? ` [${code}]` : '';
}
