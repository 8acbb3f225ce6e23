/**
 * A free TCP port on loopback for a private service (a broker, a registry) that binds it a moment
 * later. Taken below the ephemeral range (Linux 32768–60999), like the stack's own ports
 * (scripts/stack/config.ts): a port the OS handed out for `listen(0)` is an ephemeral one, and the
 * next outgoing connection of any process may take it as its local end before a JVM started
 * seconds later binds it ("Address already in use").
 */
import { createServer } from 'node:net';

/** Ports 20000–32767, clear of the stack's defaults (15432, 18081/18444, 19092–19096). */
const LOW = 20_000;
const HIGH = 32_767;

/** Whether `port` on 127.0.0.1 could be listened on a moment ago. */
export async function isFree(port: number): Promise<boolean> {
  const s = createServer();
  return new Promise<boolean>((resolve) => {
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A port below the ephemeral range that was free a moment ago; the OS's choice after 200 busy tries. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (await isFree(port)) return port;
  }
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
