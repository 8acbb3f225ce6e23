export { buildChain, chainSize, renderChain } from './tree.js';
export type { ChainNode, LocatedEvent } from './tree.js';
export { readChain } from './read.js';
export type { ChainRead, InvalidChainRecord, ReadChainOptions } from './read.js';
