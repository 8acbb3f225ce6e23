/**
 * The bus as a process sees it (bus spec T2 "explicit role", W1 "resolvable default publisher",
 * T1 "no publisher attached: no error, in-process path unaffected"). A process declares its role:
 * `publisher`, `subscriber`, `both` or `none`. In-process handlers always run, whatever the role;
 * events cross the process boundary only when the role publishes. `none` disables the bus: no
 * broker, no registry, and publishing is still safe to call.
 */
import { GatewayError, errorMessage } from '../core/errors.js';
import type { Catalog } from '../catalog/index.js';
import type { JsonValue } from '../envelope/types.js';
import type { DataOf, DataOfEach, KindArg } from '../catalog/kinds.js';
import { silentLogger } from '../observability/index.js';
import type { Logger } from '../observability/index.js';
import { randomUUID } from 'node:crypto';
import { checkPublishable } from './local-check.js';
import { repeatedKindError } from './subscriber/options.js';
import { currentHandling, runHandling } from './correlation/index.js';
import type { HandlingContext } from './correlation/index.js';
import type { PublishOptions, PublishReceipt } from './publisher/index.js';
import type { SubscribeOptions, Subscription } from './subscriber/index.js';
import type { RetryPolicy } from '../core/retry.js';
import type { LocalReplayOptions, ReplayReport, ReplayTo } from './subscriptions/replay/index.js';

export const roles = ['publisher', 'subscriber', 'both', 'none'] as const;
export type Role = (typeof roles)[number];

/** What the bus needs from a running gateway (src/app): publishing and subscribing on the broker. */
export interface BusRemote {
  publish(kind: string, data: JsonValue, opts?: PublishOptions): PublishReceipt | undefined;
  subscribe(o: BusSubscribeOptions): Promise<Subscription>;
  /** Replays a subscription this process runs (issue 9); absent: the remote cannot. */
  replay?(subscription: string, to: ReplayTo, opts?: LocalReplayOptions): Promise<ReplayReport>;
  close(): Promise<void>;
}

/**
 * An in-process handler: called with the data of every event of its kind this process publishes,
 * as published (`DataOfEach<K>`: the kind's generated payload type, see `EventKinds`), and the kind's
 * business name. It runs in the published event's correlation context: an event it publishes
 * inherits `correlationid` and has the published event's id as `causationid` (bus spec M2, T11).
 */
export type LocalHandler<K extends string = string> = (data: DataOfEach<K>, kind: string) => void | Promise<void>;

/** {@link Bus.subscribe}'s options: those of the subscriber, with the retry policy optional. */
export type BusSubscribeOptions<K extends string = string> = Omit<SubscribeOptions<K>, 'retry'> & { readonly retry?: RetryPolicy };

export interface BusPublishResult {
  /** Settles when every in-process handler finished; never rejects (failures are logged and counted). */
  readonly local: Promise<void>;
  /** The broker delivery, when this process publishes and the catalog says the kind crosses processes. */
  readonly remote?: PublishReceipt;
}

export class Bus {
  readonly role: Role;
  readonly #catalog: Catalog | undefined;
  readonly #remote: BusRemote | undefined;
  readonly #log: Logger;
  readonly #local = new Map<string, Set<LocalHandler>>();
  #localFailures = 0;

  /**
   * @param remote required unless role is `none`.
   * Errors: CEG_INVALID_OPTIONS when a role other than `none` has no remote.
   */
  constructor(opts: { role: Role; catalog?: Catalog; remote?: BusRemote; log: Logger }) {
    if (opts.role !== 'none' && opts.remote === undefined) {
      throw new GatewayError('CEG_INVALID_OPTIONS', `role ${opts.role} needs a broker connection`, { retriable: false, details: { field: 'role' } });
    }
    this.role = opts.role;
    this.#catalog = opts.catalog;
    this.#remote = opts.role === 'none' ? undefined : opts.remote;
    this.#log = opts.log;
  }

  /** Failures of in-process handlers so far (each is also logged with its kind). */
  get localFailures(): number {
    return this.#localFailures;
  }

  #key(kind: string): string {
    return this.#catalog?.byEventId(kind)?.name ?? this.#catalog?.byName(kind)?.name ?? kind;
  }

  /**
   * Registers an in-process handler for a kind (by name or eventId); returns its remover.
   * Typing: a kind of the generated `EventKinds` gives the handler that kind's payload type; an
   *   unknown kind literal does not compile; a name only known at run time (`string`) gives JSON.
   */
  onLocal<K extends string>(kind: KindArg<K>, handler: LocalHandler<K>): () => void;
  onLocal(kind: string, handler: LocalHandler): () => void {
    const key = this.#key(kind);
    let set = this.#local.get(key);
    if (set === undefined) this.#local.set(key, (set = new Set()));
    set.add(handler);
    return () => void set.delete(handler);
  }

  /**
   * Checks the event, sends it to the broker when this process publishes, then dispatches it to
   * in-process handlers.
   * Never throws for a valid call on a disabled bus (role `none` or `subscriber`): that is the T1
   * contract. Invalid calls are refused in every role, so a test run with the bus disabled sees
   * the errors a publishing process would: with a catalog (every bus `createBus` builds has one)
   * a kind or data the model refuses throws before any handler runs. A Bus built without a
   * catalog (the default of {@link resolveBus}) cannot check and dispatches as given.
   * Errors (thrown at once, no handler called, nothing queued; retriable: false unless noted):
   *   CEG_UNKNOWN_TYPE, CEG_INVALID_ATTRIBUTE (`subject`, `correlationid`, `time` of `opts`),
   *   CEG_INVALID_DATA (details name the field), CEG_PAYLOAD_TOO_LARGE, CEG_ATTRIBUTES_TOO_LARGE;
   *   publishing roles also CEG_QUEUE_FULL (retriable: true) and CEG_CLOSED (after close()).
   * Typing: a kind of the generated `EventKinds` takes its generated payload type (bus spec X1);
   *   an unknown kind literal does not compile; a name only known at run time (`string`) takes
   *   plain JSON, checked at run time.
   */
  publish<K extends string>(kind: KindArg<K>, data: DataOf<K>, opts?: PublishOptions): BusPublishResult;
  publish(kind: string, data: JsonValue, opts?: PublishOptions): BusPublishResult {
    const remote = this.#remote !== undefined && this.role !== 'subscriber' ? this.#remote.publish(kind, data, opts) : undefined;
    // The publisher checked the data unless it did not publish (role, or `publish: false` in the catalog).
    if (remote === undefined && this.#catalog !== undefined) checkPublishable(this.#catalog, kind, data, opts);
    const key = this.#key(kind);
    const handlers = [...(this.#local.get(key) ?? [])];
    if (handlers.length === 0) return remote === undefined ? { local: Promise.resolve() } : { local: Promise.resolve(), remote };
    // In-process handlers run in the event's correlation context, as subscription handlers do, so
    // an event they publish continues the chain (bus spec M2, T11): `correlationid` inherited,
    // `causationid` the published event's id. Without a broker event (a disabled bus) the chain is
    // the caller's, else a new one.
    // The receipt's correlationid already is opts' or the inherited one (the publisher's rule).
    const handling = currentHandling();
    const context: HandlingContext = {
      correlationid: remote?.correlationid ?? opts?.correlationid ?? handling?.correlationid ?? randomUUID(),
      eventId: remote?.id ?? randomUUID(),
      ...(handling?.traceparent === undefined ? {} : { traceparent: handling.traceparent }),
    };
    const local = runHandling(context, () =>
      Promise.all(
        handlers.map(async (h) => {
          try {
            await h(data, key);
          } catch (err) {
            this.#localFailures++;
            this.#log.error({ kind: key, err: errorMessage(err) }, 'in-process handler failed');
          }
        }),
      ),
    ).then(() => undefined);
    return remote === undefined ? { local } : { local, remote };
  }

  /**
   * Subscribes on the broker. Typing: `kinds` of the generated `EventKinds` hand the handler
   * `EventOf<K>` (data of the kind's received type); an unknown kind literal does not compile.
   * Errors (the promise rejects): CEG_INVALID_OPTIONS when this process's role does not
   *   subscribe, or an option is out of its bounds (naming it, `details.field`), or `kinds` names
   *   one kind twice — the same text, or a business name and its eventId — (`details.field`
   *   `kinds[i]` of the later entry, as `POST /subscriptions` answers; checked when the bus has a
   *   catalog, as every bus `createBus` builds has); CEG_UNKNOWN_TYPE
   *   (a kind the catalog does not have); CEG_INVALID_NAME (a subscription name that cannot name
   *   its topics); CEG_CLOSED (after close()); the transport's (CEG_BROKER_UNAVAILABLE, retriable).
   */
  subscribe<K extends string>(o: BusSubscribeOptions<K>): Promise<Subscription> {
    if (this.#remote === undefined || this.role === 'publisher') {
      return Promise.reject(new GatewayError('CEG_INVALID_OPTIONS', `this process's bus role is ${this.role}: it does not subscribe`, { retriable: false, details: { field: 'role' } }));
    }
    const untyped = untypedSubscribeOptions(o);
    const repeat = this.#catalog !== undefined && Array.isArray(untyped.kinds) ? repeatedKindError(this.#catalog, untyped.kinds) : undefined;
    if (repeat !== undefined) return Promise.reject(repeat);
    return this.#remote.subscribe(untyped);
  }

  /**
   * Replays a subscription this process runs (issue 9): its members in this process stop, the
   * group's committed offsets move to `to`, the members start again and are handed the records
   * from there. `to`: `'earliest'`, `'latest'`, an RFC 3339 time or a `Date` (the first record
   * whose timestamp is at or after it), or offsets by partition (`{ '0': 42n }`; `'<topic>/<p>'`
   * keys when the subscription's kinds live on several topics). `opts.dryRun` only reports.
   * Resolves with `{ at, by, to, dryRun, partitions: { '<p>': { from, to, events, skipped } },
   * events, skipped }` (`events`: records handed out again; `skipped`: moved past, forward).
   * Members of the group in other processes are not stopped from here: the reset waits up to
   * `opts.waitMs` (default 30 s) for them to leave. Audited like an HTTP replay: written to the
   * replay audit log (`<SUBSCRIPTIONS_TOPIC>.replays`, key = the group; `by`: `opts.by`, default
   * `library`) — a dry run, and a replay that stopped the members whatever its end (a failed one
   * behind its error's answer); docs/subscriptions.md "What the audit log holds".
   * Errors: CEG_INVALID_OPTIONS (a role that does not subscribe); CEG_NOT_FOUND (no member of
   *   that name in this process); CEG_INVALID_REPLAY naming the field; CEG_REPLAY_FAILED
   *   (retriable: members stayed); the transport's (also the audit log's, for a finished replay's entry).
   */
  replay(subscription: Subscription | string, to: ReplayTo, opts?: LocalReplayOptions): Promise<ReplayReport> {
    const remote = this.#remote;
    if (remote?.replay === undefined || this.role === 'publisher') {
      return Promise.reject(new GatewayError('CEG_INVALID_OPTIONS', `this process's bus role is ${this.role}: it does not subscribe, so it has nothing to replay`, { retriable: false, details: { field: 'role' } }));
    }
    return remote.replay(typeof subscription === 'string' ? subscription : subscription.name, to, opts);
  }

  async close(): Promise<void> {
    await this.#remote?.close();
  }
}

/**
 * The options as the subscriber takes them at run time. Sound: the subscriber hands over only
 * events of `o.kinds`, their data decoded into this catalog's schema of the kind, which is what
 * `EventOf<K>` describes.
 */
export function untypedSubscribeOptions<K extends string>(o: BusSubscribeOptions<K>): BusSubscribeOptions {
  return o as unknown as BusSubscribeOptions;
}

let defaultBus: Bus | undefined;

/** Makes `bus` the process's default (W1); returns the previous one. */
export function setDefaultBus(bus: Bus | undefined): Bus | undefined {
  const previous = defaultBus;
  defaultBus = bus;
  return previous;
}

/**
 * The process's default bus (W1): the one set with {@link setDefaultBus}, else a disabled bus
 * (role `none`) so that components publish safely with nothing wired. Explicit injection wins:
 * components take a `bus` argument and fall back to this.
 */
export function resolveBus(explicit?: Bus): Bus {
  return explicit ?? defaultBus ?? (defaultBus = new Bus({ role: 'none', log: silentLogger() }));
}

