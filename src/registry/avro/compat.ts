/**
 * Avro schema validation and compatibility checks in Confluent's terms.
 * BACKWARD: the new schema reads data written with an earlier one (reader = new, writer = old);
 * FORWARD: earlier schemas read data written with the new one; FULL: both. Plain levels compare
 * with the latest version only, `_TRANSITIVE` ones with every earlier version; NONE checks nothing.
 * Resolution follows the Avro specification as Avro Java applies it (see ./resolution.ts), not
 * avsc's resolver (which, for one, compares names with their namespace).
 * Spec: Confluent Schema Registry docs, "Schema Evolution and Compatibility" (levels);
 * Avro 1.11 specification §"Schema Declaration", §"Schema Resolution".
 */
import avsc from 'avsc';
import type { Schema } from 'avsc';
import { GatewayError } from '../../core/errors.js';
import type { CompatibilityLevel } from '../port.js';
import { defaultProblems } from './defaults.js';
import { explainIssue } from './explain.js';
import type { CheckDirection } from './explain.js';
import { buildAvroModel } from './model.js';
import type { AvroNode, SchemaProblem } from './model.js';
import { resolutionIssues } from './resolution.js';
import type { IssueKind } from './resolution.js';

/** A schema that passed {@link analyzeAvroSchema}: its text, JSON and resolved graph. */
export interface AvroSchema {
  readonly text: string;
  readonly json: unknown;
  readonly root: AvroNode;
}

/** Result of {@link analyzeAvroSchema}: `schema` is set exactly when `problems` is empty. */
export interface SchemaAnalysis {
  readonly schema?: AvroSchema;
  readonly problems: readonly SchemaProblem[];
}

/**
 * Validates Avro schema text: JSON; names, namespaces and aliases; duplicate fields, types and
 * enum symbols; unknown type references; enum default; fixed size; decimal precision and scale;
 * union branches; every field default (a union default must match the first branch); and
 * acceptance by avsc (the encoder this project uses). Every problem carries a field path. A text
 * starting with a byte-order mark is refused as such (`/`), not stripped: it would be registered
 * and loaded with it.
 * Never throws.
 * Spec: Avro 1.11 §"Schema Declaration" (names, records and field defaults, enums, unions, fixed),
 * §"Logical Types".
 */
export function analyzeAvroSchema(text: string): SchemaAnalysis {
  // RFC 8259 §8.1 lets a parser ignore a BOM, but the text is registered and loaded as it is, and
  // JSON.parse (like Avro Java's parser given a string) refuses it: say what it is.
  if (text.startsWith('\uFEFF')) return { problems: [{ path: '/', message: 'starts with a UTF-8 byte-order mark (U+FEFF): save the file as UTF-8 without BOM' }] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { problems: [{ path: '/', message: `not JSON: ${(err as Error).message}` }] };
  }
  const model = buildAvroModel(json);
  const problems: SchemaProblem[] = [...model.problems];
  if (problems.length === 0) problems.push(...defaultProblems(model.root));
  if (problems.length === 0) {
    try {
      avsc.Type.forSchema(json as Schema, { wrapUnions: true });
    } catch (err) {
      problems.push({ path: '/', message: `avsc refuses the schema: ${(err as Error).message}` });
    }
  }
  return problems.length > 0 ? { problems } : { problems, schema: Object.freeze({ text, json, root: model.root }) };
}

/**
 * {@link analyzeAvroSchema}, throwing on the first problems.
 * Errors: GatewayError CEG_SCHEMA_INVALID (retriable: false), `details.problems` = every
 *   `{ path, message }`, `details.field` = the first path.
 */
export function parseAvro(text: string): AvroSchema {
  const a = analyzeAvroSchema(text);
  if (a.schema !== undefined) return a.schema;
  const first = a.problems[0];
  throw new GatewayError('CEG_SCHEMA_INVALID', `not a valid Avro schema: ${a.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, {
    retriable: false,
    details: { field: first?.path ?? '/', problems: a.problems },
  });
}

/** One earlier version a candidate is compared with. `label` names it in messages (default `version <n>`). */
export interface PreviousSchema {
  readonly version: number;
  readonly schema: string | AvroSchema;
  readonly label?: string;
}

/** One incompatibility between the candidate and an earlier version. */
export interface CompatibilityFinding {
  /** The earlier version's number and label. */
  readonly version: number;
  readonly label: string;
  /** BACKWARD: the candidate cannot read that version's data; FORWARD: that version cannot read the candidate's. */
  readonly direction: CheckDirection;
  readonly kind: IssueKind;
  /** Field path, e.g. `/fields/price`; `/` for the record itself. */
  readonly path: string;
  /** The one-line explanation (path, old vs new, who breaks, what would be compatible). */
  readonly message: string;
  /** true when a schema registry (Avro Java) would accept the change although the spec does not. */
  readonly registryAccepts: boolean;
}

function asSchema(s: string | AvroSchema): AvroSchema {
  return typeof s === 'string' ? parseAvro(s) : s;
}

/** Which earlier versions a level compares with, and in which directions. */
export function levelPlan(level: CompatibilityLevel): { readonly transitive: boolean; readonly directions: readonly CheckDirection[] } {
  const transitive = level.endsWith('_TRANSITIVE');
  if (level === 'NONE') return { transitive: false, directions: [] };
  if (level.startsWith('BACKWARD')) return { transitive, directions: ['BACKWARD'] };
  if (level.startsWith('FORWARD')) return { transitive, directions: ['FORWARD'] };
  return { transitive, directions: ['BACKWARD', 'FORWARD'] };
}

/**
 * Every incompatibility of `candidate` with `previous` (oldest first) under `level`; [] when
 * compatible. Plain levels compare with the last element of `previous` only.
 * Errors: GatewayError CEG_SCHEMA_INVALID (retriable: false) when a schema text is not valid Avro.
 * Spec: Confluent "Schema Evolution and Compatibility" (the seven levels); Avro 1.11 §"Schema Resolution".
 */
export function checkCompatibility(candidate: string | AvroSchema, previous: readonly PreviousSchema[], level: CompatibilityLevel): CompatibilityFinding[] {
  const plan = levelPlan(level);
  if (plan.directions.length === 0 || previous.length === 0) return [];
  const cand = asSchema(candidate);
  const against = plan.transitive ? previous : previous.slice(-1);
  const findings: CompatibilityFinding[] = [];
  for (const p of against) {
    const prev = asSchema(p.schema);
    const label = p.label ?? `version ${p.version}`;
    for (const direction of plan.directions) {
      const issues = direction === 'BACKWARD' ? resolutionIssues(cand.root, prev.root) : resolutionIssues(prev.root, cand.root);
      for (const issue of issues) {
        findings.push(
          Object.freeze({
            version: p.version,
            label,
            direction,
            kind: issue.kind,
            path: issue.path,
            message: explainIssue(issue, { direction, previous: label }),
            registryAccepts: issue.registryAccepts,
          }),
        );
      }
    }
  }
  return findings;
}
