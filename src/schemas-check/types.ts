/**
 * Shapes of the schema check and register use cases (bus spec X1; DESIGN "The model is the schema
 * registry": CI runs the compatibility check and fails on a breaking change).
 */
import type { EventKind } from '../catalog/index.js';
import type { CompatibilityFinding, SchemaProblem } from '../registry/avro/index.js';
import type { CompatibilityLevel } from '../registry/port.js';

/** One earlier version of a kind's schema: a registered version, or the file at a git commit. */
export interface HistoricVersion {
  /** 1 for the oldest. */
  readonly version: number;
  /** How messages name it: `version 3` (registry) or `commit 1a2b3c4` (git). */
  readonly label: string;
  /** Avro schema JSON text. */
  readonly schema: string;
  /**
   * Registry only: the subject it is registered under, when that is not the kind's subject (the
   * kind's subject changed: its history starts with the earlier subject's versions).
   */
  readonly subject?: string;
}

/** Where earlier versions come from. */
export interface SchemaHistory {
  readonly source: 'registry' | 'git';
  /** For reports, e.g. `registry http://host:8081` or `git history of /repo up to HEAD`. */
  readonly description: string;
  /**
   * Earlier versions of the kind's schema, oldest first; [] for a new subject or file.
   * Errors: GatewayError CEG_REGISTRY_UNAVAILABLE (registry) or CEG_INVALID_OPTIONS (git history
   *   missing, shallow, or the base revision unknown); both mean exit 2.
   */
  versions(kind: EventKind): Promise<readonly HistoricVersion[]>;
}

/**
 * Verdict for one kind. `new`: no earlier version (nothing to be compatible with). `not-latest`
 * (registry only): the schema is identical (as sorted-key JSON) to a registered version of the
 * kind's subject that is not its latest — registering it returns that version and does not move
 * "latest" (Confluent Schema Registry API, POST /subjects/{s}/versions: an existing schema's
 * version is returned), so producers would write it while readers of "latest" get the newer one.
 */
export type KindStatus = 'compatible' | 'incompatible' | 'invalid' | 'new' | 'not-latest';

/** The check result of one kind. */
export interface KindCheck {
  readonly eventId: string;
  readonly name: string;
  readonly subject: string;
  /** Schema file relative to the catalog directory. */
  readonly schemaFile: string;
  readonly level: CompatibilityLevel;
  readonly status: KindStatus;
  /** true when the schema differs from the latest earlier version (compared as JSON). */
  readonly changed: boolean;
  /** Earlier versions the level compared with. */
  readonly compared: readonly { readonly version: number; readonly label: string }[];
  /** Declaration problems of the current schema (status `invalid`). */
  readonly problems: readonly SchemaProblem[];
  /** Incompatibilities (status `incompatible`). */
  readonly findings: readonly CompatibilityFinding[];
  /** Notes, e.g. an earlier version that is not valid Avro and was compared as well as it parses. */
  readonly notes: readonly string[];
  /** Status `not-latest`: the labels of the registered version the schema is identical to and of the subject's latest (`version 4`, `version 5`). */
  readonly notLatest?: { readonly matches: string; readonly latest: string };
}

/**
 * A file that stops the catalog from loading: a schema file the catalog names that is not valid
 * Avro, or `catalog.yaml` itself (problems such as a duplicate eventId, at their path in it:
 * `kinds[1].eventId`; `(root)` when it is not YAML).
 */
export interface InvalidSchemaFile {
  /** Path relative to the catalog directory (`catalog.yaml` for the catalog's own problems). */
  readonly schemaFile: string;
  readonly problems: readonly SchemaProblem[];
}

/** The result of `schemas check`. `ok` is true when every kind is `compatible` or `new`. */
export interface CheckReport {
  readonly source: 'registry' | 'git';
  readonly against: string;
  readonly catalogDir: string;
  readonly ok: boolean;
  readonly kinds: readonly KindCheck[];
  /** Files that stopped the catalog from loading; when any, `kinds` is empty and `ok` false. */
  readonly invalidFiles: readonly InvalidSchemaFile[];
}

/**
 * What `schemas register` did for one kind. `not-latest`: the registry answered with an existing
 * version older than the subject's latest (the schema is identical to that version; Confluent and
 * Apicurio return it and do not move "latest"), so the subject's latest is still the newer one.
 */
export type RegisterStatus = 'registered' | 'unchanged' | 'not-latest' | 'invalid' | 'incompatible' | 'refused';

export interface KindRegistration {
  readonly eventId: string;
  readonly name: string;
  readonly subject: string;
  readonly level: CompatibilityLevel;
  readonly status: RegisterStatus;
  /** Registered version and id (status `registered`, `unchanged` or `not-latest`). */
  readonly version?: number;
  readonly id?: number;
  /** Status `not-latest`: the subject's latest version, newer than `version`. */
  readonly latestVersion?: number;
  /** For a new version: what changed against the previous latest (`added /fields/x …`). */
  readonly changes: readonly string[];
  /** Problems or findings that stopped it, one line each. */
  readonly reasons: readonly string[];
}

/** The result of `schemas register`. `ok` when every kind is `registered` or `unchanged` and no file is invalid. */
export interface RegisterReport {
  readonly registry: string;
  readonly ok: boolean;
  readonly kinds: readonly KindRegistration[];
  /** Invalid schema files that no loaded kind names (the catalog could not load even without them). */
  readonly invalidFiles: readonly InvalidSchemaFile[];
}
