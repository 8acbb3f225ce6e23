/**
 * Records of an aborted Kafka transaction are never handed on, on either client (read_committed;
 * the platformatic adapter reads record batches itself, src/transport/platformatic/record-batches.ts).
 * A foreign transactional producer (the gateway's own producers are idempotent, not transactional)
 * writes a transaction it aborts, then one it commits, on one partition; a group-less read and a
 * consumer group both see the committed records only, and read past the transaction markers.
 */
import { Producer } from '@platformatic/kafka';
import { afterAll, describe, expect, it } from 'vitest';
import type { Transport, TransportRecord } from '../../../src/transport/index.js';
import { KAFKA_CLIENTS, transportOn } from '../../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

const text = (r: TransportRecord): string => Buffer.from(r.value ?? new Uint8Array()).toString();

describe('aborted transactions are not delivered', () => {
  const brokers = stackEnv().kafkaBrokers;
  const topic = uniqueName('it-aborted-tx');
  const transports: Transport[] = [];
  afterAll(async () => {
    await Promise.allSettled(transports.map((t) => t.close()));
  });

  it('writes an aborted and a committed transaction', async () => {
    const admin = transportOn({ brokers, clientId: uniqueName('tx-admin') });
    transports.push(admin);
    await admin.ensureTopics([{ name: topic, partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
    const producer = new Producer({ clientId: uniqueName('tx-producer'), bootstrapBrokers: [...brokers], idempotent: true, transactionalId: uniqueName('tx'), autocreateTopics: false });
    try {
      const aborted = await producer.beginTransaction();
      await aborted.send({ messages: ['aborted-1', 'aborted-2'].map((v) => ({ topic, partition: 0, value: Buffer.from(v) })) });
      await aborted.abort();
      const committed = await producer.beginTransaction();
      await committed.send({ messages: ['committed-1', 'committed-2'].map((v) => ({ topic, partition: 0, value: Buffer.from(v) })) });
      await committed.commit();
    } finally {
      await producer.close();
    }
    // Two data batches and two markers: 6 offsets.
    expect((await admin.endOffsets(topic))[0]?.offset).toBe(6n);
  });

  for (const client of KAFKA_CLIENTS) {
    it(`${client}: a group-less read and a consumer group see the committed records only`, async () => {
      const t = transportOn({ brokers, clientId: uniqueName(`tx-${client}`) }, client);
      transports.push(t);
      const read: string[] = [];
      const r = await t.read({ topics: [topic], from: { kind: 'earliest' }, untilEnd: true }, (rec) => {
        read.push(text(rec));
        return Promise.resolve();
      });
      await r.done;
      expect(read).toEqual(['committed-1', 'committed-2']);

      const consumed: string[] = [];
      const c = await t.consume({ group: uniqueName(`tx-group-${client}`), topics: [topic], startFrom: 'earliest' }, (rec) => {
        consumed.push(text(rec));
        return Promise.resolve();
      });
      try {
        await waitFor('the committed records', () => consumed.length >= 2);
        // A moment for anything that should not come (the aborted records) to arrive.
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(consumed).toEqual(['committed-1', 'committed-2']);
      } finally {
        await c.stop();
      }
    });
  }
});
