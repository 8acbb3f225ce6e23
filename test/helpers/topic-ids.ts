/** What a topic holds, read back from the broker in tests. */
import type { Transport } from '../../src/transport/port.js';
import { uniqueName } from './stack.js';
import { waitFor } from './wait.js';

/**
 * Every `ce_id` on `topic` (all partitions, from the start), read by a consumer group of its own
 * (`<group>-<unique>`) up to the end offsets taken first. Throws when the topic is not read within 30 s.
 */
export async function idsOnTopic(transport: Transport, topic: string, group = 'ids-read'): Promise<Set<string>> {
  const ends = await transport.endOffsets(topic);
  const total = ends.reduce((n, e) => n + Number(e.offset), 0);
  const ids = new Set<string>();
  let read = 0;
  const c = await transport.consume({ group: uniqueName(group), topics: [topic], startFrom: 'earliest' }, (record) => {
    read++;
    const h = record.headers.find(([name]) => name === 'ce_id');
    if (h !== undefined) ids.add(Buffer.from(h[1]).toString('utf8'));
    return Promise.resolve();
  });
  await waitFor('the whole topic read', () => read >= total, 30_000);
  await c.stop();
  return ids;
}
