import { createMemoryTransport } from '../../src/transport/index.js';
import { transportContract } from './transport.contract.js';

transportContract('memory', () => Promise.resolve(createMemoryTransport()));
