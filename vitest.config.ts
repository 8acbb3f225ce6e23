import { configDefaults, defineConfig } from 'vitest/config';

// Files beside unit tests that need the stack: conformance against an SDK's Kafka binding (broker
// and registry) and GET /schemas/ids/{id} on the real registry. On the stack, not in `unit` (which
// needs nothing running: it failed there whenever the stack was down).
const stackFilesBesideUnit = ['test/conformance/kafka-sdk.test.ts', 'test/http/schemas-by-id.test.ts'];
const stackTests = [...stackFilesBesideUnit, 'test/integration/**/*.test.ts', 'test/scenarios/**/*.test.ts', 'test/contract/**/*.kafka.test.ts', 'test/contract/**/*.platformatic.test.ts', 'test/contract/**/*.confluent.test.ts', 'test/contract/**/*.pg.test.ts'];
// Files that run one at a time, after all others (sequence.groupOrder): the one that stops and
// starts the shared stack; those that write to and count records of the shipped catalog's topics
// (trading.*: poison records, end offsets, `--max-events`, subscriptions at `latest`), where two
// at once would see each other's records; and `trace`, which compares the broker's whole topic list.
const serial = [
  'test/integration/stack-restart.kafka.test.ts',
  'test/integration/ingress.kafka.test.ts',
  'test/integration/subscriber-poison.kafka.test.ts',
  'test/integration/subscriber-process.kafka.test.ts',
  'test/integration/connectors.kafka.test.ts',
  'test/integration/t12-foreign-subscriber.test.ts',
  'test/integration/consumer/tail-trace.kafka.test.ts',
  'test/scenarios/bus.kafka.test.ts',
  'test/scenarios/bus.platformatic.test.ts',
  'test/scenarios/t04-t09-processes.test.ts',
  'test/scenarios/t06-redelivery-once.test.ts',
];
const onStack = {
  globalSetup: ['test/helpers/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
  pool: 'forks' as const,
};

// Three projects: `unit` needs nothing running; `integration` runs against the real stack (Kafka,
// schema registry, PostgreSQL), which test/helpers/global-setup.ts brings up or fails the run;
// `integration-serial` (above) waits for the other two and runs its files one after another.
export default defineConfig({
  test: {
    reporters: ['default'],
    // Vitest's default for `run` is one worker fewer than the cores: on a 2-core CI machine one,
    // so every file ran after the other. Every core runs files here, integration files too: each
    // of `integration` uses topics, groups and subjects of its own (a catalog copy with its own
    // topic names, uniqueName) and fault tests start a broker of their own on ports of their
    // worker's own (test/helpers/private-broker.ts), so two at once on the shared broker do not meet.
    // Most of an integration file's time is waiting (retry backoffs, rebalances, process starts):
    // the integration files took 746 s with two at once against 1,254 s one after another
    // (2026-12-04, this 2-core machine).
    maxWorkers: '100%',
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/conformance/**/*.test.ts', 'test/http/**/*.test.ts', 'test/contract/**/*.memory.test.ts', 'test/scenarios/**/*.memory.test.ts'],
          exclude: [...configDefaults.exclude, ...stackFilesBesideUnit],
          testTimeout: 10_000,
          // Unit files share their worker's module cache (no fresh module graph per file): importing
          // src/ again for each of ~300 files was most of this project's time (test/http: collect
          // 511 s → 52 s, whole run 531 s → 241 s, same machine and load, 2026-12-07). These files
          // keep no state between files: each builds its own gateway, prom-client Registry and
          // transport, restores real timers and the environment it changed (afterEach).
          isolate: false,
        },
      },
      {
        test: {
          name: 'integration',
          include: stackTests,
          exclude: ['test/scenarios/**/*.memory.test.ts', ...serial],
          ...onStack,
        },
      },
      {
        test: {
          name: 'integration-serial',
          include: serial,
          ...onStack,
          poolOptions: { forks: { singleFork: true } },
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
