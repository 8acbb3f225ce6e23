// The bench's webhook sink in a process of its own (forked by bench/lib/remote-sink.ts), so it
// answers like a partner's sink instead of sharing an event loop with the load generator and the
// raw consumers. It accepts the validation handshake and every delivery (200, after `delayMs` when
// given) and reports, in batches over IPC, the first receipt of each `ce-id` as an absolute time
// (performance.timeOrigin + performance.now(), ms) that the parent maps onto its own clock.
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { clearInterval, setInterval, setTimeout } from 'node:timers';

const delayMs = Number(process.argv[2] ?? 0);
const seen = new Set();
let ids = [];
let at = [];
let deliveries = 0;
let reported = 0;

const server = createServer((req, res) => {
  if (req.method === 'OPTIONS') {
    res.writeHead(200, { 'webhook-allowed-origin': String(req.headers['webhook-request-origin'] ?? '*') });
    res.end();
    return;
  }
  const id = String(req.headers['ce-id'] ?? '');
  const t = performance.timeOrigin + performance.now();
  req.resume();
  req.on('end', () => {
    const answer = () => {
      deliveries++;
      if (!seen.has(id)) {
        seen.add(id);
        ids.push(id);
        at.push(t);
      }
      res.writeHead(200, { 'content-length': '0' });
      res.end();
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
});
server.keepAliveTimeout = 60_000;

const flush = () => {
  if (ids.length === 0 && deliveries === reported) return;
  process.send?.({ type: 'seen', ids, at, deliveries });
  ids = [];
  at = [];
  reported = deliveries;
};
const timer = setInterval(flush, 10);

process.on('message', (m) => {
  if (m?.type !== 'close') return;
  clearInterval(timer);
  flush();
  server.closeAllConnections();
  server.close(() => process.disconnect?.());
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => {
  process.send?.({ type: 'ready', url: `http://127.0.0.1:${server.address().port}/hook` });
});
