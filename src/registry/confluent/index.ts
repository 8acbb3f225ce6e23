export { createConfluentRegistry } from './confluent-registry.js';
export { resolveConfluentOptions } from './options.js';
export type { ConfluentRegistryOptions, ResolvedConfluentOptions } from './options.js';
