/**
 * The partners file is read once at start-up (docs/security.md): an edit while the gateway runs
 * changes nothing until a restart — a key taken out of it still works. An operator who revokes a
 * leaked key by editing the file must not be left believing it is revoked: the gateway logs a
 * warning when the file changes on disk, naming it and what to do (restart). In-memory gateway.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPartnersGateway } from './partners-gateway.js';
import type { PartnersGateway } from './partners-gateway.js';
import { waitFor } from '../helpers/wait.js';

let g: PartnersGateway;
beforeAll(async () => {
  g = await startPartnersGateway(`pfchanged-${Date.now()}`, 'info');
});
afterAll(async () => {
  await g?.close();
});

describe('PARTNERS_FILE edited while running', () => {
  it('is not reloaded (the removed partner still authenticates) and a warning says so', async () => {
    const text = readFileSync(g.setup.file, 'utf8');
    // Take acme out: everything from its entry up to the next one.
    const edited = text.replace(/ {2}- id: acme\n[\s\S]*?(?= {2}- id: )/, '');
    expect(edited).not.toContain('id: acme');
    // One edit: the gateway tells it against the file it loaded, so an edit before its first look is seen too.
    writeFileSync(g.setup.file, edited);
    await waitFor('the change warning', () => g.logs.join('').includes('"msg":"PARTNERS_FILE changed on disk'), 20_000, 100);
    const line = g.logs.join('').split('\n').find((l) => l.includes('"msg":"PARTNERS_FILE changed on disk'))!;
    expect(JSON.parse(line)).toMatchObject({ level: 40, file: g.setup.file });
    // Still the partners loaded at start-up.
    const res = await fetch(`${g.url}/subscriptions`, { headers: { authorization: `Bearer ${g.setup.keys.acme}` } });
    expect(res.status).toBe(200);
  }, 40_000);
});
