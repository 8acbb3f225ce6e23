/**
 * Subscriptions as this instance runs them: the stored resource with its secrets opened (push),
 * or a connector file's subscription (push, shell-hook or file-drop sink), and the factory that
 * gives each one its sink. The reconciler (bus/subscriptions) starts, updates and stops them.
 * Spec: issue 8 ("the shell-hook and file-drop connectors become sink types of the same resource").
 */
import type { Tracing } from '../../observability/index.js';
import { GatewayError } from '../../core/errors.js';
import type { EventCodec } from '../../codec/event/index.js';
import type { RunSpec, RunningSink, SinkContext, SinkFactory, StoredSubscription, OpenedSecrets, SubscriptionView } from '../../bus/subscriptions/index.js';
import type { Logger } from '../../observability/index.js';
import { createFileDropSink } from '../sinks/file-drop/index.js';
import type { FileDropOptions } from '../sinks/file-drop/index.js';
import { createShellHookSink } from '../sinks/shell-hook/index.js';
import type { ShellHookOptions } from '../sinks/shell-hook/index.js';
import { HandshakeCache, createWebhookSink } from '../sinks/webhook/index.js';
import type { AllowList, Lookup, PushSettings } from '../sinks/webhook/index.js';

export type RuntimeDelivery =
  | { readonly mode: 'push'; readonly push: PushSettings }
  | { readonly mode: 'shell-hook'; readonly sink: ShellHookOptions }
  | { readonly mode: 'file-drop'; readonly sink: FileDropOptions };

/** A subscription as the reconciler runs it. */
export interface RuntimeSubscription extends RunSpec {
  readonly name: string;
  readonly owner: string;
  readonly delivery: RuntimeDelivery;
  /** Where it is declared: the definitions topic (`api`) or a connector file. */
  readonly origin: 'api' | 'file';
  /** What GET shows for a file-declared subscription. */
  readonly view?: SubscriptionView;
  /**
   * Which subscription of this name it is: the stored `createdAt` (a name deleted and created
   * again is another one); absent for a connector file's. Keys its accepted handshakes.
   */
  readonly incarnation?: string;
}

/**
 * A stored push subscription with its opened secrets → what runs.
 * Errors: CEG_INVALID_OPTIONS for a pull subscription: requests serve it, no member runs it (issue 9).
 */
export function fromStored(s: StoredSubscription, opened: OpenedSecrets): RuntimeSubscription {
  const d = s.delivery;
  if (d.mode !== 'push') throw new GatewayError('CEG_INVALID_OPTIONS', `${s.group} is a pull subscription: requests serve it, no consumer-group member runs it`, { retriable: false, details: { subscription: s.group } });
  return {
    group: s.group,
    name: s.name,
    owner: s.owner,
    kinds: s.kinds,
    filters: s.filters,
    ordering: s.ordering,
    retry: { maxAttempts: s.retry.maxAttempts, backoff: s.retry.backoff, maxAgeMs: s.retry.maxAgeMs },
    // Start offsets were committed at create; those of a topic a PATCH added were resolved then
    // (startAt); a partition without either starts at the end.
    startFrom: 'latest',
    ...(s.startAt === undefined ? {} : { startAt: s.startAt.map((p) => ({ topic: p.topic, partition: p.partition, offset: BigInt(p.offset), ...(p.takenAt === undefined ? {} : { takenAtMs: Date.parse(p.takenAt) }) })) }),
    state: s.state,
    concurrency: s.concurrency,
    origin: 'api',
    incarnation: s.createdAt,
    delivery: {
      mode: 'push',
      push: {
        url: opened.url ?? d.url,
        contentMode: d.contentMode,
        data: d.data,
        handshake: d.handshake,
        secrets: opened.secrets,
        headers: opened.headers,
        timeoutMs: s.retry.timeoutMs,
        retryAfterCapMs: s.retry.backoff.maxMs,
        rateLimit: s.rateLimit,
        concurrency: s.concurrency,
        ...(d.batch === undefined ? {} : { batch: d.batch }),
      },
    },
  };
}

export interface SinkFactoryDeps {
  readonly log: Logger;
  readonly allow: AllowList;
  /** `WebHook-Request-Origin` of validation handshakes. */
  readonly origin: string;
  readonly codec?: EventCodec;
  readonly lookup?: Lookup;
  /** Client spans of webhook calls (issue 15 "Tracing"); default off. */
  readonly tracing?: () => Tracing;
  /** Accepted validation handshakes; default: one cache of this factory (one per gateway). */
  readonly handshakes?: HandshakeCache;
}

/**
 * How long a stopping member's running shell hooks get in all, ms: they finish, or get SIGTERM
 * and then SIGKILL within it (shell-hook `stop`), well inside the default SHUTDOWN_TIMEOUT_MS (10 s).
 */
export const HOOK_STOP_WITHIN_MS = 5_000;

/**
 * The sink of each runtime subscription. The push sinks it builds share one
 * {@link HandshakeCache}: the handshake runs once per subscription, URL and gateway process, not
 * again each time a member starts (after an idle stop, a restart). Spec: CloudEvents Web Hooks
 * 1.0.2 §4; docs/subscriptions.md ("Validation handshake").
 */
export function runtimeSinkFactory(deps: SinkFactoryDeps): SinkFactory<RuntimeSubscription> {
  const handshakes = deps.handshakes ?? new HandshakeCache();
  return (d: RuntimeSubscription, ctx: SinkContext): RunningSink<RuntimeSubscription> => {
    const log = deps.log.child({ subscription: d.group });
    const delivery = d.delivery;
    switch (delivery.mode) {
      case 'push': {
        const subscription = d.incarnation === undefined ? d.group : `${d.group}@${d.incarnation}`;
        const sink = createWebhookSink(delivery.push, { log, allow: deps.allow, origin: deps.origin, ctx, handshakes, subscription, ...(deps.codec === undefined ? {} : { codec: deps.codec }), ...(deps.lookup === undefined ? {} : { lookup: deps.lookup }), ...(deps.tracing === undefined ? {} : { tracing: deps.tracing }) });
        return {
          handler: sink.handler,
          update: (next) => {
            if (next.delivery.mode === 'push') sink.update(next.delivery.push);
          },
          close: () => sink.close(),
        };
      }
      case 'shell-hook': {
        const hooks = createShellHookSink(delivery.sink, log);
        // A member stops (shutdown, PATCH, pause, delete) after its subscription stopped taking
        // events: a hook still running then is ended, not left to outlive the gateway and run a
        // second time beside its redelivery (break report, connectors 1). It is not committed.
        return { handler: hooks, update: () => undefined, close: () => hooks.stop({ withinMs: HOOK_STOP_WITHIN_MS }) };
      }
      case 'file-drop':
        return { handler: createFileDropSink(delivery.sink, log), update: () => undefined, close: () => Promise.resolve() };
      default: {
        const never: never = delivery;
        return never;
      }
    }
  };
}
