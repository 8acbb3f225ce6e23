import { defineConfig } from 'vitest/config';

// Two projects: `unit` needs nothing running; `integration` runs against the real stack (Kafka,
// schema registry, PostgreSQL), which test/helpers/global-setup.ts brings up or fails the run.
export default defineConfig({
  test: {
    reporters: ['default'],
    // Vitest's default for `run` is one worker fewer than the cores: on a 2-core CI machine one,
    // so the unit files ran one at a time (261 s of the 2026-12-04 CI run). They run first, on
    // every core; the integration project's files then run one after another in a single fork
    // (poolOptions below), as they share the one broker.
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
          include: ['test/integration/**/*.test.ts', 'test/scenarios/**/*.test.ts', 'test/contract/**/*.kafka.test.ts', 'test/contract/**/*.platformatic.test.ts', 'test/contract/**/*.confluent.test.ts', 'test/contract/**/*.pg.test.ts'],
          exclude: ['test/scenarios/**/*.memory.test.ts'],
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          pool: 'forks',
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
