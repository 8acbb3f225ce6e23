/**
 * Builds a frozen {@link Catalog} from the catalog document and its schema files, reporting every
 * problem at once. Pure: file access is the caller's `readSchema`.
 * Spec: DESIGN "The model is the schema registry" (eventId stable UUID, business name, topic,
 * partition-key fields, event class and size bound, publish policy, owner); bus spec M3, M6, P1, X1;
 * DESIGN "Kafka mapping" (one topic per kind by default, subject naming strategies).
 */
import { parse as parseYaml } from 'yaml';
import { yamlErrorMessage } from '../core/yaml-error.js';
import { GatewayError } from '../core/errors.js';
import { topicNameProblem } from '../core/topic-name.js';
import type { CompatibilityLevel } from '../registry/port.js';
import type { TopicSpec } from '../transport/port.js';
import {
  isBusinessName,
  isEventId,
  isOwnerName,
  topicCollisionKey,
  topicNameSubject,
  topicRecordNameSubject,
} from './names.js';
import { checkSchema } from './schema-check.js';
import { catalogDocument } from './shape.js';
import type { CatalogDocument, TopicSettings } from './shape.js';
import type { Catalog, CatalogProblem, EventClass, EventKind } from './types.js';
import { schemaIssues } from '../core/schema-issues.js';

/** Largest data bound a notification may declare, bytes; above it the kind must be a document (M6). */
export const MAX_NOTIFICATION_BYTES = 65_536;

const DEFAULT_TOPIC: TopicSettings = Object.freeze({ partitions: 6, retentionMs: 604_800_000, cleanupPolicy: 'delete' });
const DEFAULT_MAX_DATA_BYTES = 1024;
const DEFAULT_COMPATIBILITY: CompatibilityLevel = 'FULL_TRANSITIVE';

/**
 * Reads a schema file by its path relative to the catalog directory; undefined when it does not
 * exist; `{ problem }` when something is there that is not readable as a file (a FIFO, a link loop:
 * src/core/regular-file.ts), reported at the kind's `schema` naming the file.
 */
export type SchemaReader = (relativePath: string) => string | undefined | { readonly problem: string };

function invalid(dir: string, problems: readonly CatalogProblem[]): GatewayError {
  const list = problems.map((p) => `${p.path}: ${p.problem}`).join('; ');
  return new GatewayError('CEG_CATALOG_INVALID', `catalog in ${dir} is invalid (${problems.length} problem(s)): ${list}`, {
    retriable: false,
    details: { dir, problems },
  });
}

function zodPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : `${out === '' ? '' : '.'}${String(seg)}`;
  return out === '' ? '(root)' : out;
}

function schemaPathProblem(p: string): string | undefined {
  if (!p.endsWith('.avsc')) return 'schema file must end in .avsc';
  if (p.startsWith('/') || p.includes('\\') || p.split('/').some((s) => s === '..' || s === '')) {
    return 'schema path must be relative and stay inside the catalog directory';
  }
  return undefined;
}

/**
 * Parses and validates catalog YAML text.
 * Shapes: `dir` is recorded as {@link Catalog.dir} and named in errors; `readSchema` resolves schema paths.
 * Errors: GatewayError CEG_CATALOG_INVALID (retriable: false), `details.problems` = every
 *   `{ path, problem }` found (path like `kinds[2].topic` or `trading/x.avsc#/fields/instrument`).
 */
export function parseCatalog(yamlText: string, readSchema: SchemaReader, dir: string): Catalog {
  let raw: unknown;
  try {
    raw = parseYaml(yamlText);
  } catch (err) {
    throw invalid(dir, [{ path: 'catalog.yaml', problem: `not YAML: ${yamlErrorMessage((err as Error).message)}` }]);
  }
  const shaped = catalogDocument.safeParse(raw);
  if (!shaped.success) {
    throw invalid(
      dir,
      schemaIssues(shaped.error.issues).map((i) => ({ path: zodPath(i.path), problem: i.message })),
    );
  }
  return buildCatalog(shaped.data, readSchema, dir);
}

function buildCatalog(doc: CatalogDocument, readSchema: SchemaReader, dir: string): Catalog {
  const problems: CatalogProblem[] = [];
  const defaults = doc.defaults ?? {};
  const declaredTopics = doc.topics ?? {};

  for (const name of Object.keys(declaredTopics)) {
    const p = topicNameProblem(name);
    if (p !== undefined) problems.push({ path: `topics.${name}`, problem: p });
  }

  const ids = new Map<string, number>();
  const names = new Map<string, number>();
  const kindsByTopic = new Map<string, number[]>();
  doc.kinds.forEach((k, i) => {
    const at = `kinds[${i}]`;
    if (!isEventId(k.eventId)) {
      problems.push({ path: `${at}.eventId`, problem: `"${k.eventId}" is not a lowercase RFC 9562 UUID` });
    }
    const prevId = ids.get(k.eventId);
    if (prevId !== undefined) problems.push({ path: `${at}.eventId`, problem: `duplicate eventId, also kinds[${prevId}]` });
    else ids.set(k.eventId, i);
    if (!isBusinessName(k.name)) problems.push({ path: `${at}.name`, problem: `"${k.name}" must be PascalCase letters and digits` });
    const prevName = names.get(k.name);
    if (prevName !== undefined) problems.push({ path: `${at}.name`, problem: `duplicate name, also kinds[${prevName}]` });
    else names.set(k.name, i);
    const topicProblem = topicNameProblem(k.topic);
    if (topicProblem !== undefined) problems.push({ path: `${at}.topic`, problem: topicProblem });
    kindsByTopic.set(k.topic, [...(kindsByTopic.get(k.topic) ?? []), i]);
    if (!isOwnerName(k.owner)) problems.push({ path: `${at}.owner`, problem: `"${k.owner}" must be lowercase letters, digits and "-"` });
    const dupKey = k.key.find((f, j) => k.key.indexOf(f) !== j);
    if (dupKey !== undefined) problems.push({ path: `${at}.key`, problem: `key field "${dupKey}" listed twice` });
  });

  for (const name of Object.keys(declaredTopics)) {
    if (!kindsByTopic.has(name)) problems.push({ path: `topics.${name}`, problem: 'topic is declared but no kind uses it' });
  }
  const collisions = new Map<string, string>();
  for (const name of kindsByTopic.keys()) {
    const key = topicCollisionKey(name);
    const other = collisions.get(key);
    if (other !== undefined) problems.push({ path: 'topics', problem: `topics "${other}" and "${name}" collide ("." and "_" are equal in Kafka metric names)` });
    else collisions.set(key, name);
  }

  const topicSpecs = new Map<string, TopicSpec>();
  for (const name of kindsByTopic.keys()) {
    const s = declaredTopics[name] ?? defaults.topic ?? DEFAULT_TOPIC;
    topicSpecs.set(
      name,
      Object.freeze({
        name,
        partitions: s.partitions,
        retentionMs: s.retentionMs,
        cleanupPolicy: s.cleanupPolicy,
        ...(s.maxMessageBytes === undefined ? {} : { maxMessageBytes: s.maxMessageBytes }),
      }),
    );
  }

  const kinds: EventKind[] = [];
  const recordNamesByTopic = new Map<string, Map<string, number>>();
  doc.kinds.forEach((k, i) => {
    const at = `kinds[${i}]`;
    const eventClass: EventClass = k.class ?? defaults.class ?? 'notification';
    let maxDataBytes = k.maxDataBytes ?? defaults.maxDataBytes ?? DEFAULT_MAX_DATA_BYTES;
    if (eventClass === 'document' && k.maxDataBytes === undefined) {
      problems.push({ path: `${at}.maxDataBytes`, problem: 'a document kind must state its size bound explicitly (M6)' });
    }
    if (eventClass === 'notification' && maxDataBytes > MAX_NOTIFICATION_BYTES) {
      problems.push({ path: `${at}.maxDataBytes`, problem: `a notification is bounded by ${MAX_NOTIFICATION_BYTES} bytes; declare class: document for larger data` });
    }
    const topic = topicSpecs.get(k.topic);
    if (topic?.maxMessageBytes !== undefined && maxDataBytes >= topic.maxMessageBytes) {
      problems.push({ path: `${at}.maxDataBytes`, problem: `must be below the topic's maxMessageBytes (${topic.maxMessageBytes})` });
    }
    maxDataBytes = Math.max(1, maxDataBytes);

    const pathProblem = schemaPathProblem(k.schema);
    if (pathProblem !== undefined) {
      problems.push({ path: `${at}.schema`, problem: pathProblem });
      return;
    }
    const text = readSchema(k.schema);
    if (text === undefined) {
      problems.push({ path: `${at}.schema`, problem: `schema file "${k.schema}" not found` });
      return;
    }
    if (typeof text !== 'string') {
      problems.push({ path: `${at}.schema`, problem: `schema file "${k.schema}": ${text.problem}` });
      return;
    }
    const checked = checkSchema(k.schema, text, k.key);
    problems.push(...checked.problems);
    if (checked.schema === undefined || checked.recordName === undefined || topic === undefined) return;

    const shared = (kindsByTopic.get(k.topic)?.length ?? 0) > 1;
    const seen = recordNamesByTopic.get(k.topic) ?? new Map<string, number>();
    recordNamesByTopic.set(k.topic, seen);
    const prevRecord = seen.get(checked.recordName);
    if (shared && prevRecord !== undefined) {
      problems.push({ path: `${at}.schema`, problem: `record ${checked.recordName} is also used by kinds[${prevRecord}] on the shared topic ${k.topic}; subjects would clash` });
    }
    seen.set(checked.recordName, i);

    kinds.push(
      Object.freeze({
        eventId: k.eventId,
        name: k.name,
        description: k.description,
        topic,
        subject: shared ? topicRecordNameSubject(k.topic, checked.recordName) : topicNameSubject(k.topic),
        subjectStrategy: shared ? 'topic-record-name' : 'topic-name',
        schemaFile: k.schema,
        schema: checked.schema,
        recordName: checked.recordName,
        keyFields: Object.freeze([...k.key]),
        eventClass,
        maxDataBytes,
        publish: k.publish,
        internal: k.internal ?? false,
        owner: k.owner,
        compatibility: k.compatibility ?? defaults.compatibility ?? DEFAULT_COMPATIBILITY,
      }),
    );
  });

  if (problems.length > 0) throw invalid(dir, problems);

  const byId = new Map(kinds.map((k) => [k.eventId, k]));
  const byName = new Map(kinds.map((k) => [k.name, k]));
  return Object.freeze({
    dir,
    kinds: Object.freeze(kinds),
    topics: Object.freeze([...topicSpecs.values()]),
    byEventId: (eventId: string) => byId.get(eventId),
    byName: (name: string) => byName.get(name),
  });
}
