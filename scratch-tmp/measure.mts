import { createKafkaTransport, createPlatformaticTransport } from '/work/wt-pull/src/transport/index.js';
const brokers = ['127.0.0.1:39092'];
for (const kind of ['kafkajs', 'platformatic'] as const) {
  const t = kind === 'kafkajs' ? createKafkaTransport({ brokers, clientId: 'pull-measure' }) : createPlatformaticTransport({ brokers, clientId: 'pull-measure' } as never);
  const topic = `pullmeasure.${Date.now()}.${kind}`;
  await t.ensureTopics([{ name: topic, partitions: 3, retentionMs: -1, cleanupPolicy: 'delete' }]);
  await t.produce(topic, Array.from({ length: 30 }, (_, i) => ({ key: new TextEncoder().encode(`k${i}`), value: new TextEncoder().encode('v'), headers: [] })));
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    let n = 0;
    const r = await t.read({ topics: [topic], from: { kind: 'positions', positions: [0, 1, 2].map((p) => ({ topic, partition: p, offset: 0n })) }, untilEnd: true }, async () => { n++; });
    await r.done;
    const t1 = performance.now();
    const e = await t.endOffsets(topic);
    const t2 = performance.now();
    await t.committedOffsets('pullmeasure-g', topic);
    const t3 = performance.now();
    console.log(kind, 'read', n, 'records in', Math.round(t1 - t0), 'ms; endOffsets', Math.round(t2 - t1), 'ms; committed', Math.round(t3-t2), 'ms', e.length);
  }
  await t.close();
}
process.exit(0);
