/** Loaded connector definitions and the problems found while loading them. */
import type { Ordering } from '../../bus/subscriber/index.js';
import type { RetryPolicy } from '../../core/retry.js';
import type { StartFrom } from '../../transport/port.js';
import type { FileDropOptions } from '../sinks/file-drop/index.js';
import type { ShellHookOptions } from '../sinks/shell-hook/index.js';
import type { RuntimeSubscription } from '../subscriptions/runtime.js';

interface DefinitionBase {
  /** File name without extension, e.g. `price-loaded-hook`. */
  readonly name: string;
  /** Absolute path of the connector file. */
  readonly file: string;
  readonly description?: string;
  readonly enabled: boolean;
  /** Durable subscription name (consumer group); dead letters go to `<subscription>.dlq`. */
  readonly subscription: string;
  /** Event kinds by business name or eventId. */
  readonly kinds: readonly string[];
  readonly startFrom: StartFrom;
  /** `key`: per-key order, retries in place; `none`: retries through the retry topic. */
  readonly ordering: Ordering;
  readonly retry: RetryPolicy;
  /** The retry settings as configured (ms), for display. */
  readonly retrySettings: { readonly maxAttempts: number; readonly initialMs: number; readonly factor: number; readonly maxMs: number; readonly jitter: number };
}

/** One validated, frozen connector. */
export type ConnectorDefinition =
  | (DefinitionBase & { readonly kind: 'shell-hook'; readonly sink: ShellHookOptions })
  | (DefinitionBase & { readonly kind: 'file-drop'; readonly sink: FileDropOptions })
  /** A subscription resource declared in a file: run by the subscription reconciler, listed by `GET /subscriptions`. */
  | (DefinitionBase & { readonly kind: 'subscription'; readonly runtime: RuntimeSubscription });

/** One problem in a connector file; `path` points into the file (`sink.command[0]`, `(root)`). */
export interface ConnectorProblem {
  /** Absolute path of the file. */
  readonly file: string;
  readonly path: string;
  readonly problem: string;
}
