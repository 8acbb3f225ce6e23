/**
 * Earlier versions of a kind's schema as registered under its subject — or, when that subject has
 * no versions yet because the kind's subject changed, under its earlier subject: on a shared topic
 * the subject is `<topic>-<record full name>` (TopicRecordNameStrategy), alone on its topic
 * `<topic>-value`, so adding a second kind to a topic, removing one, or changing a record's
 * namespace on a shared topic moves a kind to a new, empty subject.
 * Spec: Confluent Schema Registry API (GET /subjects, GET /subjects/{s}/versions,
 * GET /subjects/{s}/versions/{v}); DESIGN "Kafka mapping" (subject naming strategies).
 */
import { GatewayError } from '../core/errors.js';
import type { Catalog, EventKind } from '../catalog/index.js';
import type { SchemaRegistry } from '../registry/port.js';
import type { HistoricVersion, SchemaHistory } from './types.js';

/** Options of {@link createRegistryHistory}. */
export interface RegistryHistoryOptions {
  /**
   * Lists every subject of the registry; default: the registry's own `subjects()` when it has
   * one. Without either, an earlier subject is looked for at `<topic>-value`,
   * `<topic>-<record full name>` and under the catalog's namespaces only.
   */
  readonly subjects?: () => Promise<readonly string[]>;
  /** The catalog being checked: the subjects of its kinds are never taken as another kind's earlier subject. */
  readonly catalog?: Catalog;
}

/** One registered version, with the subject it is under. */
type Registered = { subject: string; version: number; id: number; schema: string };

function simpleName(fullName: string): string {
  return fullName.slice(fullName.lastIndexOf('.') + 1);
}

/** The record's full name of a schema text, or undefined. */
function recordNameOf(schema: string): string | undefined {
  try {
    const json = JSON.parse(schema) as { name?: unknown; namespace?: unknown };
    if (typeof json.name !== 'string') return undefined;
    return json.name.includes('.') || typeof json.namespace !== 'string' || json.namespace === '' ? json.name : `${json.namespace}.${json.name}`;
  } catch {
    return undefined;
  }
}

/**
 * A {@link SchemaHistory} over a registry: every registered version of the kind's subject. When
 * that subject has none, the kind's earlier subjects: those with versions whose latest schema is a
 * record of the same (unqualified) name — `<topic>-value`, and `<topic>-<namespace>.<RecordName>`
 * for any namespace (listed with `options.subjects`; the kind's own full name and the namespaces
 * of the catalog's records are always tried by name, for a kind now alone on its topic and for a
 * registry whose list is cut short — Apicurio lists at most 1,000 subjects) — and that are no current kind's subject (`options.catalog`).
 * Their versions are merged in registration order (by schema id) and carry `subject`, so a kind
 * that moved from `<topic>-value` to `<topic>-<ns>.<Name>` and then changed its namespace is
 * compared with its whole history. Once the kind is registered under its new subject, the
 * earlier subjects' versions stay in its history, before its own (a transitive level compares
 * with them too), unless they are ambiguous (then its own versions alone).
 * `description` names the registry for reports (no credentials).
 * Errors: those of the registry port (CEG_REGISTRY_UNAVAILABLE, retriable, when it does not
 *   answer) and of listing the subjects; GatewayError CEG_INVALID_OPTIONS (retriable: false) when
 *   the earlier subjects hold the record under two namespaces other than the kind's (two
 *   different records could be meant) — a history that cannot be told apart never passes as new.
 */
export function createRegistryHistory(registry: SchemaRegistry, description: string, options: RegistryHistoryOptions = {}): SchemaHistory {
  let listed: Promise<readonly string[]> | undefined;
  const listSubjects = options.subjects ?? registry.subjects?.bind(registry);
  const claimed = new Set((options.catalog?.kinds ?? []).map((k) => k.subject));
  // The namespaces the catalog's records use: tried by name, since a registry's list of subjects
  // may be cut short (Apicurio's `GET /subjects` answers at most 1,000, whatever offset or limit).
  const namespaces = new Set((options.catalog?.kinds ?? []).map((k) => k.recordName.slice(0, Math.max(0, k.recordName.lastIndexOf('.')))).filter((n) => n !== ''));

  const versionsOf = async (subject: string): Promise<Registered[]> => {
    const out: Registered[] = [];
    for (const n of await registry.versions(subject)) {
      const v = await registry.version(subject, n);
      out.push({ subject, version: v.version, id: v.id, schema: v.schema });
    }
    return out;
  };

  /**
   * The versions under the kind's earlier subjects, oldest first. Ambiguous (the record under two
   * other namespaces): an error when `strict` (the kind has no versions of its own), else none.
   */
  const earlierVersions = async (kind: EventKind, strict: boolean): Promise<Registered[]> => {
    const topicValue = `${kind.topic.name}-value`;
    const prefix = `${kind.topic.name}-`;
    const name = simpleName(kind.recordName);
    const candidates = new Set<string>([topicValue, `${prefix}${kind.recordName}`, ...[...namespaces].map((ns) => `${prefix}${ns}.${name}`)]);
    if (listSubjects !== undefined) {
      listed ??= listSubjects();
      for (const s of await listed) {
        if (s.startsWith(prefix) && s !== topicValue && simpleName(s.slice(prefix.length)) === name) candidates.add(s);
      }
    }
    candidates.delete(kind.subject);
    for (const c of claimed) candidates.delete(c);
    const found: Registered[][] = [];
    for (const s of candidates) {
      const versions = await versionsOf(s);
      const record = recordNameOf(versions.at(-1)?.schema ?? '');
      if (record !== undefined && simpleName(record) === name) found.push(versions);
    }
    const namespaced = found.map((v) => v[0]?.subject ?? '').filter((s) => s !== topicValue && s !== `${prefix}${kind.recordName}`);
    if (namespaced.length > 1) {
      if (!strict) return [];
      throw new GatewayError(
        'CEG_INVALID_OPTIONS',
        `kind ${kind.name}: its subject ${kind.subject} has no versions yet, and its earlier versions could be under any of the subjects ${namespaced.join(', ')} (a record ${name} under different namespaces); the check cannot tell which, so it does not pass the kind as new — delete the subjects that are not this kind's, or check with --git`,
        { retriable: false, details: { kind: kind.name, subject: kind.subject, candidates: namespaced } },
      );
    }
    return found.flat().sort((a, b) => a.id - b.id);
  };

  return {
    source: 'registry',
    description,
    async versions(kind: EventKind): Promise<readonly HistoricVersion[]> {
      const own = await versionsOf(kind.subject);
      const earlier = await earlierVersions(kind, own.length === 0);
      if (earlier.length === 0) return Object.freeze(own.map((v) => Object.freeze({ version: v.version, label: `version ${v.version}`, schema: v.schema })));
      // A kind registered under its new subject keeps the earlier subject's versions in its
      // history (a transitive level compares with them too): earlier ones first, a schema
      // registered under both (one id) counted once, as the kind's own.
      const ownIds = new Set(own.map((v) => v.id));
      const merged = [...earlier.filter((v) => !ownIds.has(v.id)), ...own];
      return Object.freeze(
        merged.map((v, i) => Object.freeze(v.subject === kind.subject ? { version: i + 1, label: `version ${v.version}`, schema: v.schema } : { version: i + 1, label: `${v.subject} version ${v.version}`, schema: v.schema, subject: v.subject })),
      );
    },
  };
}
