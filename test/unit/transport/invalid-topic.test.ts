/**
 * Kafka's INVALID_TOPIC_EXCEPTION to a CreateTopics is a '.'/'_' collision only when the names do
 * collide: both adapters list the topics again after the refusal and answer CEG_CONFLICT only when
 * an existing topic has the wanted name's collision key (and is another topic); otherwise the
 * broker's refusal comes out as what it is (CEG_INVALID_NAME with the broker's message), never as a
 * collision. The adapters run on their real client classes pointed at a closed port, with only the
 * admin calls replaced (nothing connects).
 */
import { Admin, ProtocolError, ResponseError } from '@platformatic/kafka';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isGatewayError } from '../../../src/core/errors.js';
import { invalidTopicRefusal } from '../../../src/core/topic-name.js';
import { createKafkaTransport, createPlatformaticTransport } from '../../../src/transport/index.js';
import type { TopicSpec, Transport } from '../../../src/transport/port.js';
import { kafkajs } from '../../../src/transport/kafka/kafkajs.js';

const spec = (name: string): TopicSpec => ({ name, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' });
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const caught = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e);

describe('invalidTopicRefusal', () => {
  it("a name whose collision key an existing other topic has: CEG_CONFLICT naming the wanted topic", () => {
    const err = invalidTopicRefusal(['orders_dlq'], ['a', 'orders.dlq'], 'Topic orders_dlq collides with existing topics: orders.dlq');
    expect(err).toMatchObject({ code: 'CEG_CONFLICT', retriable: false });
    expect(err.details.topic).toBe('orders_dlq');
    // The first colliding one of several candidates (an answer that named none).
    expect(invalidTopicRefusal(['x', 'a.b', 'c'], ['a_b'], undefined).details.topic).toBe('a.b');
  });

  it('no collision (none listed, or only the very name): the broker\'s refusal as it is, CEG_INVALID_NAME with its message', () => {
    for (const existing of [[], ['orders.dlq'], ['other_topic', 'orders.dl']]) {
      const cause = new Error('broker');
      const err = invalidTopicRefusal(['orders.dlq'], existing, 'Topic name is illegal, it contains a character other than ASCII alphanumerics', cause);
      expect(err).toMatchObject({ code: 'CEG_INVALID_NAME', retriable: false });
      expect(err.message).toBe("topic orders.dlq cannot be created: the broker refused the name (INVALID_TOPIC_EXCEPTION: Topic name is illegal, it contains a character other than ASCII alphanumerics); no existing topic collides with it in '.' against '_'");
      expect(err.details).toMatchObject({ topic: 'orders.dlq', kafkaType: 'INVALID_TOPIC_EXCEPTION' });
      expect(err.cause).toBe(cause);
      expect(err.message).not.toContain('differs from it only');
    }
    expect(invalidTopicRefusal(['a', 'b'], [], undefined).message).toMatch(/^one of the topics a, b cannot be created: the broker refused the name \(INVALID_TOPIC_EXCEPTION: the request attempted/);
  });
});

describe('the adapters on INVALID_TOPIC_EXCEPTION', () => {
  const open: Transport[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    await Promise.allSettled(open.splice(0).map((t) => t.close()));
  });

  /**
   * The kafkajs adapter with an admin that lists `before` first, then (after the refused create)
   * `after`; its createTopics fails as kafkajs does (KafkaJSAggregateError of KafkaJSCreateTopicError).
   */
  function kafkajsTransport(before: string[], after: string[], named: boolean): { t: Transport; created: string[][] } {
    const k = kafkajs();
    const created: string[][] = [];
    let lists = 0;
    const admin = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      listTopics: async () => (lists++ === 0 ? before : after),
      createTopics: async (o: { topics: { topic: string }[] }) => {
        const names = o.topics.map((x) => x.topic);
        created.push(names);
        const protocol = { type: 'INVALID_TOPIC_EXCEPTION', code: 17, retriable: false, message: 'The request attempted to perform an operation on an invalid topic' };
        // kafkajs's classes take the protocol table's entry (its types say string | Error).
        if (!named) throw new k.KafkaJSProtocolError(protocol as unknown as Error);
        const { KafkaJSCreateTopicError } = k as unknown as { KafkaJSCreateTopicError: new (e: unknown, topic: string) => Error };
        throw new k.KafkaJSAggregateError('Topic creation errors', names.map((n) => new KafkaJSCreateTopicError(protocol, n)));
      },
    };
    const producer = { connect: async () => undefined, disconnect: async () => undefined };
    vi.spyOn(k.Kafka.prototype, 'admin').mockImplementation(() => admin as never);
    vi.spyOn(k.Kafka.prototype, 'producer').mockImplementation(() => producer as never);
    const t = createKafkaTransport({ brokers: ['127.0.0.1:1'], logger: quiet, retries: 0 });
    open.push(t);
    return { t, created };
  }

  /** The @platformatic/kafka adapter, the same way (a ResponseError holding the broker's ProtocolError). */
  function platformaticTransport(before: string[], after: string[]): { t: Transport; created: string[][] } {
    const created: string[][] = [];
    let lists = 0;
    vi.spyOn(Admin.prototype, 'listTopics').mockImplementation((async () => (lists++ === 0 ? before : after)));
    vi.spyOn(Admin.prototype, 'createTopics').mockImplementation((async (o: { topics: string[] }) => {
      created.push(o.topics);
      throw new ResponseError(19, 7, { '/topics/0': [17, 'Topic name is invalid: refused by this broker'] }, {});
    }));
    const t = createPlatformaticTransport({ brokers: ['127.0.0.1:1'], logger: quiet, retries: 0 });
    open.push(t);
    return { t, created };
  }

  it('kafkajs: a topic created meanwhile whose name collides → CEG_CONFLICT; none → the broker\'s refusal (CEG_INVALID_NAME), not a collision', async () => {
    const race = kafkajsTransport(['x'], ['x', 'orders.dlq'], true);
    const conflict = await caught(race.t.ensureTopics([spec('orders_dlq')]));
    expect(race.created).toEqual([['orders_dlq']]);
    expect(isGatewayError(conflict, 'CEG_CONFLICT'), String(conflict)).toBe(true);
    expect(isGatewayError(conflict) && conflict.details.topic).toBe('orders_dlq');
    vi.restoreAllMocks();

    const plain = kafkajsTransport(['x'], ['x', 'orders_dl'], true);
    const refused = await caught(plain.t.ensureTopics([spec('orders_dlq')]));
    expect(isGatewayError(refused, 'CEG_INVALID_NAME'), String(refused)).toBe(true);
    expect(isGatewayError(refused) && refused.retriable).toBe(false);
    expect(String((refused as Error).message)).toContain('INVALID_TOPIC_EXCEPTION: The request attempted to perform an operation on an invalid topic');
    vi.restoreAllMocks();

    // An answer that names no topic: every topic of the request is a candidate.
    const unnamed = kafkajsTransport([], ['a_b'], false);
    const which = await caught(unnamed.t.ensureTopics([spec('zz'), spec('a.b')]));
    expect(isGatewayError(which, 'CEG_CONFLICT') && which.details.topic, String(which)).toBe('a.b');
  });

  it('@platformatic/kafka: a topic created meanwhile whose name collides → CEG_CONFLICT; none → the broker\'s refusal with its own message', async () => {
    expect(new ProtocolError(17).apiId).toBe('INVALID_TOPIC_EXCEPTION');
    const race = platformaticTransport(['x'], ['x', 'orders.dlq']);
    const conflict = await caught(race.t.ensureTopics([spec('orders_dlq')]));
    expect(race.created).toEqual([['orders_dlq']]);
    expect(isGatewayError(conflict, 'CEG_CONFLICT'), String(conflict)).toBe(true);
    vi.restoreAllMocks();

    const plain = platformaticTransport(['x'], ['x']);
    const refused = await caught(plain.t.ensureTopics([spec('orders_dlq')]));
    expect(isGatewayError(refused, 'CEG_INVALID_NAME'), String(refused)).toBe(true);
    expect(isGatewayError(refused) && refused.retriable).toBe(false);
    expect(String((refused as Error).message)).toContain('INVALID_TOPIC_EXCEPTION: Topic name is invalid: refused by this broker');
  });
});
