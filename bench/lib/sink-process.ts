/**
 * The bench's webhook sink in a process of its own (forked by bench/lib/remote-sink.ts, under the
 * parent's tsx loader): the same sink as {@link startBenchSink}, reporting over IPC, in batches
 * every 10 ms, the first receipt of each `ce-id` as an absolute time (performance.timeOrigin +
 * performance.now(), ms) and the deliveries so far.
 */
import { startBenchSink } from './push-load.js';

let ids: string[] = [];
let at: number[] = [];
let reported = 0;
const sink = await startBenchSink(Number(process.argv[2] ?? 0), (id, receivedAt) => {
  ids.push(id);
  at.push(performance.timeOrigin + receivedAt);
});
const flush = (): void => {
  if (ids.length === 0 && sink.deliveries() === reported) return;
  reported = sink.deliveries();
  process.send?.({ type: 'seen', ids, at, deliveries: reported });
  ids = [];
  at = [];
};
const timer = setInterval(flush, 10);
process.on('message', (m: { type?: string }) => {
  if (m.type !== 'close') return;
  clearInterval(timer);
  flush();
  void sink.close().then(() => process.disconnect());
});
process.on('disconnect', () => process.exit(0));
process.send?.({ type: 'ready', url: sink.url });
