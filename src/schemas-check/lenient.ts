/**
 * Earlier versions are compared even when they are not valid under today's stricter validation
 * (a registry accepted them once, so data exists): the schema graph is built as well as it parses.
 * Spec: Avro 1.11 §"Schema Resolution" (the writer's schema is whatever the data was written with).
 */
import { analyzeAvroSchema, buildAvroModel } from '../registry/avro/index.js';
import type { AvroSchema } from '../registry/avro/index.js';
import { nestingProblem } from './depth.js';

/**
 * The parsed schema and a note when it is not fully valid; undefined schema (and a note) when it
 * is not even JSON or is nested deeper than MAX_SCHEMA_NESTING (its checks would overflow the stack).
 */
export function parseEarlier(text: string, label: string): { readonly schema?: AvroSchema; readonly note?: string } {
  const tooDeep = nestingProblem(text);
  if (tooDeep !== undefined) return { note: `${label} was not compared: ${tooDeep}` };
  const a = analyzeAvroSchema(text);
  if (a.schema !== undefined) return { schema: a.schema };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { note: `${label} is not JSON and was not compared` };
  }
  const first = a.problems[0];
  return {
    schema: Object.freeze({ text, json, root: buildAvroModel(json).root }),
    note: `${label} is not valid Avro today (${first === undefined ? '' : `${first.path}: ${first.message}`}); compared as far as it parses`,
  };
}
