import { defineConfig } from 'vitest/config';

const stackTests = ['test/integration/**/*.test.ts', 'test/scenarios/**/*.test.ts', 'test/contract/**/*.kafka.test.ts', 'test/contract/**/*.platformatic.test.ts', 'test/contract/**/*.confluent.test.ts', 'test/contract/**/*.pg.test.ts'];
// The one test that stops and starts the shared stack itself: it runs alone, after all others.
const stackRestart = 'test/integration/stack-restart.kafka.test.ts';
const onStack = {
  globalSetup: ['test/helpers/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
  pool: 'forks' as const,
};

// Three projects: `unit` needs nothing running; `integration` runs against the real stack (Kafka,
// schema registry, PostgreSQL), which test/helpers/global-setup.ts brings up or fails the run;
// `stack-restart` restarts that stack, so it waits for the other two (sequence.groupOrder).
export default defineConfig({
  test: {
    reporters: ['default'],
    // Vitest's default for `run` is one worker fewer than the cores: on a 2-core CI machine one,
    // so every file ran after the other. Every core runs files here, integration files too: each
    // uses topics, groups and subjects of its own (uniqueName) and fault tests start a broker of
    // their own (test/helpers/private-broker.ts), so two at once on the shared broker do not meet.
    // Most of an integration file's time is waiting (retry backoffs, rebalances, process starts):
    // the integration files took 746 s with two at once against 1,254 s one after another
    // (2026-12-04, this 2-core machine).
    maxWorkers: '100%',
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/conformance/**/*.test.ts', 'test/http/**/*.test.ts', 'test/contract/**/*.memory.test.ts', 'test/scenarios/**/*.memory.test.ts'],
          testTimeout: 10_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: stackTests,
          exclude: ['test/scenarios/**/*.memory.test.ts', stackRestart],
          ...onStack,
        },
      },
      {
        test: {
          name: 'stack-restart',
          include: [stackRestart],
          ...onStack,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
