import { createMemoryIdempotencyStore } from '../../src/bus/idempotency/index.js';
import { idempotencyContract } from './idempotency.contract.js';

idempotencyContract('memory', () => Promise.resolve(createMemoryIdempotencyStore({ maxEntries: 1000 })), {
  durable: false,
  reopen: () => Promise.resolve(createMemoryIdempotencyStore({ maxEntries: 1000 })),
});
