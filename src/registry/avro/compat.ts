/**
 * Avro compatibility checks in Confluent's terms, on avsc's schema resolution.
 * BACKWARD: the new schema reads data written with the old one; FORWARD: the old reads the new;
 * FULL: both. Non-transitive levels compare with the latest version only, transitive ones with
 * every earlier version; NONE checks nothing.
 * Spec: Confluent Schema Registry docs, "Schema Evolution and Compatibility"; Avro 1.11 §"Schema Resolution".
 * Note: resolution works on the underlying types (logical-type attributes such as a decimal's scale
 * are not compared), as avsc resolves them.
 */
import avsc from 'avsc';
import type { Schema, Type } from 'avsc';
import { GatewayError } from '../../core/errors.js';
import type { CompatibilityLevel } from '../port.js';

/**
 * Parses Avro schema text for registry use.
 * Errors: GatewayError CEG_SCHEMA_INVALID (retriable: false) when it is not JSON or not valid Avro.
 */
export function parseAvroSchema(text: string): Type {
  try {
    return avsc.Type.forSchema(JSON.parse(text) as Schema, { wrapUnions: true });
  } catch (err) {
    throw new GatewayError('CEG_SCHEMA_INVALID', `not a valid Avro schema: ${(err as Error).message}`, {
      retriable: false,
      cause: err,
    });
  }
}

function canRead(reader: Type, writer: Type): string | undefined {
  try {
    reader.createResolver(writer);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * Problems that make `candidate` incompatible with `previous` (oldest first) under `level`; [] when compatible.
 */
export function compatibilityProblems(candidate: Type, previous: readonly { readonly version: number; readonly type: Type }[], level: CompatibilityLevel): string[] {
  if (level === 'NONE' || previous.length === 0) return [];
  const transitive = level.endsWith('_TRANSITIVE');
  const against = transitive ? previous : previous.slice(-1);
  const backward = level.startsWith('BACKWARD') || level.startsWith('FULL');
  const forward = level.startsWith('FORWARD') || level.startsWith('FULL');
  const problems: string[] = [];
  for (const p of against) {
    if (backward) {
      const why = canRead(candidate, p.type);
      if (why !== undefined) problems.push(`new schema cannot read version ${p.version} (BACKWARD): ${why}`);
    }
    if (forward) {
      const why = canRead(p.type, candidate);
      if (why !== undefined) problems.push(`version ${p.version} cannot read the new schema (FORWARD): ${why}`);
    }
  }
  return problems;
}
