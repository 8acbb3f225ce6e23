import { busScenarios } from './bus.scenarios.js';
import { kafkaHarness } from './harness.js';

/** The same scenarios (T1, T4, T5, T7–T11) with every member on @platformatic/kafka (issue 14). */
busScenarios(() => kafkaHarness('platformatic'));
