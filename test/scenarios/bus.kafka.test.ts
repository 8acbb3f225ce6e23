import { busScenarios } from './bus.scenarios.js';
import { kafkaHarness } from './harness.js';

busScenarios(kafkaHarness);
