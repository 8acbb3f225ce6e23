/**
 * What a problem answer reflects of the request (RFC 9457 `instance`, and the 404's `detail`), on a
 * real gateway (in-memory adapters): the path only — a query carrying a token (`?access_token=`) is
 * never echoed —, at most MAX_INSTANCE_CHARS characters however long the request line, and every
 * character that is not a path character percent-encoded (Node refuses controls and octets ≥ 0x80
 * in a request line, but lets `<>"{|}\\^` and backquote through).
 * Before, `instance` was the whole request target and the 404's detail the whole path: a 15 KiB
 * path came back twice, and a token in the query came back in the body.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_INSTANCE_CHARS, problemInstance } from '../../src/http/api/errors.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw.close();
});

/** Sends `target` as the request line's target, byte for byte (Latin-1), and returns the answer's status and body. */
function raw(target: Buffer | string): Promise<{ status: number; body: string }> {
  const port = Number(new URL(gw.url).port);
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', reject);
    s.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
    s.end(Buffer.concat([Buffer.from('GET '), Buffer.isBuffer(target) ? target : Buffer.from(target, 'latin1'), Buffer.from(' HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')]));
  });
}

describe('the problem instance', () => {
  it('is the path without the query: a token in the query is not echoed (instance nor detail)', async () => {
    const res = await fetch(`${gw.url}/nope?access_token=eyJhbGciOiJFUzI1NiJ9.c2VjcmV0.c2ln&x=1`);
    expect(res.status).toBe(404);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ code: 'CEG_NOT_FOUND', instance: '/nope', detail: 'no route GET /nope' });
    expect(text).not.toContain('access_token');
    expect(text).not.toContain('c2VjcmV0');
  });

  it(`a long path is cut to ${MAX_INSTANCE_CHARS} characters in instance and detail: the answer stays small`, async () => {
    const path = `/${'a'.repeat(15_000)}`;
    const res = await fetch(`${gw.url}${path}`);
    expect(res.status).toBe(404);
    const text = await res.text();
    const p = JSON.parse(text) as { instance: string; detail: string };
    expect(p.instance).toBe(path.slice(0, MAX_INSTANCE_CHARS));
    expect(p.detail).toBe(`no route GET ${path.slice(0, MAX_INSTANCE_CHARS)}`);
    expect(text.length).toBeLessThan(2 * MAX_INSTANCE_CHARS + 400);
  });

  it('characters Node lets through that are not URI characters (<>"{|}\\^`) come back percent-encoded, never raw; octets it refuses (controls, non-ASCII) get its 400 without them', async () => {
    const odd = await raw('/n<s>"{|}\\^`');
    expect(odd.status).toBe(404);
    const p = JSON.parse(odd.body) as { instance: string; detail: string };
    expect(p.instance).toBe('/n%3Cs%3E%22%7B%7C%7D%5C%5E%60');
    expect(p.detail).toBe('no route GET /n%3Cs%3E%22%7B%7C%7D%5C%5E%60');
    expect(odd.body).not.toMatch(/[<>|^`]/);
    for (const octets of [Buffer.from('/a\x01b', 'latin1'), Buffer.from([0x2f, 0x6e, 0xe9])]) {
      const refused = await raw(octets);
      expect(refused.status).toBe(400);
      expect(refused.body.includes('\x01') || refused.body.includes('\u00e9')).toBe(false);
    }
  });

  it('builds: path only for absolute-form, "%" kept as sent, never cut inside a triplet it made', () => {
    expect(problemInstance('http://gw.example/subscriptions/x?owner=y')).toBe('/subscriptions/x');
    expect(problemInstance('/subscriptions/%ZZ')).toBe('/subscriptions/%ZZ');
    expect(problemInstance('/a#frag')).toBe('/a');
    const cut = problemInstance(`/${'b'.repeat(MAX_INSTANCE_CHARS - 3)}\u00e9`);
    expect(cut).toBe(`/${'b'.repeat(MAX_INSTANCE_CHARS - 3)}`);
  });
});
