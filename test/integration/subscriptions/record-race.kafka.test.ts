/**
 * A PATCH and the gateway's own state change against another instance's change of the same
 * subscription at that moment (a replay's `done`, a PATCH, a DELETE), on the real broker: two
 * instances' definitions stores, each with its own Kafka clients, on a definitions topic of this
 * run's own; A's record is held until B's change is read back on B, so it lands after it. The
 * change is applied to the newest record and the other one stays, on both instances and for an
 * instance that reads the topic from the start (test/helpers/record-race.ts has the cases; the
 * in-memory transport runs them in test/unit/bus/subscriptions/record-race.test.ts).
 */
import { afterEach, describe } from 'vitest';
import type { Transport } from '../../../src/transport/index.js';
import { transportOn } from '../../helpers/kafka-client.js';
import { recordRaceCases } from '../../helpers/record-race.js';
import type { RaceWorld } from '../../helpers/record-race.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';

const run = uniqueName('it-record-race');
const transports: Transport[] = [];
const stops: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  await Promise.allSettled(transports.splice(0).map((t) => t.close()));
});

describe('a change of a stored subscription as another instance changes it, on the broker', { timeout: 60_000 }, () => {
  recordRaceCases((): RaceWorld => ({
    definitions: `${run}.subscriptions`,
    transport: (id) => {
      const t = transportOn({ brokers: stackEnv().kafkaBrokers, clientId: `${run}-${id}` });
      transports.push(t);
      return t;
    },
    started: (stop) => void stops.push(stop),
  }));
});
