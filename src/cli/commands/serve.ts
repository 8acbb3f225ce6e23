import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { Registry } from 'prom-client';
import type { Command } from 'commander';
import { loadCatalog } from '../../catalog/index.js';
import { connectorFilesInSubfolders, loadConnectors, noConnectorFilesWarning, startConnectors } from '../../connectors/index.js';
import { EXIT_USAGE, onSignals, setup } from '../context.js';
import { codeSuffix } from '../broker-deadline.js';
import { errorMessage, isGatewayError } from '../../core/errors.js';
import { clusterMetricsRenderer } from '../../observability/cluster-metrics.js';
import type { GatewayOverrides } from '../../app/index.js';
import type { Logger } from '../../observability/index.js';
import { JOIN_WHEN_READY_ENV, runPrimary } from '../workers.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP gateway (POST /events, /readyz, /metrics); Kafka and the registry from KAFKA_BROKERS / SCHEMA_REGISTRY_URL, in-memory when unset')
    .action(async () => {
      // The gateway's modules first, before anything is read or logged, as when they were loaded
      // with the CLI (not any more: context.ts openGateway says why): a signal after the first
      // log line finds a gateway being started, not a process still loading modules.
      const { createGateway } = await import('../../app/index.js');
      const { config, log: rootLog } = setup(program);
      // GATEWAY_WORKERS > 1: this process only supervises (cli/workers.ts); the workers come back here.
      if (config.workers > 1 && cluster.isPrimary) {
        // Said once, by the primary: every worker loads the same folder, and each said it (one line
        // per worker, GATEWAY_WORKERS of them). A folder the workers refuse (a bad file) is theirs to
        // report, with exit 2, as without workers: the primary only looks.
        let loaded: number | undefined;
        try {
          loaded = config.connectorsDir === undefined ? undefined : loadConnectors(config.connectorsDir, { catalog: loadCatalog(config.catalogDir) }).length;
        } catch {
          loaded = undefined;
        }
        if (config.connectorsDir !== undefined && loaded === 0) sayNoConnectorFiles(config.connectorsDir, rootLog);
        runPrimary({ workers: config.workers, shutdownTimeoutMs: config.shutdownTimeoutMs, log: rootLog });
        return;
      }
      const worker = cluster.isWorker ? cluster.worker : undefined;
      const log = worker === undefined ? rootLog : rootLog.child({ worker: worker.id });
      // Not allowed in NODE_OPTIONS, so set here, before the gateway allocates its working set;
      // V8 reads it at every full GC (issue 14: RSS at 5,000 events/s).
      if (config.heapGrowingPercent !== undefined) setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`);
      // A bad connector file (or one naming a kind the catalog lacks) stops start-up before anything listens.
      const defs = config.connectorsDir === undefined ? [] : loadConnectors(config.connectorsDir, { catalog: loadCatalog(config.catalogDir) });
      // A worker leaves it to the primary (above), which says it once for all.
      if (config.connectorsDir !== undefined && defs.length === 0 && worker === undefined) sayNoConnectorFiles(config.connectorsDir, rootLog);
      const gw = createGateway(config, log, worker === undefined ? {} : workerOverrides(config.instance, worker.id));
      gw.declareSubscriptions(defs.flatMap((d) => (d.kind === 'subscription' && d.enabled ? [d.runtime] : [])));
      // A start-up failure that waiting cannot mend (a schema the registry refuses, say) ends the
      // process with exit code 2 rather than leaving a gateway that is never ready.
      // A signal before the gateway was ready ends its start too: that is a shutdown (the signal's
      // exit code), not a start-up failure (config break report 4: it exited 2, "cannot start").
      let stopping = false;
      gw.ready.catch((err: unknown) => {
        if (stopping) return;
        process.stderr.write(`ce-gateway: cannot start: ${errorMessage(err)}${codeSuffix(err)}\n`);
        closeAndExit(gw, EXIT_USAGE);
      });
      // A replacement worker: the others answer until this one is ready and has loaded the
      // subscription definitions (cli/workers.ts). On a start-up failure the handler above ends the process.
      const join = worker !== undefined && process.env[JOIN_WHEN_READY_ENV] === 'ready';
      if (join) {
        try {
          await gw.ready;
        } catch {
          return;
        }
      }
      const addr = await gw.listen({ whenLoaded: join });
      // A definitions topic with push subscriptions and no key to open them: exit 2, saying why.
      gw.subscriptionsLoaded().catch((err: unknown) => {
        if (!isGatewayError(err, 'CEG_SECRETS_KEY_MISSING')) return;
        process.stderr.write(`ce-gateway: cannot start: ${errorMessage(err)}${codeSuffix(err)}\n`);
        closeAndExit(gw, EXIT_USAGE);
      });
      // The drain is armed before the "listening" line and the connectors' start, not after the
      // connectors started: each starts a consumer, so a SIGTERM or SIGHUP while they started
      // (seconds with several) ended the process undrained, Node's default, the listener serving.
      // Filled once the connectors' start begins (below), read by the stop.
      const starting: { connectors?: ReturnType<typeof startConnectors> } = {};
      const startCut = new AbortController();
      onSignals(async () => {
        stopping = true;
        // Connectors not yet started are not started; those already started are stopped (none if their start failed).
        startCut.abort();
        const started = await starting.connectors?.catch(() => undefined);
        // Running hooks get half of SHUTDOWN_TIMEOUT_MS in all (then SIGTERM, SIGKILL: docs/connectors.md
        // "On shutdown"); the gateway's close gets the rest. A hook ended so leaves its event uncommitted.
        await started?.stop({ withinMs: Math.floor(config.shutdownTimeoutMs / 2) });
        await gw.close();
      }, log, config.shutdownTimeoutMs);
      const ops = gw.opsAddress();
      log.info({ url: `${config.http.tls === undefined ? 'http' : 'https'}://${hostPort(addr)}`, ...(ops === undefined ? {} : { ops: `http://${hostPort(ops)}` }), transport: gw.transport.kind }, 'listening');
      const connectorsStarting = startConnectors(gw, defs, log.child({ component: 'connectors' }), { instanceId: gw.processInstance, signal: startCut.signal });
      starting.connectors = connectorsStarting;
      let connectors;
      try {
        connectors = await connectorsStarting;
      } catch (err) {
        // A start cut short by the stop under way: the stop ends the process with its own code.
        if (stopping) return;
        throw err;
      }
      if (stopping) return;
      if (connectors.running.length > 0) log.info({ connectors: connectors.running.length }, 'connectors started');
    });
}

/**
 * A CONNECTORS_DIR without connector files is valid but rarely meant (CONNECTORS_DIR=connectors
 * holds its examples one level down): said once per `serve`, with the sub-folders that hold some,
 * instead of starting nothing without a word. A warning when sub-folders hold connector files
 * (likely the wrong folder); an empty folder is said at info.
 */
function sayNoConnectorFiles(dir: string, log: Logger): void {
  const subFolders = connectorFilesInSubfolders(dir);
  log[subFolders.length > 0 ? 'warn' : 'info']({ connectorsDir: dir, subFolders }, noConnectorFilesWarning(dir, subFolders));
}

/** `address:port` of a bound socket, an IPv6 address in brackets. */
function hostPort(a: AddressInfo): string {
  return `${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
}

/**
 * A cluster worker's gateway: its metrics answered for all workers (the primary aggregates them),
 * and a process name of its own (`<INSTANCE_ID>.w<worker id>`) for status answers, consumer client
 * ids and replay state; the events' `source` keeps INSTANCE_ID.
 */
function workerOverrides(instance: string, id: number): GatewayOverrides {
  const metricsRegistry = new Registry();
  return { metricsRegistry, renderMetrics: clusterMetricsRenderer(metricsRegistry), processInstance: `${instance}.w${id}` };
}

/**
 * Ends a gateway that cannot start: closes it, then exits with `code`. A close that fails is said
 * on stderr (it was lost: `finally` exited before its rejection was reported) and the exit follows.
 */
function closeAndExit(gw: { close(): Promise<void> }, code: number): void {
  gw.close().then(
    () => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`ce-gateway: closing after the failed start failed too: ${errorMessage(err)}${codeSuffix(err)}\n`);
      process.exit(code);
    },
  );
}
