/**
 * The schema-registry port, in Confluent's terms: subject, version, schema id, compatibility
 * level. Adapters: Confluent REST (any compatible registry: Confluent, Apicurio ccompat) and
 * in-memory (the embedded default). One contract suite runs against both.
 */

/** Confluent compatibility levels. */
export const compatibilityLevels = [
  'NONE',
  'BACKWARD',
  'BACKWARD_TRANSITIVE',
  'FORWARD',
  'FORWARD_TRANSITIVE',
  'FULL',
  'FULL_TRANSITIVE',
] as const;
export type CompatibilityLevel = (typeof compatibilityLevels)[number];

/** One registered schema version of a subject. `schema` is the Avro schema JSON text. */
export interface RegisteredSchema {
  readonly subject: string;
  readonly version: number;
  /** Registry-wide schema id (the 4 bytes after the magic byte in the Confluent wire format). */
  readonly id: number;
  readonly schema: string;
}

/** The registry's own compatibility verdict for a candidate schema. */
export interface CompatibilityVerdict {
  readonly compatible: boolean;
  /** The registry's explanations when it gives any (Confluent with `verbose=true`); may be empty. */
  readonly messages: readonly string[];
}

export interface SchemaRegistry {
  /**
   * Registers `schema` under `subject` (idempotent: same schema → same id and version).
   * Errors: CEG_SCHEMA_INCOMPATIBLE (not retriable), CEG_SCHEMA_INVALID, CEG_REGISTRY_UNAVAILABLE (retriable).
   */
  register(subject: string, schema: string): Promise<RegisteredSchema>;
  /** Avro schema text for an id; cached forever (ids are immutable). Errors: CEG_SCHEMA_NOT_FOUND, CEG_REGISTRY_UNAVAILABLE. */
  schemaById(id: number): Promise<string>;
  /** Latest version of a subject. Errors: CEG_SCHEMA_NOT_FOUND, CEG_REGISTRY_UNAVAILABLE. */
  latest(subject: string): Promise<RegisteredSchema>;
  /** A given version of a subject. Errors as {@link latest}. */
  version(subject: string, version: number): Promise<RegisteredSchema>;
  /**
   * All version numbers of a subject, ascending; [] when the registry says the subject does not
   * exist — never for an answer that does not come from the registry's API (a wrong URL).
   * Errors: CEG_REGISTRY_UNAVAILABLE (retriable when the registry does not answer; not retriable
   *   for a URL that is not the registry's API, `details.misconfigured`).
   */
  versions(subject: string): Promise<readonly number[]>;
  /** Sets the subject's compatibility level. */
  setCompatibility(subject: string, level: CompatibilityLevel): Promise<void>;
  /**
   * Asks the registry whether `schema` may be registered under `subject` at the subject's level,
   * against `version` (a number or 'latest'), or, when omitted, against every version the level
   * compares with. Registers nothing. Optional: adapters without it leave it undefined.
   * Errors: CEG_SCHEMA_NOT_FOUND (no such subject or version), CEG_SCHEMA_INVALID,
   *   CEG_REGISTRY_UNAVAILABLE (retriable).
   */
  testCompatibility?(subject: string, schema: string, version?: number | 'latest'): Promise<CompatibilityVerdict>;
  /**
   * Every subject of the registry (`GET /subjects`), in the registry's order. Optional: adapters
   * without it leave it undefined. Apicurio's ccompat API answers at most 1,000 subjects (and
   * ignores paging parameters): callers must not take a missing subject as proof of absence.
   * Errors: CEG_REGISTRY_UNAVAILABLE (retriable when the registry does not answer; not retriable
   *   for an HTTP error or an answer that is not a list of subject names).
   * Spec: Confluent Schema Registry API `GET /subjects`.
   */
  subjects?(): Promise<readonly string[]>;
  /** true when the registry answers now. Never throws. */
  isHealthy(): Promise<boolean>;
}
