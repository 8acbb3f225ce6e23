/**
 * Starts loaded connectors: one durable subscription each (through the gateway's `subscribe`),
 * with the connector's sink as handler and its retry policy. Disabled connectors are skipped.
 * Spec: DESIGN "Connectors"; bus spec S1, S3, S5, "Migration Path".
 */
import type { RetryPolicy } from '../../core/retry.js';
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { EventHandler, SubscribeOptions, Subscription } from '../../bus/subscriber/index.js';
import { DEFAULT_OWNER } from '../../bus/subscriptions/model.js';
import type { SubscriptionView } from '../../bus/subscriptions/index.js';
import type { Logger } from '../../observability/index.js';
import { createFileDropSink, makeDirectories } from '../sinks/file-drop/index.js';
import { createShellHookSink } from '../sinks/shell-hook/index.js';
import type { SinkStopOptions } from '../sinks/shell-hook/index.js';
import type { ConnectorDefinition } from './types.js';
import type { Catalog } from '../../catalog/types.js';
import { kindsOnce } from '../../catalog/lookup.js';

/** What connectors need from the gateway (`Gateway` of src/app fits). */
export interface ConnectorHost {
  subscribe(o: Omit<SubscribeOptions, 'retry'> & { retry?: RetryPolicy }): Promise<Subscription>;
  /**
   * The catalog `subscribe` resolves kinds with (the gateway's): a kind a file lists twice is
   * subscribed to once, since the gateway refuses a repeat. Optional: without it kinds go as written.
   */
  readonly catalog?: Pick<Catalog, 'byEventId' | 'byName'>;
  /**
   * The short-form connectors it runs for `GET /subscriptions` and the console (the gateway's
   * `declareConnectors`): called with those about to start, and with `[]` once they stopped.
   * Optional: a host without an HTTP API lists nothing.
   */
  declareConnectors?(views: readonly SubscriptionView[]): void;
}

/**
 * Partitions of a short-form connector handled at once per instance: one event at a time per
 * partition, this many partitions (the Kafka transports' default, passed explicitly so that what
 * `GET /subscriptions` shows as `concurrency` is what runs).
 */
export const CONNECTOR_PARTITIONS_CONCURRENTLY = 3;

/**
 * A short-form connector (`kind: shell-hook` / `file-drop`) as `GET /subscriptions` shows it:
 * named by its subscription (= its consumer group, dead letters on `<subscription>.dlq`), owner
 * `anonymous` (the gateway's own, as its status says), `origin: file`, `connector: { kind, name }`,
 * `delivery.mode` its sink kind; `retry` as configured (`timeoutMs`: the hook's own limit, absent for
 * a file drop); `createdAt`/`updatedAt` the epoch, as for a subscription file (not stored).
 * Errors: none. A `kind: subscription` file's view is its `runtime.view` (parse.ts).
 */
export function connectorView(d: ConnectorDefinition & { readonly kind: 'shell-hook' | 'file-drop' }): SubscriptionView {
  const r = d.retrySettings;
  const epoch = new Date(0).toISOString();
  return {
    name: d.subscription,
    owner: DEFAULT_OWNER,
    group: d.subscription,
    deadLetterTopic: `${d.subscription}.dlq`,
    kinds: [...d.kinds],
    filters: [],
    start: d.startFrom,
    delivery: { mode: d.kind },
    ordering: d.ordering,
    retry: { maxAttempts: r.maxAttempts, backoff: { initialMs: r.initialMs, factor: r.factor, maxMs: r.maxMs, jitter: r.jitter }, ...(d.kind === 'shell-hook' ? { timeoutMs: d.sink.timeoutMs } : {}) },
    concurrency: CONNECTOR_PARTITIONS_CONCURRENTLY,
    rateLimit: null,
    state: 'active',
    createdAt: epoch,
    updatedAt: epoch,
    generation: 1,
    origin: 'file',
    connector: { kind: d.kind, name: d.name },
  };
}

export interface RunningConnector {
  readonly definition: ConnectorDefinition;
  readonly subscription: Subscription;
}

export interface ConnectorsHandle {
  /** Started connectors, in definition order. */
  readonly running: readonly RunningConnector[];
  /**
   * Unsubscribes every connector and stops their sinks; resolves once the subscriptions stopped
   * and every running hook exited (never rejects).
   * `withinMs` (ms): running hooks get the first part of it to finish, then SIGTERM to their
   * process groups, then SIGKILL after their kill grace (see SinkStopOptions); a hook ended so
   * leaves its event uncommitted (it comes again after the restart). Without it, running hooks
   * are waited for, each at most its `timeoutMs` plus `killGraceMs`.
   * Spec: docs/connectors.md "On shutdown".
   */
  stop(o?: SinkStopOptions): Promise<void>;
}

/** A connector's handler; a shell hook's also stops (ShellHookSink). */
export type ConnectorSink = EventHandler & { readonly stop?: (o?: SinkStopOptions) => Promise<void> };

/** The subscriber handler of a connector's sink. */
export function connectorHandler(d: ConnectorDefinition, log: Logger): ConnectorSink {
  switch (d.kind) {
    case 'shell-hook':
      return createShellHookSink(d.sink, log);
    case 'file-drop':
      return createFileDropSink(d.sink, log);
    case 'subscription':
      // Run by the subscription reconciler (it gives the sink its context); never through startConnectors.
      throw new GatewayError('CEG_INVALID_OPTIONS', `${d.file}: a subscription file runs through the gateway's subscription reconciler`, { retriable: false, details: { file: d.file } });
    default: {
      const never: never = d;
      return never;
    }
  }
}

/**
 * Runs `start` for connector `d`; a failure is rethrown naming the connector's file: a
 * GatewayError keeps its code and retriability and gains `details.file` / `details.connector`,
 * any other error becomes the cause of CEG_INVALID_OPTIONS (retriable: false).
 */
async function naming<T>(d: ConnectorDefinition, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    const where = { file: d.file, connector: d.name, subscription: d.subscription };
    if (err instanceof GatewayError) throw new GatewayError(err.code, `connector ${d.file}: ${err.message}`, { retriable: err.retriable, cause: err, details: { ...err.details, ...where } });
    throw new GatewayError('CEG_INVALID_OPTIONS', `connector ${d.file}: ${errorMessage(err)}`, { retriable: false, cause: err, details: where });
  }
}

/** Options of {@link startConnectors}. */
export interface StartConnectorsOptions {
  /** The gateway process's instance id, given to each connector's subscription. */
  readonly instanceId?: string;
  /** Aborted when the process begins its shutdown: connectors not yet started are not started. */
  readonly signal?: AbortSignal;
}

/**
 * Subscribes every enabled connector of `defs` on `host`, one after the other; resolves when all
 * have joined their groups. If one fails to start, those already started are stopped and the
 * error is rethrown naming the connector's file (`details.file`): e.g. GatewayError
 * CEG_UNKNOWN_TYPE for a kind the catalog does not know, CEG_INVALID_NAME, or CEG_INVALID_OPTIONS
 * caused by a file-system error creating a drop directory. (`loadConnectors` with a catalog
 * reports unknown kinds before anything starts.)
 * Once `opts.signal` aborts (the process began its shutdown) no further connector starts: one whose
 * subscribe was in flight is left at once, and the handle holds those started before; one info
 * line names the connectors not started (docs/connectors.md "On shutdown").
 * Spec: bus spec S1 (subscription name = durable key), S5.
 */
export async function startConnectors(host: ConnectorHost, defs: readonly ConnectorDefinition[], log: Logger, opts: StartConnectorsOptions = {}): Promise<ConnectorsHandle> {
  const running: RunningConnector[] = [];
  const sinks = new Map<RunningConnector, ConnectorSink>();
  const stop = async (so: SinkStopOptions = {}): Promise<void> => {
    // No longer listed once they stop taking events (the dead-letter routes of a stopped one answer 404 here, as before).
    host.declareConnectors?.([]);
    const all = running.splice(0);
    // The subscriptions begin to stop first (synchronously): a hook the sink ends then finds its
    // member stopping, which leaves the event uncommitted.
    const unsubscribed = all.map((r) => r.subscription.unsubscribe());
    const stopped = all.map((r) => sinks.get(r)?.stop?.(so));
    sinks.clear();
    await Promise.allSettled([...unsubscribed, ...stopped]);
  };
  // Listed from their start on (status answers `running: false` until a member runs), so an
  // operator sees every connector the process runs, not only those already joined.
  host.declareConnectors?.(defs.flatMap((d) => (d.enabled && d.kind !== 'subscription' ? [connectorView(d)] : [])));
  const notStarted: string[] = [];
  const shuttingDown = (): boolean => opts.signal?.aborted === true;
  try {
    for (const d of defs) {
      if (shuttingDown()) {
        if (d.enabled && d.kind !== 'subscription') notStarted.push(d.name);
        continue;
      }
      // The sinks name the subscription in each of their lines; binding it here too would repeat the key.
      const clog = log.child({ connector: d.name, kind: d.kind });
      if (!d.enabled) {
        clog.info({ subscription: d.subscription, file: d.file }, 'connector disabled, not started');
        continue;
      }
      if (d.kind === 'subscription') continue; // the gateway's reconciler runs these (declareSubscriptions)
      const handler = connectorHandler(d, clog);
      const subscription = await naming(d, async () => {
        if (d.kind === 'file-drop' && d.sink.createDirectories) await makeDirectories(d.sink.directory, 0o755); // 0755 exactly, whatever the umask
        return host.subscribe({
          subscription: d.subscription,
          // Each kind once: the gateway refuses a repeat, but a file that started a gateway must go
          // on starting it (`connectors check` warns on it); a repeat was delivered once anyway.
          kinds: host.catalog === undefined ? d.kinds : kindsOnce(host.catalog, d.kinds),
          handler,
          retry: d.retry,
          startFrom: d.startFrom,
          ordering: d.ordering,
          // The sink bounds each call itself (the hook's timeoutMs).
          handlerTimeoutMs: Number.POSITIVE_INFINITY,
          partitionsConcurrently: CONNECTOR_PARTITIONS_CONCURRENTLY,
          // Sinks never publish: no correlation context (its AsyncLocalStorage costs every promise).
          correlationContext: false,
          ...(opts.instanceId === undefined ? {} : { instanceId: opts.instanceId }),
        });
      });
      if (shuttingDown()) {
        // Its join was in flight when the shutdown began: it leaves at once, never listed as running.
        notStarted.push(d.name);
        await Promise.allSettled([subscription.unsubscribe(), handler.stop?.({})]);
        continue;
      }
      subscription.done.catch((err: unknown) => clog.error({ subscription: d.subscription, err: errorMessage(err) }, 'connector subscription failed'));
      const r: RunningConnector = { definition: d, subscription };
      running.push(r);
      sinks.set(r, handler);
      clog.info({ subscription: d.subscription, kinds: d.kinds, file: d.file }, 'connector started');
    }
  } catch (err) {
    await stop();
    throw err;
  }
  if (notStarted.length > 0) log.info({ connectors: notStarted }, 'connectors not started: shutting down');
  return {
    get running() {
      return [...running];
    },
    stop,
  };
}
