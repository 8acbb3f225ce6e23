/** Issue 11's partner rules on the in-memory adapters (the same suite runs on Kafka in test/integration/auth.kafka.test.ts). */
import { authScenarios } from './auth.scenarios.js';

authScenarios('in-memory', () => ({ env: {}, prefix: `authmem${Date.now().toString(36)}` }));
