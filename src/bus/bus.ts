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
import type { KindName, PayloadOf } from '../catalog/generated/index.js';
import { silentLogger } from '../observability/index.js';
import type { Logger } from '../observability/index.js';
import type { PublishOptions, PublishReceipt } from './publisher/index.js';
import type { SubscribeOptions, Subscription } from './subscriber/index.js';
import type { RetryPolicy } from '../core/retry.js';

export const roles = ['publisher', 'subscriber', 'both', 'none'] as const;
export type Role = (typeof roles)[number];

/** What the bus needs from a running gateway (src/app): publishing and subscribing on the broker. */
export interface BusRemote {
  publish(kind: string, data: JsonValue, opts?: PublishOptions): PublishReceipt | undefined;
  subscribe(o: Omit<SubscribeOptions, 'retry'> & { retry?: RetryPolicy }): Promise<Subscription>;
  close(): Promise<void>;
}

/** An in-process handler: called with the data of every event of its kind this process publishes. */
export type LocalHandler = (data: JsonValue, kind: string) => void | Promise<void>;

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
   * Registers an in-process handler for a kind (by name or eventId); returns its remover. With a
   * generated kind name the handler gets that kind's generated payload type.
   */
  onLocal<K extends KindName>(kind: K, handler: (data: PayloadOf<K>, kind: string) => void | Promise<void>): () => void;
  onLocal<S extends string>(kind: S extends KindName ? never : S, handler: LocalHandler): () => void;
  onLocal(kind: string, handler: LocalHandler): () => void {
    const key = this.#key(kind);
    let set = this.#local.get(key);
    if (set === undefined) this.#local.set(key, (set = new Set()));
    set.add(handler);
    return () => void set.delete(handler);
  }

  /**
   * Dispatches to in-process handlers, then — when this process publishes — to the broker.
   * Never throws for a disabled bus (role `none` or `subscriber`): that is the T1 contract.
   * Errors (publishing roles only, thrown at once): those of Publisher.publish (unknown kind,
   *   invalid data, queue full).
   */
  publish<K extends KindName>(kind: K, data: PayloadOf<K>, opts?: PublishOptions): BusPublishResult;
  /** Any other kind name or an eventId: plain JSON, checked at run time. */
  publish<S extends string>(kind: S extends KindName ? never : S, data: JsonValue, opts?: PublishOptions): BusPublishResult;
  publish(kind: string, data: JsonValue, opts?: PublishOptions): BusPublishResult {
    const key = this.#key(kind);
    const handlers = [...(this.#local.get(key) ?? [])];
    const local = Promise.all(
      handlers.map(async (h) => {
        try {
          await h(data, key);
        } catch (err) {
          this.#localFailures++;
          this.#log.error({ kind: key, err: errorMessage(err) }, 'in-process handler failed');
        }
      }),
    ).then(() => undefined);
    if (this.#remote === undefined || this.role === 'subscriber') return { local };
    const remote = this.#remote.publish(kind, data, opts);
    return remote === undefined ? { local } : { local, remote };
  }

  /** Subscribes on the broker. Errors: CEG_INVALID_OPTIONS when this process's role does not subscribe. */
  subscribe(o: Omit<SubscribeOptions, 'retry'> & { retry?: RetryPolicy }): Promise<Subscription> {
    if (this.#remote === undefined || this.role === 'publisher') {
      return Promise.reject(new GatewayError('CEG_INVALID_OPTIONS', `this process's bus role is ${this.role}: it does not subscribe`, { retriable: false, details: { field: 'role' } }));
    }
    return this.#remote.subscribe(o);
  }

  async close(): Promise<void> {
    await this.#remote?.close();
  }
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

