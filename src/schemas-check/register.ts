/**
 * `schemas register`: for every kind, validate the schema, check it against the registered
 * versions with this project's checker, set the subject's level, register, and report what changed.
 * Spec: DESIGN "The model is the schema registry" (the level is set on the subject when schemas are
 * registered; CI checks compatibility); Confluent Schema Registry API (PUT /config/{s}, POST
 * /subjects/{s}/versions).
 */
import { isGatewayError } from '../core/errors.js';
import type { Catalog } from '../catalog/index.js';
import { analyzeAvroSchema } from '../registry/avro/index.js';
import type { SchemaRegistry } from '../registry/port.js';
import { schemaChanges } from './changes.js';
import { checkKind } from './check.js';
import { parseEarlier } from './lenient.js';
import { createRegistryHistory } from './registry-history.js';
import type { RegistryHistoryOptions } from './registry-history.js';
import type { InvalidSchemaFile, KindRegistration, RegisterReport } from './types.js';

/** Why a `not-latest` kind failed, and the two ways out. */
export function notLatestReason(version: number, latest: number): string {
  return `the schema matches version ${version}, but the subject's latest is version ${latest}: the registry returns the existing version and does not move "latest", so readers of "latest" get version ${latest} while this schema writes version ${version}; to make it the latest, register it as a new version (change it, e.g. edit a doc, so it differs from version ${version}) or delete versions ${version + 1}..${latest} of the subject`;
}

/**
 * Registers the catalog's schemas, in catalog order. A kind whose schema file is in
 * `invalidFiles` (see loadCatalogForRegister; its schema in `catalog` is a stand-in) is reported
 * `invalid` and not registered; files that match no kind (the catalog did not load at all,
 * `catalog` undefined) are listed in the report's `invalidFiles`. A kind whose schema is invalid or
 * incompatible (by this project's checker, which is stricter than a registry where the Avro spec
 * is) is not registered; the others still are. A refusal by the registry (HTTP 409/422) is
 * reported as `refused`.
 * Returns: the report; `ok` when every kind is `registered` or `unchanged`. A kind whose schema is
 * identical to a registered version older than its subject's latest is `not-latest` (not ok): the
 * registry returns that version and leaves "latest" where it was (Confluent Schema Registry API,
 * POST /subjects/{s}/versions; Apicurio's ccompat API does the same), so producers would write the
 * older schema while consumers reading "latest" get the newer one.
 * A kind whose subject changed (see createRegistryHistory: the registry's `subjects()`, or
 * `historyOptions.subjects`, lists the registry's subjects) is checked against its earlier subject's versions before it is registered
 * under the new one.
 * Errors: GatewayError CEG_REGISTRY_UNAVAILABLE (retriable) when the registry does not answer —
 *   the run stops there (kinds before it may have been registered); CEG_INVALID_OPTIONS when a
 *   kind's earlier subject is ambiguous.
 */
export async function registerSchemas(
  catalog: Catalog | undefined,
  registry: SchemaRegistry,
  description: string,
  invalidFiles: readonly InvalidSchemaFile[] = [],
  historyOptions: RegistryHistoryOptions = {},
): Promise<RegisterReport> {
  const history = createRegistryHistory(registry, description, { ...(catalog === undefined ? {} : { catalog }), ...historyOptions });
  const kinds: KindRegistration[] = [];
  const invalidByFile = new Map(invalidFiles.map((f) => [f.schemaFile, f]));
  for (const kind of catalog?.kinds ?? []) {
    const base = { eventId: kind.eventId, name: kind.name, subject: kind.subject, level: kind.compatibility };
    const invalidFile = invalidByFile.get(kind.schemaFile);
    if (invalidFile !== undefined) {
      invalidByFile.delete(kind.schemaFile);
      const reasons = [`${kind.schemaFile} is not a valid Avro schema`, ...invalidFile.problems.map((p) => `${p.path}: ${p.message}`)];
      kinds.push(Object.freeze({ ...base, status: 'invalid', changes: [], reasons }));
      continue;
    }
    const earlier = await history.versions(kind);
    const check = checkKind(kind, kind.schema, earlier);
    if (check.status === 'invalid' || check.status === 'incompatible') {
      const reasons = check.status === 'invalid' ? check.problems.map((p) => `${p.path}: ${p.message}`) : check.findings.map((f) => `${f.direction} against ${f.label}: ${f.message}`);
      kinds.push(Object.freeze({ ...base, status: check.status, changes: [], reasons }));
      continue;
    }
    const latest = earlier.at(-1);
    const current = analyzeAvroSchema(kind.schema).schema;
    const previous = latest === undefined ? undefined : parseEarlier(latest.schema, latest.label).schema;
    const changes = current === undefined ? [] : previous === undefined ? ['new subject'] : schemaChanges(previous.root, current.root);
    try {
      await registry.setCompatibility(kind.subject, kind.compatibility);
      const reg = await registry.register(kind.subject, kind.schema);
      // History from an earlier subject (the kind's subject changed): the first version here is new.
      const isNew = latest === undefined || latest.subject !== undefined || reg.version > latest.version;
      if (!isNew) {
        // An existing version returned: the registry does not move "latest" to it. (The history's
        // `version` numbers the merged history when the kind's subject changed: ask the subject.)
        const newest = Math.max(reg.version, ...(await registry.versions(kind.subject)));
        if (reg.version < newest) {
          kinds.push(Object.freeze({ ...base, status: 'not-latest', version: reg.version, id: reg.id, latestVersion: newest, changes: [], reasons: [notLatestReason(reg.version, newest)] }));
          continue;
        }
      }
      kinds.push(Object.freeze({ ...base, status: isNew ? 'registered' : 'unchanged', version: reg.version, id: reg.id, changes: isNew ? changes : [], reasons: [] }));
    } catch (err) {
      if (isGatewayError(err, 'CEG_SCHEMA_INCOMPATIBLE') || isGatewayError(err, 'CEG_SCHEMA_INVALID')) {
        kinds.push(Object.freeze({ ...base, status: 'refused', changes, reasons: [err.message] }));
        continue;
      }
      throw err;
    }
  }
  const unmatched = [...invalidByFile.values()];
  return Object.freeze({ registry: description, ok: unmatched.length === 0 && kinds.every((k) => k.status === 'registered' || k.status === 'unchanged'), kinds, invalidFiles: unmatched });
}
