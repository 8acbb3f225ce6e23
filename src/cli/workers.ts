/**
 * `serve` with `GATEWAY_WORKERS` > 1: this process, the node:cluster primary, runs no gateway. It
 * forks the workers, each a whole gateway on the same listening port (the primary hands out the
 * connections round-robin), with its own Kafka producer (its own idempotent producer id) and its
 * own member in every push subscription's consumer group, as another instance would be. Why
 * (issue 14): a Node process runs its JavaScript on one core, and batch ingress is CPU-bound in
 * the gateway's process (BENCHMARKS.md, "Ingress on more than one core").
 *
 * The primary
 * - on SIGTERM, SIGINT or SIGHUP, sends SIGTERM to every worker; each drains as a single gateway does (issue 15:
 *   answers what it read, then closes), and the primary exits when all have: 0 when every worker
 *   exited 0 (or, still starting, was ended by that SIGTERM), else 1. `SHUTDOWN_TIMEOUT_MS` + {@link SHUTDOWN_MARGIN_MS} after the signal it kills
 *   what is left (SIGKILL) and exits 1;
 * - replaces a worker that dies, {@link RESTART_DELAY_MS} later, as process managers do, so one
 *   crashed worker does not leave the pod at a fraction of its capacity while its health checks
 *   (answered by the others) stay green. The replacement joins the port once ready
 *   ({@link JOIN_WHEN_READY_ENV}): until then the others answer everything, `/readyz` included.
 *   Not when the worker exited with 2 (a start-up failure that waiting cannot mend: the primary
 *   stops the others and exits 2), nor when more than
 *   {@link MAX_DEATHS} died within {@link DEATH_WINDOW_MS} (a crash loop: exit 1, for the
 *   orchestrator to see and restart the whole);
 * - answers the workers' requests for the metrics of all (observability/cluster-metrics.ts).
 */
import cluster from 'node:cluster';
import type { Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { DEVELOPMENT_CURSOR_KEY_ENV } from '../bus/subscriptions/secrets.js';
import { serveClusterMetrics } from '../observability/cluster-metrics.js';
import type { Logger } from '../observability/index.js';
import { EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, SIGHUP_NO_RELOAD } from './context.js';

/** Time the primary adds to SHUTDOWN_TIMEOUT_MS before it kills the workers still draining, ms. */
export const SHUTDOWN_MARGIN_MS = 5000;
/** Pause before a dead worker is replaced, ms. */
export const RESTART_DELAY_MS = 1000;
/**
 * Set (to `ready`) in the environment of a worker forked while another worker is listening: it
 * joins the port only once its gateway is ready and has read the subscription definitions
 * (cli/commands/serve.ts, `listen({ whenLoaded: true })`), so no request or probe
 * reaches a replacement still starting while the others can answer.
 */
export const JOIN_WHEN_READY_ENV = 'CE_GATEWAY_WORKER_JOIN';
/** Worker deaths within {@link DEATH_WINDOW_MS} after which the primary gives up (exit 1). */
export const MAX_DEATHS = 5;
/** The window in which {@link MAX_DEATHS} is counted, ms. */
export const DEATH_WINDOW_MS = 60_000;

export interface PrimaryOptions {
  /** Workers to run, ≥ 2. */
  readonly workers: number;
  /** SHUTDOWN_TIMEOUT_MS, the workers' own drain budget, ms. */
  readonly shutdownTimeoutMs: number;
  readonly log: Logger;
  /** Ends the process (default `process.exit`; called once). */
  readonly exit?: (code: number) => void;
  /** Pause before a dead worker is replaced, ms (default {@link RESTART_DELAY_MS}). */
  readonly restartDelayMs?: number;
  /** Stop on this process's SIGTERM, SIGINT and SIGHUP (default true). */
  readonly signals?: boolean;
}

/** The running primary. */
export interface Primary {
  /** What SIGTERM / SIGINT do: every worker drains, then the process exits (see the module comment). */
  stop(signal: NodeJS.Signals): void;
}

/**
 * Makes this process the cluster primary: forks the workers and installs the signal handlers,
 * then returns its handle; the primary ends the process itself (see the module comment for when and with
 * which code). Call once, only where `cluster.isPrimary`: it installs process-wide cluster and
 * signal listeners. `workers` below 2 is not refused here (the configuration refuses it). Never throws.
 */
export function runPrimary(o: PrimaryOptions): Primary {
  const exit = o.exit ?? ((code: number) => process.exit(code));
  const log = o.log.child({ component: 'workers' });
  serveClusterMetrics({ log });
  const deaths: number[] = [];
  let stopping = false;
  let failed = false;
  let exitCode: number = EXIT_OK;
  let killTimer: NodeJS.Timeout | undefined;
  let ended = false;
  /** A second SIGINT while stopping (128 + SIGINT's number, as shells report it). */
  const EXIT_INTERRUPTED = 130;
  const end = (code: number): void => {
    if (ended) return;
    ended = true;
    clearTimeout(killTimer);
    exit(code);
  };

  const alive = (): Worker[] => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
  // Workers listening on the shared port now; the first generation listens at once, so /healthz
  // answers while the broker is still out of reach.
  const listening = new Set<number>();
  cluster.on('listening', (w) => listening.add(w.id));
  // One pull-cursor key for every worker of this run where the development key applies (a cursor
  // one worker signed must verify on the next); unused when SUBSCRIPTION_SECRETS_KEY is set.
  const developmentCursorKey = randomBytes(32).toString('hex');
  const fork = (): void => {
    const joinWhenReady = listening.size > 0;
    // Set either way: a value in the primary's own environment must not reach the first generation.
    const w = cluster.fork({ [JOIN_WHEN_READY_ENV]: joinWhenReady ? 'ready' : '', [DEVELOPMENT_CURSOR_KEY_ENV]: developmentCursorKey });
    // A failed IPC write to a dying worker is reported here; unheard, it would end the primary.
    w.on('error', (err: Error) => log.warn({ worker: w.id, err: err.message }, 'worker IPC error'));
    log.info({ worker: w.id, workerPid: w.process.pid, joins: joinWhenReady ? 'when ready' : 'at once' }, 'worker started');
  };
  const stopAll = (signal: NodeJS.Signals, code: number): void => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    const workers = alive();
    log.info({ signal, workers: workers.length, timeoutMs: o.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS }, 'stopping the workers');
    // Referenced: the primary must end even when a worker never exits.
    killTimer = setTimeout(() => {
      const left = alive();
      log.error({ workers: left.map((w) => w.process.pid) }, 'workers did not exit within SHUTDOWN_TIMEOUT_MS; killing them');
      for (const w of left) w.process.kill('SIGKILL');
      // A worker that could not start (2) outranks the hung drain.
      end(exitCode === EXIT_OK ? EXIT_CHECK_FAILED : exitCode);
    }, o.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS);
    // Each worker drains on its own SIGTERM handler (cli/context.ts onSignals), as a single gateway does.
    for (const w of workers) w.process.kill('SIGTERM');
    if (workers.length === 0) end(exitCode);
  };

  cluster.on('exit', (worker, code, signal) => {
    listening.delete(worker.id);
    const how = { worker: worker.id, workerPid: worker.process.pid, code, signal };
    if (stopping) {
      // A worker still starting has no SIGTERM handler yet: ended by our signal, it had nothing to drain.
      if (code !== 0 && signal !== 'SIGTERM') failed = true;
      log.info(how, 'worker exited');
      if (alive().length === 0) end(failed && exitCode === EXIT_OK ? EXIT_CHECK_FAILED : exitCode);
      return;
    }
    if (code === EXIT_USAGE) {
      log.error(how, 'a worker could not start (exit 2, see its error above); stopping the others');
      stopAll('SIGTERM', EXIT_USAGE);
      return;
    }
    const now = Date.now();
    deaths.push(now);
    while (deaths.length > 0 && deaths[0]! < now - DEATH_WINDOW_MS) deaths.shift();
    if (deaths.length > MAX_DEATHS) {
      log.error({ ...how, deaths: deaths.length, windowMs: DEATH_WINDOW_MS }, 'workers keep dying; stopping the others');
      stopAll('SIGTERM', EXIT_CHECK_FAILED);
      return;
    }
    const restartInMs = o.restartDelayMs ?? RESTART_DELAY_MS;
    log.error({ ...how, restartInMs }, 'a worker died; starting another');
    // Referenced: with every worker dead, this timer is what keeps the primary alive.
    setTimeout(() => {
      if (!stopping) fork();
    }, restartInMs);
  });
  if (o.signals !== false) {
    // `on`, not `once`: a second signal (a process-group kill after ours) must not end the primary
    // mid-drain; stopAll runs once.
    process.on('SIGTERM', () => stopAll('SIGTERM', EXIT_OK));
    process.on('SIGINT', () => {
      // Ctrl-C again in a terminal: out now, as a single gateway does (context.ts onSignals). The
      // workers ignore a repeated SIGINT (a worker cannot tell the terminal's from a group kill),
      // so the primary ends them; their records in hand stay uncommitted and come again.
      if (stopping && !ended) {
        log.warn({ signal: 'SIGINT', workers: alive().map((w) => w.process.pid) }, 'interrupted again: killing the workers without finishing the drain');
        for (const w of alive()) w.process.kill('SIGKILL');
        end(EXIT_INTERRUPTED);
        return;
      }
      stopAll('SIGINT', EXIT_OK);
    });
    // SIGHUP as SIGTERM (context.ts SHUTDOWN_SIGNALS): by Node's default the primary would die at
    // once and its workers, losing the IPC channel, exit without draining.
    process.on('SIGHUP', () => {
      if (!stopping) log.warn({ signal: 'SIGHUP' }, SIGHUP_NO_RELOAD);
      stopAll('SIGHUP', EXIT_OK);
    });
  }
  for (let i = 0; i < o.workers; i++) fork();
  log.info({ workers: o.workers }, 'cluster primary: workers forked');
  return { stop: (signal) => stopAll(signal, EXIT_OK) };
}
