/**
 * A PATCH and the gateway's own state change against another instance's change of the same
 * subscription at that moment (a replay's `done`, a PATCH, a DELETE), on the in-memory transport
 * with two instances' stores on one definitions topic: the change is applied to the newest record
 * and the other one stays (test/helpers/record-race.ts has the cases; the broker runs them in
 * test/integration/subscriptions/record-race.kafka.test.ts).
 */
import { afterEach, beforeEach, describe } from 'vitest';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { Transport } from '../../../../src/transport/index.js';
import { recordRaceCases } from '../../../helpers/record-race.js';
import type { RaceWorld } from '../../../helpers/record-race.js';

let transport: Transport;
const stops: (() => Promise<void>)[] = [];

beforeEach(() => {
  transport = createMemoryTransport();
});

afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await transport.close();
});

describe('a change of a stored subscription as another instance changes it, in memory', () => {
  recordRaceCases((): RaceWorld => ({ definitions: 'rr.subscriptions', transport: () => transport, started: (stop) => void stops.push(stop) }));
});
