/**
 * Checks one catalog schema file: JSON, a valid Avro schema (avsc parses it), a record at the top,
 * and the partition-key fields present as required string fields.
 * Spec: Avro 1.11 specification §"Schema Declaration"; DESIGN "Kafka mapping" (record key from
 * the catalog's key fields).
 * Note: this is the catalog's only use of avsc, to validate at load time; encoding lives in codec/data.
 */
import avsc from 'avsc';
import type { Schema, Type } from 'avsc';
import type { CatalogProblem } from './types.js';

/** Result of checking a schema file. `schema` (compact JSON) and `recordName` are set when it parsed. */
export interface SchemaCheck {
  readonly problems: readonly CatalogProblem[];
  readonly schema?: string;
  readonly recordName?: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isStringType(t: unknown): boolean {
  return t === 'string' || (isObject(t) && t['type'] === 'string');
}

/**
 * Field names Avro allows that no JavaScript object can hold as data: `__proto__` sets an
 * object's prototype instead of a member, so an event's data could never carry the field and no
 * event of the kind could be published (its encoder sees `{}`). Refused at load, naming the field.
 */
const UNUSABLE_FIELD_NAMES: ReadonlySet<string> = new Set(['__proto__']);

/** Problems of every record field (nested records, in unions, arrays and maps too) whose name is unusable; `at` is the JSON pointer so far. */
function unusableFieldNames(node: unknown, path: string, at: string): CatalogProblem[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => unusableFieldNames(n, path, `${at}/${i}`));
  if (!isObject(node)) return [];
  const out: CatalogProblem[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === 'fields' && Array.isArray(value)) {
      value.forEach((f, i) => {
        if (isObject(f) && typeof f['name'] === 'string' && UNUSABLE_FIELD_NAMES.has(f['name'])) {
          out.push({ path: `${path}#${at}/fields/${i}`, problem: `field name "${f['name']}" cannot be used: a JavaScript object cannot hold it as data (it sets the object's prototype); rename the field` });
        }
      });
    }
    if (typeof value === 'object' && value !== null) out.push(...unusableFieldNames(value, path, `${at}/${key}`));
  }
  return out;
}

/**
 * Checks `text` (the file content) found at `path` (for messages) against `keyFields`.
 * Never throws; every problem is returned.
 */
export function checkSchema(path: string, text: string, keyFields: readonly string[]): SchemaCheck {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { problems: [{ path, problem: `not JSON: ${(err as Error).message}` }] };
  }
  let type: Type;
  try {
    type = avsc.Type.forSchema(json as Schema, { noAnonymousTypes: true });
  } catch (err) {
    return { problems: [{ path, problem: `not a valid Avro schema: ${(err as Error).message}` }] };
  }
  if (!isObject(json) || json['type'] !== 'record' || !(type instanceof avsc.types.RecordType)) {
    return { problems: [{ path, problem: 'the top-level schema must be an Avro record' }] };
  }
  const problems: CatalogProblem[] = [...unusableFieldNames(json, path, '')];
  const fields = Array.isArray(json['fields']) ? (json['fields'] as unknown[]) : [];
  for (const key of keyFields) {
    const field = fields.find((f): f is Record<string, unknown> => isObject(f) && f['name'] === key);
    if (field === undefined) {
      problems.push({ path: `${path}#/fields`, problem: `partition-key field "${key}" is not a field of the record` });
    } else if (!isStringType(field['type'])) {
      problems.push({ path: `${path}#/fields/${key}`, problem: `partition-key field "${key}" must have type "string" (not a union)` });
    } else if ('default' in field) {
      problems.push({ path: `${path}#/fields/${key}`, problem: `partition-key field "${key}" must be required (no default)` });
    }
  }
  return { problems, schema: JSON.stringify(json), recordName: type.name ?? '' };
}
