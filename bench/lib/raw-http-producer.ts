/**
 * A process that does what the gateway does for a single event minus the gateway's own work, for
 * bench/latency-probe.ts: `POST` any body → the next pre-encoded record (the gateway's own
 * encoding, from {@link rawRecords}) through the raw @platformatic/kafka producer as the adapter
 * drives it (idempotent, acks -1, one send in flight, waiting calls joined) → `202` once the broker
 * acknowledged it. node:http on 127.0.0.1, its own process like the gateway child, so "gateway −
 * this" is the gateway's parsing, validation, encoding, publisher and answer, not HTTP or a second
 * process. Env: KAFKA_BROKERS, SCHEMA_REGISTRY_URL, CATALOG_DIR, PROBE_TOPIC, PROBE_PARTITIONS,
 * DATASCHEMA_BASE_URL, PORT. Prints `ready` on stdout when listening.
 */
import { createServer } from 'node:http';
import { rawRecords } from './events.js';
import { connectRawPlatformatic, platformaticSender } from './raw-platformatic.js';

const env = (name: string): string => {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`raw-http-producer: ${name} is not set`);
  return v;
};

const topic = env('PROBE_TOPIC');
const records = await rawRecords(1800, env('SCHEMA_REGISTRY_URL'), env('DATASCHEMA_BASE_URL'), env('CATALOG_DIR'), topic);
const raw = connectRawPlatformatic(env('KAFKA_BROKERS').split(','), topic, Number(env('PROBE_PARTITIONS')), records);
const send = platformaticSender(raw);
let next = 0;
const server = createServer((req, res) => {
  req.resume();
  req.once('end', () => {
    void send([raw.messages[next++ % raw.messages.length]!]).then((ok) => {
      res.writeHead(ok ? 202 : 503, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
});
server.listen(Number(env('PORT')), '127.0.0.1', () => console.log('ready'));
process.once('SIGTERM', () => {
  server.close();
  void raw.close().finally(() => process.exit(0));
});
