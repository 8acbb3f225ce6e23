/** Avro helpers of the registry adapters: schema validation, schema resolution, compatibility checks. */
export { analyzeAvroSchema, checkCompatibility, levelPlan, parseAvro } from './compat.js';
export type { AvroSchema, CompatibilityFinding, PreviousSchema, SchemaAnalysis } from './compat.js';
export { defaultValueProblem } from './defaults.js';
export { explainIssue } from './explain.js';
export type { CheckDirection, ExplainContext } from './explain.js';
export { buildAvroModel, describeType } from './model.js';
export type { AvroModel, AvroNode, SchemaProblem } from './model.js';
export { namesMatch, promotes, resolutionIssues } from './resolution.js';
export type { IssueKind, ResolutionIssue } from './resolution.js';
