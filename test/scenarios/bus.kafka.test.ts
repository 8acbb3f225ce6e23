import { busScenarios } from './bus.scenarios.js';
import { kafkaHarness } from './harness.js';

// kafkajs explicitly: bus.platformatic.test.ts runs the same on @platformatic/kafka, so CI covers both clients whichever is the default.
busScenarios(() => kafkaHarness('kafkajs'));
