import { createMemoryRegistry } from '../../src/registry/index.js';
import { registryContract } from './registry.contract.js';

registryContract('memory', () => Promise.resolve(createMemoryRegistry()));
