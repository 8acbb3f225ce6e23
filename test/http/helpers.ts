/** HTTP test helpers: posting CloudEvents and reading back what the gateway produced. */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultCatalogDir } from '../../src/catalog/index.js';
import type { Envelope } from '../../src/envelope/types.js';
import type { Transport, TransportRecord } from '../../src/transport/port.js';
import type { EventCodec } from '../../src/codec/event/index.js';

export const STRUCTURED = 'application/cloudevents+json';
export const BATCH = 'application/cloudevents-batch+json';

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

/** Fetches `url` and parses the answer as JSON (an empty body as `{}`). Errors: fetch's; a body that is not JSON (SyntaxError). */
export async function fetchJson(url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** POSTs to `${url}/events` and parses the JSON answer. */
export async function post(url: string, body: unknown, contentType: string = STRUCTURED, headers: Record<string, string> = {}): Promise<Answer> {
  return fetchJson(`${url}/events`, {
    method: 'POST',
    headers: { 'content-type': contentType, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Every record of a topic, read with a fresh group from the earliest offset. */
export async function readTopic(transport: Transport, topic: string): Promise<TransportRecord[]> {
  const ends = await transport.endOffsets(topic);
  const total = ends.reduce((n, e) => n + Number(e.offset), 0);
  if (total === 0) return [];
  const out: TransportRecord[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const c = await transport.consume({ group: `reader-${Math.random().toString(36).slice(2)}`, topics: [topic], startFrom: 'earliest' }, (r) => {
    out.push(r);
    if (out.length === total) done();
    return Promise.resolve();
  });
  await all;
  await c.stop();
  return out;
}

/** The decoded event with this id on a topic. */
export async function findEvent(transport: Transport, codec: EventCodec, topic: string, id: string): Promise<{ record: TransportRecord; env: Envelope } | undefined> {
  for (const record of await readTopic(transport, topic)) {
    const env = await codec.fromRecord(record);
    if (env.attributes.id === id) return { record, env };
  }
  return undefined;
}

/** A copy of the package catalog in a temp dir, with PriceLoadingCompleted declared `publish: false`. */
export function catalogDirWithUnpublishedPrice(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ceg-catalog-'));
  cpSync(defaultCatalogDir(), dir, { recursive: true });
  const file = join(dir, 'catalog.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace('publish: true', 'publish: false'));
  return dir;
}
