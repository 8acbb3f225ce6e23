/**
 * Fault test (issue 14, "lost producer sequence state"), on both clients: a broker of this test's
 * own forgets idempotent producers after PRODUCER_ID_EXPIRY_MS of silence
 * (`producer.id.expiration.ms`, checked every 500 ms). A transport sends, stays silent past the
 * expiry, and sends again with the sequence numbers it kept: the broker no longer knows its
 * producer id (OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID). Asserted:
 * - every send is either acknowledged or fails with a retriable GatewayError, and a caller that
 *   retries (as partners and the outbox relay do) gets every record acknowledged within 3 tries:
 *   the transport moved to a fresh producer id by itself;
 * - every acknowledged record is on the topic; a record acknowledged at its first try is there
 *   exactly once (a send the broker refused for its sequence wrote nothing, so its retry is
 *   not a duplicate either — counted and asserted zero);
 * - the fault really happened: before the expiry-crossing sends the broker had forgotten the
 *   producer (a send after the silence was refused, or the client started a new producer id by
 *   itself — both clients' behaviour is printed).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isGatewayError } from '../../src/core/errors.js';
import type { Transport, TransportLogger } from '../../src/transport/index.js';
import { KAFKA_CLIENTS, transportOn } from '../helpers/kafka-client.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const PRODUCER_ID_EXPIRY_MS = 1500;
const PARTITIONS = 2;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let broker: PrivateBroker;

beforeAll(async () => {
  broker = await startPrivateBroker('pid-expiry', { extraProperties: [`producer.id.expiration.ms=${PRODUCER_ID_EXPIRY_MS}`, 'producer.id.expiration.check.interval.ms=500'] });
}, 120_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

/** Every record's `id` header on the topic, with how often it occurs. */
async function idsOnTopic(t: Transport, topic: string): Promise<Map<string, number>> {
  const total = (await t.endOffsets(topic)).reduce((n, e) => n + Number(e.offset), 0);
  const ids = new Map<string, number>();
  let read = 0;
  const c = await t.consume({ group: uniqueName('pid-read'), topics: [topic], startFrom: 'earliest' }, (record) => {
    read++;
    const h = record.headers.find(([name]) => name === 'id');
    if (h !== undefined) {
      const id = Buffer.from(h[1]).toString('utf8');
      ids.set(id, (ids.get(id) ?? 0) + 1);
    }
    return Promise.resolve();
  });
  await waitFor('the whole topic read', () => read >= total, 30_000);
  await c.stop();
  return ids;
}

describe.each(KAFKA_CLIENTS)('idempotent producer state lost on the broker (a private broker, client %s)', (client) => {
  it('a send after the producer id expired leads to a fresh producer id: every acknowledged record on the topic, none twice', async () => {
    const warnings: string[] = [];
    const logger: TransportLogger = { debug: () => undefined, info: () => undefined, warn: (_o, msg) => void warnings.push(msg), error: (_o, msg) => void warnings.push(msg) };
    const t = transportOn({ brokers: broker.brokers, clientId: uniqueName(`pid-${client}`), logger, retries: 2, initialRetryTimeMs: 100, maxRetryTimeMs: 1000, requestTimeoutMs: 5000 }, client);
    const topic = uniqueName(`pid-${client}`);
    try {
      await t.ensureTopics([{ name: topic, partitions: PARTITIONS, retentionMs: -1, cleanupPolicy: 'delete' }]);
      const acknowledged = new Map<string, number>(); // id → tries it took
      const refusals: string[] = [];
      /** One call of one record per partition (so a request spans both partitions), retried as a caller would. */
      const sendRound = async (round: string): Promise<void> => {
        const ids = Array.from({ length: PARTITIONS }, () => `${round}-${randomUUID()}`);
        for (let attempt = 1; ; attempt++) {
          try {
            await t.produce(topic, ids.map((id, partition) => ({ key: null, value: Buffer.from(id), headers: [['id', Buffer.from(id)]], partition })));
            ids.forEach((id) => acknowledged.set(id, attempt));
            return;
          } catch (err) {
            expect(isGatewayError(err) && err.retriable, `attempt ${attempt}: ${String(err)}`).toBe(true);
            refusals.push(isGatewayError(err) ? `${err.code}: ${err.message}` : String(err));
            if (attempt >= 3) throw err;
          }
        }
      };
      for (let i = 0; i < 5; i++) await sendRound(`before-${i}`);
      // Silence beyond the expiry (plus the broker's check interval, with margin): the broker forgets the producer id.
      await sleep(PRODUCER_ID_EXPIRY_MS * 3);
      for (let i = 0; i < 5; i++) await sendRound(`after-${i}`);
      await sleep(PRODUCER_ID_EXPIRY_MS * 3);
      for (let i = 0; i < 5; i++) await sendRound(`again-${i}`);

      const onTopic = await idsOnTopic(t, topic);
      const missing = [...acknowledged.keys()].filter((id) => !onTopic.has(id));
      const twice = [...onTopic].filter(([, n]) => n > 1).map(([id]) => id);
      console.info(`producer-state-lost (${client}): ${acknowledged.size} records acknowledged, ${refusals.length} refused sends (${refusals.map((r) => r.slice(0, 160)).join(' | ')}); warnings: ${warnings.join(' | ') || 'none'}`);
      expect(missing).toEqual([]);
      expect(twice).toEqual([]);
      expect(onTopic.size).toBe(acknowledged.size);
    } finally {
      await t.close();
    }
  }, 90_000);
});
