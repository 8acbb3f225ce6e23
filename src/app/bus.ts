/**
 * Builds the process's bus from the configuration (bus spec T2): role `none` needs no broker and
 * no registry; any other role connects a gateway (without its HTTP server) and waits until its
 * topics and schemas are ready: at most `startTimeoutMs`, and no longer than the caller's `signal`.
 */
import { loadCatalog } from '../catalog/index.js';
import { Bus } from '../bus/bus.js';
import type { Config } from '../config/index.js';
import { GatewayError, errorMessage, isGatewayError } from '../core/errors.js';
import { publicText, publicUrl } from '../core/public-url.js';
import { raceAbort } from '../core/race-abort.js';
import type { Logger } from '../observability/index.js';
import { createGateway } from './gateway.js';
import type { Gateway } from './gateway.js';

/**
 * Default bound of {@link createBus}'s wait for the broker and the registry, ms. Finite, unlike
 * `serve` (which waits with `/readyz` at 503 and lets the orchestrator decide): a library process
 * has no readiness probe, so a start-up that never ends was a hang nobody saw (break report:
 * nothing after 60 s on a closed port). One minute covers a broker or registry started alongside
 * the service (a Kafka KRaft node starts in 10–20 s) and a leader election; KafkaJS's own connect
 * gives up sooner (5 retries, about 30 s at most). `Infinity` keeps the old wait without bound.
 */
export const DEFAULT_START_TIMEOUT_MS = 60_000;

/** Options of {@link createBus}. */
export interface CreateBusOptions {
  /**
   * Longest wait for the broker and the registry to be reachable, ms: an integer ≥ 1, or
   * `Infinity` to wait until they are (or `signal` aborts). Default {@link DEFAULT_START_TIMEOUT_MS}.
   * Failures that waiting cannot mend (refused SASL login or mechanism, ACL, untrusted certificate,
   * a schema the registry refuses) reject at once whatever this says. Not used by role `none`.
   */
  readonly startTimeoutMs?: number;
  /**
   * Aborts the start: createBus rejects at once (as on the timeout) and releases what it opened.
   * An abort after createBus resolved does nothing: close the bus with `bus.close()`.
   */
  readonly signal?: AbortSignal;
}

/**
 * Creates the bus of `config.role` (`BUS_ROLE`), logging to `log`.
 * Resolves once the topics exist and the schemas are registered (role `none`: at once).
 * Errors: the clients it opened are closed again, and no socket or timer is left: the process
 * ends by itself. A refusal rejects once they are closed; the bound and an abort reject at once,
 * the closing going on behind (a Kafka client still connecting ends with its connect retries,
 * kafkajs about 10 s).
 * - `CEG_BROKER_UNAVAILABLE` / `CEG_REGISTRY_UNAVAILABLE`, **retriable: true**, when the broker
 *   (resp. registry) was still unreachable after `startTimeoutMs` or when `signal` aborted:
 *   `details.unreachable` (`broker` | `registry`), `brokers` or `registry` (the URL without
 *   credentials), `attempts`, `startTimeoutMs`, `aborted`; `cause` the last attempt's error
 *   (or the abort reason when no attempt failed yet).
 * - `CEG_BROKER_UNAVAILABLE`, **retriable: false**, `details.reason` `authentication` |
 *   `sasl-mechanism` | `authorization` | `tls` | `session-timeout`: the broker refuses these settings; fix them.
 * - other non-retriable start-up failures as thrown (`CEG_SCHEMA_INCOMPATIBLE`, `CEG_INVALID_NAME`, …).
 * - `CEG_INVALID_OPTIONS` (retriable: false) for a `startTimeoutMs` that is neither an integer ≥ 1 nor Infinity.
 * Source: bus spec T2; docs/errors.md; README "The bus as a library".
 */
export async function createBus(config: Config, log: Logger, options: CreateBusOptions = {}): Promise<Bus> {
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  if (!(startTimeoutMs === Infinity || (Number.isInteger(startTimeoutMs) && startTimeoutMs >= 1))) {
    throw new GatewayError('CEG_INVALID_OPTIONS', 'startTimeoutMs: integer milliseconds ≥ 1, or Infinity', { retriable: false, details: { startTimeoutMs } });
  }
  if (config.role === 'none') {
    log.info('bus role none: the bus is disabled; in-process handlers still run');
    return new Bus({ role: 'none', catalog: loadCatalog(config.catalogDir), log });
  }
  const gateway = createGateway(config, log);
  try {
    await readyWithin(gateway, config, startTimeoutMs, options.signal);
  } catch (err) {
    // Whatever ended the start (a refusal, the bound, the caller), the clients the gateway opened
    // and its retry timers must go: the caller has no handle to close them with.
    const closed = gateway.close().catch((closeErr: unknown) => log.warn({ err: errorMessage(closeErr) }, 'closing the bus after a failed start failed'));
    // On the bound or an abort the caller is answered at once, as an AbortSignal promises: the
    // close goes on behind it, since a Kafka client still connecting is closed only once its own
    // connect retries end (kafkajs: about 10 s). A refusal is answered once all is closed.
    if (!(err instanceof GatewayError && stoppedStarts.has(err))) await closed;
    throw err;
  }
  return new Bus({
    role: config.role,
    catalog: gateway.catalog,
    log,
    remote: {
      publish: (kind, data, opts) => gateway.publisher().publish(kind, data, opts),
      subscribe: (o) => gateway.subscribe(o),
      replay: (subscription, to, opts) => gateway.replay(subscription, to, opts),
      close: () => gateway.close(),
    },
  });
}

/** The errors {@link readyWithin} made (the bound or the caller's signal), not the gateway. */
const stoppedStarts = new WeakSet<GatewayError>();

/** `gateway.ready`, or a rejection naming what was unreachable once `startTimeoutMs` ran out or `signal` aborted. */
async function readyWithin(gateway: Gateway, config: Config, startTimeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
  const stop = new AbortController();
  let timedOut = false;
  const timer = startTimeoutMs === Infinity ? undefined : setTimeout(() => {
    timedOut = true;
    stop.abort();
  }, startTimeoutMs);
  const onAbort = (): void => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted === true) stop.abort();
  try {
    await raceAbort(gateway.ready, stop.signal, () => {
      const err = unreachable(gateway, config, { startTimeoutMs, timedOut, abortReason: signal?.reason });
      stoppedStarts.add(err);
      return err;
    });
  } finally {
    // Cleared on every path: a pending timer would keep a failed (or finished) start's process alive.
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The retriable error of a start that was stopped while the broker or the registry could not be reached. */
function unreachable(gateway: Gateway, config: Config, o: { readonly startTimeoutMs: number; readonly timedOut: boolean; readonly abortReason: unknown }): GatewayError {
  const { waitingFor, failedAttempts, lastError } = gateway.startup();
  // The last failure says best what is unreachable: a new attempt passes the broker step (quick
  // once the broker answers) before it reaches the registry that failed the previous one.
  const registry = isGatewayError(lastError, 'CEG_REGISTRY_UNAVAILABLE') || (!isGatewayError(lastError, 'CEG_BROKER_UNAVAILABLE') && waitingFor === 'registry');
  const where = registry ? `the schema registry (${config.registry === undefined ? 'in memory' : publicUrl(config.registry.url)})` : `the Kafka broker (${config.kafka === undefined ? 'in memory' : config.kafka.brokers.join(', ')})`;
  const why = o.timedOut ? `did not finish within startTimeoutMs = ${o.startTimeoutMs} ms` : 'was aborted';
  const last = lastError === undefined ? 'no attempt had failed yet' : `last error: ${publicText(errorMessage(lastError))}`;
  return new GatewayError(registry ? 'CEG_REGISTRY_UNAVAILABLE' : 'CEG_BROKER_UNAVAILABLE', `createBus: start-up ${why} while waiting for ${where} after ${failedAttempts + 1} attempt(s); ${last}`, {
    retriable: true,
    cause: lastError ?? o.abortReason,
    details: {
      unreachable: registry ? 'registry' : 'broker',
      ...(registry ? { registry: config.registry === undefined ? undefined : publicUrl(config.registry.url) } : { brokers: config.kafka?.brokers }),
      attempts: failedAttempts + 1,
      startTimeoutMs: o.startTimeoutMs,
      aborted: !o.timedOut,
    },
  });
}
