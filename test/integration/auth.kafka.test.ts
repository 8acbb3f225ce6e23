/**
 * Issue 11 "done when" on the real stack (Kafka + schema registry): the partner suite of
 * test/http/auth.scenarios.ts with this run's own topics, so end offsets count only our records.
 */
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { authScenarios } from '../http/auth.scenarios.js';

authScenarios('Kafka', () => {
  const s = stackEnv();
  return { env: { KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl }, prefix: uniqueName('auth').replace(/-/g, '') };
});
