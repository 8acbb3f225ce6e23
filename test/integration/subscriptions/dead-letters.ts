/** Reads a subscription's dead-letter topic with a raw Kafka consumer (what an operator's tool would do). */
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { rawKafka } from '../consumer/members.js';

/** Dead letters on `<group>.dlq` by CloudEvent id (`ce_id`) → their headers, once every one of `ids` is there (30 s at most). */
export async function readDeadLetters(group: string, ids: readonly unknown[]): Promise<Map<string, Map<string, string>>> {
  const dead = new Map<string, Map<string, string>>();
  const reader = rawKafka().consumer({ groupId: uniqueName('it-dlq-reader') });
  await reader.connect();
  await reader.subscribe({ topics: [`${group}.dlq`], fromBeginning: true });
  await reader.run({
    eachMessage: async ({ message }) => {
      const h = new Map(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
      dead.set(h.get('ce_id') ?? '', h);
    },
  });
  try {
    await waitFor(`${ids.length} dead letters on ${group}.dlq`, () => ids.every((id) => dead.has(String(id))), 30_000, 200);
  } finally {
    await reader.disconnect();
  }
  return dead;
}
