export { createMemoryTransport } from './memory-transport.js';
export type { MemoryTransportOptions } from './memory-transport.js';
