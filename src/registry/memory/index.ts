export { createMemoryRegistry } from './memory-registry.js';
export type { MemoryRegistryOptions } from './memory-registry.js';
