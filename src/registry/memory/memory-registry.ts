/**
 * In-memory schema registry with Confluent semantics: the embedded default and the fast
 * contract-test target. Not durable: ids exist only as long as the process.
 * Spec: Confluent Schema Registry API reference (register, ids, versions, config); DESIGN "Real
 * components" (embedded default).
 */
import { GatewayError } from '../../core/errors.js';
import { checkCompatibility, parseAvro } from '../avro/index.js';
import type { AvroSchema, CompatibilityFinding } from '../avro/index.js';
import { compatibilityLevels } from '../port.js';
import type { CompatibilityLevel, CompatibilityVerdict, RegisteredSchema, SchemaRegistry } from '../port.js';

/** Options of {@link createMemoryRegistry}. */
export interface MemoryRegistryOptions {
  /** Level for subjects without their own; default BACKWARD (Confluent's default). */
  readonly defaultCompatibility?: CompatibilityLevel;
}

interface Version extends RegisteredSchema {
  readonly parsed: AvroSchema;
}

interface Subject {
  readonly versions: Version[];
  compatibility?: CompatibilityLevel;
}

function notFound(message: string, details: Record<string, unknown>): GatewayError {
  return new GatewayError('CEG_SCHEMA_NOT_FOUND', message, { retriable: false, details });
}

/**
 * Creates an in-memory registry.
 * Semantics: ids are global and increase from 1; the same schema (compared as compact JSON) gets
 * the same id in every subject; registering a subject's existing schema returns its existing
 * version; a new version is checked against the subject's compatibility level first, with the
 * Avro resolution rules registries apply (avro/ findings that only the specification refuses,
 * `registryAccepts`, do not block, as they would not on Confluent or Apicurio).
 * Errors: CEG_INVALID_OPTIONS (retriable: false) for an unknown default level; the methods throw as
 *   the {@link SchemaRegistry} port documents (never CEG_REGISTRY_UNAVAILABLE).
 */
export function createMemoryRegistry(options: MemoryRegistryOptions = {}): SchemaRegistry {
  const defaultLevel = options.defaultCompatibility ?? 'BACKWARD';
  if (!compatibilityLevels.includes(defaultLevel)) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `unknown compatibility level ${String(defaultLevel)}`, { retriable: false });
  }
  const idsByCanonical = new Map<string, number>();
  const schemasById = new Map<number, string>();
  const subjects = new Map<string, Subject>();
  let nextId = 1;

  const strip = ({ subject, version, id, schema }: Version): RegisteredSchema => Object.freeze({ subject, version, id, schema });

  /** Findings that block registration, as a registry (Avro Java) sees them. */
  const blocking = (parsed: AvroSchema, versions: readonly Version[], level: CompatibilityLevel): CompatibilityFinding[] =>
    checkCompatibility(parsed, versions.map((v) => ({ version: v.version, schema: v.parsed })), level).filter((f) => !f.registryAccepts);

  const subjectOrThrow = (subject: string): Subject => {
    const s = subjects.get(subject);
    if (s === undefined || s.versions.length === 0) throw notFound(`subject ${subject} not found`, { subject });
    return s;
  };

  return {
    register(subject, schema) {
      return Promise.resolve().then(() => {
        const parsed = parseAvro(schema);
        const canonical = JSON.stringify(JSON.parse(schema));
        const s = subjects.get(subject) ?? { versions: [] };
        const existingId = idsByCanonical.get(canonical);
        const same = existingId === undefined ? undefined : s.versions.find((v) => v.id === existingId);
        if (same !== undefined) return strip(same);
        const level = s.compatibility ?? defaultLevel;
        const findings = blocking(parsed, s.versions, level);
        if (findings.length > 0) {
          const problems = findings.map((f) => `${f.direction} against version ${f.version}: ${f.message}`);
          throw new GatewayError('CEG_SCHEMA_INCOMPATIBLE', `schema is incompatible with subject ${subject} (${level}): ${problems.join('; ')}`, {
            retriable: false,
            details: { subject, compatibility: level, field: findings[0]?.path, problems },
          });
        }
        let id = existingId;
        if (id === undefined) {
          id = nextId++;
          idsByCanonical.set(canonical, id);
          schemasById.set(id, schema);
        }
        const version: Version = { subject, version: (s.versions.at(-1)?.version ?? 0) + 1, id, schema: schemasById.get(id) ?? schema, parsed };
        s.versions.push(version);
        subjects.set(subject, s);
        return strip(version);
      });
    },
    schemaById(id) {
      const schema = schemasById.get(id);
      return schema === undefined ? Promise.reject(notFound(`schema id ${id} not found`, { id })) : Promise.resolve(schema);
    },
    latest(subject) {
      return Promise.resolve().then(() => strip(subjectOrThrow(subject).versions.at(-1) as Version));
    },
    version(subject, version) {
      return Promise.resolve().then(() => {
        const v = subjectOrThrow(subject).versions.find((x) => x.version === version);
        if (v === undefined) throw notFound(`version ${version} of subject ${subject} not found`, { subject, version });
        return strip(v);
      });
    },
    versions(subject) {
      return Promise.resolve(Object.freeze((subjects.get(subject)?.versions ?? []).map((v) => v.version)));
    },
    subjects() {
      // A subject with only a compatibility level set has no versions: Confluent does not list it.
      return Promise.resolve(Object.freeze([...subjects].filter(([, s]) => s.versions.length > 0).map(([name]) => name)));
    },
    setCompatibility(subject, level) {
      if (!compatibilityLevels.includes(level)) {
        return Promise.reject(new GatewayError('CEG_INVALID_OPTIONS', `unknown compatibility level ${String(level)}`, { retriable: false }));
      }
      const s = subjects.get(subject) ?? { versions: [] };
      s.compatibility = level;
      subjects.set(subject, s);
      return Promise.resolve();
    },
    testCompatibility(subject, schema, version): Promise<CompatibilityVerdict> {
      return Promise.resolve().then(() => {
        const parsed = parseAvro(schema);
        const s = subjectOrThrow(subject);
        const level = s.compatibility ?? defaultLevel;
        let against: readonly Version[] = s.versions;
        if (version !== undefined) {
          const v = version === 'latest' ? s.versions.at(-1) : s.versions.find((x) => x.version === version);
          if (v === undefined) throw notFound(`version ${version} of subject ${subject} not found`, { subject, version });
          against = [v];
        }
        const messages = blocking(parsed, against, level).map((f) => f.message);
        return Object.freeze({ compatible: messages.length === 0, messages: Object.freeze(messages) });
      });
    },
    isHealthy() {
      return Promise.resolve(true);
    },
  };
}
