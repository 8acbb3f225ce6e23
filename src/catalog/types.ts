/**
 * The catalog: the model of every event kind (bus spec X1, X2, P1, M3, M6; DESIGN "The model is
 * the schema registry"). Values here are frozen once loaded.
 */
import type { CompatibilityLevel } from '../registry/port.js';
import type { TopicSpec } from '../transport/port.js';

/** M6: a notification carries identity only; a document carries data under an explicit size bound. */
export type EventClass = 'notification' | 'document';

/** Confluent subject naming strategies the catalog uses (DESIGN "Kafka mapping"). */
export type SubjectStrategy = 'topic-name' | 'topic-record-name';

/** One event kind of the model. */
export interface EventKind {
  /** Stable identity of the kind (lowercase UUID); the CloudEvents `type` (bus spec M3). */
  readonly eventId: string;
  /** Business name, PascalCase, e.g. `PriceLoadingCompleted`; the `eventname` extension. */
  readonly name: string;
  readonly description: string;
  /** Topic the kind is published on, with its settings. */
  readonly topic: TopicSpec;
  /** Registry subject of the value schema: `<topic>-value`, or `<topic>-<record fullname>` on a shared topic. */
  readonly subject: string;
  readonly subjectStrategy: SubjectStrategy;
  /** Schema file path relative to the catalog directory, e.g. `trading/strategy-signal.avsc`. */
  readonly schemaFile: string;
  /** Avro schema JSON text, compact (whitespace removed); what is registered under {@link subject}. */
  readonly schema: string;
  /** Fully qualified Avro record name, e.g. `caishen.trading.StrategySignal`. */
  readonly recordName: string;
  /** Top-level required string fields the partition key is computed from, in order. */
  readonly keyFields: readonly string[];
  readonly eventClass: EventClass;
  /** Size bound of one event, bytes (M6): the Avro-encoded data plus the attributes (UTF-8 names and values), checked by codec/event completeOutbound. */
  readonly maxDataBytes: number;
  /** Declared publication policy (bus spec P1). */
  readonly publish: boolean;
  /**
   * Internal to the gateway's own services (catalog `internal: true`, default false): never accepted
   * over HTTP (`POST /events` answers 403), left out of the public documents (`/catalog`, AsyncAPI,
   * JSON Schemas) and subscribable only by a partner that names it in `subscribe` (a `*` does not
   * cover it). Spec: issue 11.
   */
  readonly internal: boolean;
  /** Owning service, e.g. `pdsp`. */
  readonly owner: string;
  /** Compatibility level set on {@link subject} before registering. */
  readonly compatibility: CompatibilityLevel;
}

/** The loaded, validated, frozen model. */
export interface Catalog {
  /** Absolute directory the catalog was loaded from. */
  readonly dir: string;
  /** Every kind, in catalog order. */
  readonly kinds: readonly EventKind[];
  /** Every topic used by a kind, each once, in first-use order. */
  readonly topics: readonly TopicSpec[];
  /** Kind by `eventId` (the CloudEvents `type`); undefined when unknown. */
  byEventId(eventId: string): EventKind | undefined;
  /** Kind by business name; undefined when unknown. */
  byName(name: string): EventKind | undefined;
}

/** One problem found while validating a catalog; `path` points into catalog.yaml or a schema file. */
export interface CatalogProblem {
  readonly path: string;
  readonly problem: string;
}
