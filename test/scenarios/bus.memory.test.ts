/** T14: the same caller code as bus.kafka.test.ts, on the in-memory transport and registry. */
import { busScenarios } from './bus.scenarios.js';
import { memoryHarness } from './harness.js';

busScenarios(memoryHarness);
