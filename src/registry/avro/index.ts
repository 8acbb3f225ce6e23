/** Avro helpers of the registry adapters (schema parsing, compatibility checks). */
export { compatibilityProblems, parseAvroSchema } from './compat.js';
