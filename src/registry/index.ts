/** Schema registry adapters (Confluent REST, in-memory) behind the port in ./port.ts. */
export { compatibilityLevels } from './port.js';
export type { CompatibilityLevel, RegisteredSchema, SchemaRegistry } from './port.js';
export { createMemoryRegistry } from './memory/index.js';
export type { MemoryRegistryOptions } from './memory/index.js';
export { createConfluentRegistry, resolveConfluentOptions } from './confluent/index.js';
export type { ConfluentRegistryOptions } from './confluent/index.js';
