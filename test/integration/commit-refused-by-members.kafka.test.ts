/**
 * A member-less commit (what a replay's reset sends once DescribeGroups said the group is Empty)
 * that the broker refuses because a member joined in between. Seen under broker load: two replays
 * of one subscription, where the other replay's end let the members start again while this one
 * was between its DescribeGroups and its OffsetCommit, answered 503 with `retriable: false` — the
 * broker's UNKNOWN_MEMBER_ID (both clients call it not retriable) became CEG_BROKER_UNAVAILABLE
 * with the client's `retriable`. The window is a race; here the refusal itself is made on the real
 * broker (a member-less commit sent while a member is in the group, with each client's own call),
 * and what the transports throw for it is asserted: the retriable "group busy" the replay's reset
 * waits on, as for a DescribeGroups that names a member.
 */
import { Admin } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toProblem } from '../../src/codec/http/index.js';
import { isGatewayError } from '../../src/core/errors.js';
import { commitOffsetsFailure } from '../../src/transport/commit-failure.js';
import { OffsetCommitter } from '../../src/transport/kafka/commit-offsets.js';
import { fromKafkaError } from '../../src/transport/kafka/errors.js';
import { fromPlatformaticError } from '../../src/transport/platformatic/errors.js';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import type { Consumption, Transport } from '../../src/transport/index.js';
import { transportOn } from '../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

let transport: Transport;
let topic: string;
let group: string;
let member: Consumption;
const brokers = stackEnv().kafkaBrokers;

beforeAll(async () => {
  transport = transportOn({ clientId: 'ce-gateway-it-commit-refused', brokers });
  topic = uniqueName('it-commit-refused');
  group = uniqueName('it-commit-refused-g');
  await transport.ensureTopics([{ name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
  member = await transport.consume({ group, topics: [topic], startFrom: 'earliest' }, () => Promise.resolve());
  await waitFor('one member, Stable', async () => (await transport.groupMembers(group))?.state === 'Stable', 30_000, 100);
});

afterAll(async () => {
  await member?.stop();
  await transport?.close();
});

/** The refusal, as each client throws it for a member-less commit of a group with a member. */
const refusals = {
  kafkajs: async (): Promise<unknown> => {
    const { Kafka, logLevel } = kafkajs();
    const kafka = new Kafka({ clientId: 'ce-gateway-it-commit-refused-kjs', brokers: [...brokers], logLevel: logLevel.NOTHING, retry: { retries: 1 } });
    const admin = kafka.admin();
    await admin.connect();
    const committer = new OffsetCommitter(kafka);
    try {
      return await committer.commit(admin, group, topic, [{ partition: 0, offset: '0' }]).then(() => undefined, (e: unknown) => e);
    } finally {
      await committer.close();
      await admin.disconnect();
    }
  },
  platformatic: async (): Promise<unknown> => {
    const admin = new Admin({ clientId: 'ce-gateway-it-commit-refused-plt', bootstrapBrokers: [...brokers], retries: 1 });
    try {
      return await admin.alterConsumerGroupOffsets({ groupId: group, topics: [{ name: topic, partitionOffsets: [{ partition: 0, offset: 0n }] }] }).then(() => undefined, (e: unknown) => e);
    } finally {
      await admin.close();
    }
  },
};
const mappers = { kafkajs: fromKafkaError, platformatic: fromPlatformaticError };

describe.each(['kafkajs', 'platformatic'] as const)('a member-less commit refused because the group has a member (%s)', (client) => {
  it('is the retriable "group busy" (the reset waits and asks again), never a 503 that says not retriable', async () => {
    const err = await refusals[client]();
    expect(err).toBeInstanceOf(Error);
    const fromClient = (e: unknown) => mappers[client](e, { operation: 'commitOffsets', group, topic });
    // What the transport threw before: the client's mapping alone, CEG_BROKER_UNAVAILABLE not retriable.
    const before = fromClient(err);
    expect({ code: before.code, retriable: before.retriable }).toEqual({ code: 'CEG_BROKER_UNAVAILABLE', retriable: false });
    const thrown = commitOffsetsFailure(err, group, topic, fromClient);
    expect(isGatewayError(thrown, 'CEG_INVALID_OPTIONS') && thrown.retriable).toBe(true);
    expect(thrown.message).toMatch(/joined by a member meanwhile \(the broker refused the member-less commit: (UNKNOWN_MEMBER_ID|ILLEGAL_GENERATION|REBALANCE_IN_PROGRESS)\)/);
    expect(thrown.details).toMatchObject({ group, topic });
    // Over HTTP a retriable answer is 503 with retriable true; the old one was 503 with false.
    expect(toProblem(thrown)).toMatchObject({ status: 503, retriable: true });
  });
});
