/**
 * JSON Schema (draft 2020-12) of a kind's data in natural JSON — the shape partners send over HTTP
 * and handlers receive — built from the same shape model as the generated TypeScript types.
 * Records refuse unknown members (`additionalProperties: false`, like the strict ingress); members
 * with a default or a null branch are optional. Logical types carry a `pattern` that checks the
 * text form without format assertion; `format` is added as an annotation where one exists.
 * The schemas describe the canonical form: `["null", T]` as the bare value or null, other unions
 * as `{"<full branch name>": value}` (the ingress also accepts the Avro JSON wrapper on nullable
 * fields and unwrapped values of other unions; those lenient inputs are not advertised).
 * Spec: JSON Schema 2020-12 (Core §8.2.4 `$defs`, Validation §6); Avro 1.11 §"Logical Types";
 * RFC 3339 §5.6; RFC 4648 §4; DESIGN "HTTP front door" (validates the data against the schema).
 */
import type { JsonValue } from '../../envelope/types.js';
import { payloadShape } from '../generate/index.js';
import type { RecordShape, Shape } from '../generate/index.js';
import type { EventKind } from '../../catalog/index.js';

/** `$schema` of every exported JSON Schema. */
export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** A JSON Schema document or subschema (plain JSON). */
export type JsonSchema = { readonly [key: string]: JsonValue };

const MAX_SAFE = 9007199254740991;
const FLOAT_MAX = 3.4028234663852886e38;
const INT_MIN = -2147483648;
const INT_MAX = 2147483647;
const B64 = '[A-Za-z0-9+/]';
const BASE64_PATTERN = `^(?:${B64}{4})*(?:${B64}{2}==|${B64}{3}=)?$`;
const LONG_STRING_PATTERN = '^-?(?:0|[1-9][0-9]{0,18})$';
const DATE_TIME_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})$';
const DATE_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}$';
const TIME_PATTERN = '^[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?$';
const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/** Exact base64 text of `size` bytes: full quads, then the padded remainder. */
function fixedPattern(size: number): string {
  const quads = Math.floor(size / 3);
  const rest = size % 3;
  const tail = rest === 0 ? '' : rest === 1 ? `${B64}{2}==` : `${B64}{3}=`;
  return `^(?:${B64}{4}){${quads}}${tail}$`;
}

/**
 * Decimal text the codec accepts: optional `-`, digits, optional `.` and 1…scale fraction digits,
 * at most `precision` significant digits once the fraction is padded to the scale (codec/data
 * `parseDecimal`): non-zero integer part ≤ precision − scale digits after leading zeros.
 */
function decimalPattern(precision: number, scale: number): string {
  const intDigits = precision - scale;
  const integer = intDigits >= 1 ? `(?:0*[1-9][0-9]{0,${intDigits - 1}}|0+)` : '0+';
  const fraction = scale > 0 ? `(?:\\.[0-9]{1,${scale}})?` : '';
  return `^-?${integer}${fraction}$`;
}

class Builder {
  readonly defs = new Map<string, JsonSchema>();
  readonly #pending = new Set<RecordShape>();

  /** `refBase`: JSON pointer (with `#`) of the schema's root in the enclosing document; `#` when standalone. */
  constructor(
    readonly root: RecordShape,
    readonly refBase: string,
  ) {}

  of(s: Shape): JsonSchema {
    switch (s.kind) {
      case 'null':
        return { type: 'null' };
      case 'boolean':
        return { type: 'boolean' };
      case 'int':
        return { type: 'integer', minimum: INT_MIN, maximum: INT_MAX };
      case 'long':
        return {
          description: 'Avro long: a JSON number when a safe integer, a decimal string beyond ±(2^53 − 1).',
          anyOf: [
            { type: 'integer', minimum: -MAX_SAFE, maximum: MAX_SAFE },
            { type: 'string', pattern: LONG_STRING_PATTERN },
          ],
        };
      case 'float':
      case 'double':
        return {
          anyOf: [
            s.kind === 'float' ? { type: 'number', minimum: -FLOAT_MAX, maximum: FLOAT_MAX } : { type: 'number' },
            { enum: ['NaN', 'Infinity', '-Infinity'] },
          ],
        };
      case 'string':
        return { type: 'string' };
      case 'bytes':
        return { type: 'string', contentEncoding: 'base64', pattern: BASE64_PATTERN };
      case 'fixed':
        return { type: 'string', contentEncoding: 'base64', pattern: fixedPattern(s.size), description: `Avro fixed ${s.fullName}: base64 of exactly ${s.size} bytes.` };
      case 'enum':
        return { type: 'string', enum: [...s.symbols], description: `Avro enum ${s.fullName}.` };
      case 'timestamp-millis':
      case 'timestamp-micros':
        return { type: 'string', format: 'date-time', pattern: DATE_TIME_PATTERN, description: `RFC 3339 date-time with an offset; ${s.kind === 'timestamp-millis' ? 'millisecond' : 'microsecond'} precision at most.` };
      case 'date':
        return { type: 'string', format: 'date', pattern: DATE_PATTERN };
      case 'time-millis':
      case 'time-micros':
        return { type: 'string', pattern: TIME_PATTERN, description: `Time of day; ${s.kind === 'time-millis' ? 'millisecond' : 'microsecond'} precision at most.` };
      case 'uuid':
        return { type: 'string', format: 'uuid', pattern: UUID_PATTERN };
      case 'decimal':
        return { type: 'string', pattern: decimalPattern(s.precision, s.scale), description: `Decimal, precision ${s.precision}, scale ${s.scale}, as a string, e.g. "${(0).toFixed(s.scale)}".` };
      case 'array':
        return { type: 'array', items: this.of(s.items) };
      case 'map':
        return { type: 'object', additionalProperties: this.of(s.values) };
      case 'nullable': {
        const inner = this.of(s.value);
        return s.nullable ? { anyOf: [inner, { type: 'null' }] } : inner;
      }
      case 'union': {
        const branches: JsonSchema[] = s.branches.map((b) => ({
          type: 'object',
          properties: { [b.name]: this.of(b.shape) },
          required: [b.name],
          additionalProperties: false,
        }));
        if (s.nullable) branches.push({ type: 'null' });
        return { description: `Exactly one of ${s.branches.map((b) => `{"${b.name}": …}`).join(', ')}${s.nullable ? ', or null' : ''}.`, anyOf: branches };
      }
      case 'record':
        return this.ref(s);
    }
  }

  ref(r: RecordShape): JsonSchema {
    if (r === this.root) return { $ref: this.refBase };
    if (!this.defs.has(r.fullName) && !this.#pending.has(r)) {
      this.#pending.add(r);
      const body = this.record(r);
      this.#pending.delete(r);
      this.defs.set(r.fullName, body);
    }
    return { $ref: `${this.refBase === '#' ? '#' : this.refBase}/$defs/${r.fullName.replaceAll('~', '~0').replaceAll('/', '~1')}` };
  }

  record(r: RecordShape): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const f of r.fields) {
      const base = this.of(f.shape);
      const annotated: Record<string, JsonValue> = { ...base };
      const note = base['description'];
      if (f.doc !== undefined) annotated['description'] = typeof note === 'string' ? `${f.doc} ${note}` : f.doc;
      if (f.default !== undefined) annotated['default'] = f.default;
      properties[f.name] = annotated;
      if (!f.optional) required.push(f.name);
    }
    return {
      type: 'object',
      ...(r.doc === undefined ? {} : { description: r.doc }),
      properties,
      required,
      additionalProperties: false,
    };
  }
}

/** Options of {@link naturalJsonSchema}. */
export interface JsonSchemaOptions {
  /** Absolute URL recorded as `$id` (e.g. `<public base>/schemas/json/<eventId>.json`); omitted when undefined. */
  readonly id?: string;
  /**
   * Where the schema sits when embedded in another document, as a JSON pointer with `#` (e.g.
   * `#/components/schemas/x/schema`): local `$ref`s are written relative to the enclosing document,
   * as AsyncAPI tools resolve them. Default `#` (a standalone document).
   */
  readonly refBase?: string;
}

/**
 * The JSON Schema (2020-12) of `kind`'s data in natural JSON. Deterministic: properties in schema
 * field order, `$defs` in first-use order (named records other than the root).
 * Errors: GatewayError CEG_SCHEMA_INVALID (retriable: false) when the kind's schema is not valid
 *   Avro (never for a loaded catalog).
 * Spec: JSON Schema 2020-12; bus spec X2 (JSON Schema per payload for subscribers in other languages).
 */
export function naturalJsonSchema(kind: EventKind, opts: JsonSchemaOptions = {}): JsonSchema {
  const { root } = payloadShape(kind.schema);
  const b = new Builder(root, opts.refBase ?? '#');
  const { description: recordDoc, ...body } = b.record(root);
  const about = `${kind.description} Data of event type ${kind.eventId} (Avro record ${kind.recordName}) in natural JSON.`;
  return {
    $schema: JSON_SCHEMA_DIALECT,
    ...(opts.id === undefined ? {} : { $id: opts.id }),
    title: kind.name,
    description: typeof recordDoc === 'string' ? `${about} ${recordDoc}` : about,
    ...body,
    ...(b.defs.size === 0 ? {} : { $defs: Object.fromEntries(b.defs) }),
  };
}
