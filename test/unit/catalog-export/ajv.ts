/**
 * Loads ajv 8 (JSON Schema 2020-12 and draft-07 validators) and the official AsyncAPI 3.0 JSON
 * Schema from node_modules at run time. Loaded by name rather than imported, so the type check does
 * not depend on which ajv major version another package hoists: the project's devDependencies must
 * provide `ajv@8` and `@asyncapi/specs`.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export interface ValidateFunction {
  (data: unknown): boolean;
  errors?: readonly { instancePath: string; message?: string; keyword: string }[] | null;
}

export interface Validator {
  compile(schema: object): ValidateFunction;
}

type AjvClass = new (opts: Record<string, unknown>) => Validator;

function ajvClass(path: string): AjvClass {
  const mod = require(path) as { default?: AjvClass } & AjvClass;
  return mod.default ?? mod;
}

/** ajv for JSON Schema 2020-12: strict (unknown keywords are errors), all errors, formats as annotations only. */
export function ajv2020(): Validator {
  const Ajv2020 = ajvClass('ajv/dist/2020');
  return new Ajv2020({ strict: true, allErrors: true, validateFormats: false });
}

/** ajv for draft-07 (the AsyncAPI 3.0 JSON Schema's dialect). Not strict: the official schema uses annotation keywords ajv does not know. */
export function ajvDraft7(): Validator {
  const Ajv = ajvClass('ajv');
  return new Ajv({ strict: false, allErrors: true, validateFormats: false });
}

/** The official AsyncAPI 3.0.0 JSON Schema (self-contained variant, local `#/definitions` refs). */
export function asyncApi300Schema(): object {
  const specs = require('@asyncapi/specs') as { schemasWithoutId?: Record<string, object>; schemas: Record<string, object> };
  const schema = specs.schemasWithoutId?.['3.0.0'] ?? specs.schemas['3.0.0'];
  if (schema === undefined) throw new Error('@asyncapi/specs has no 3.0.0 schema');
  return schema;
}

/** One line per ajv error, for assertion messages. */
export function errorsOf(v: ValidateFunction): string {
  return (v.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.keyword}: ${e.message ?? ''}`).join('\n');
}
