/** Connector files of `kind: subscription`: the resource shape with any sink type, secrets from the environment, every problem named. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConnectorText } from '../../../src/connectors/index.js';

const FILE = join('/tmp', 'conn', 'sub.yaml');
const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;

describe('kind: subscription', () => {
  it('a push subscription: group from owner and name, secrets and headers read from the environment', () => {
    const r = parseConnectorText(`kind: subscription\nname: p1\nkinds: [PriceLoadingCompleted]\nordering: none\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [S1], headersFromEnv: { Authorization: TOKEN } }\n`, FILE, { environment: { S1: SECRET, TOKEN: 'Bearer t' } });
    expect(r.ok).toBe(true);
    if (!r.ok || r.definition.kind !== 'subscription') throw new Error('expected a subscription');
    const rt = r.definition.runtime;
    expect(rt).toMatchObject({ group: 'ce-gateway.sub.connectors.p1', owner: 'connectors', ordering: 'none', origin: 'file', state: 'active' });
    expect(rt.delivery).toMatchObject({ mode: 'push', push: { url: 'https://hooks.example/x', secrets: [SECRET], headers: { Authorization: 'Bearer t' }, contentMode: 'binary', data: 'json', handshake: true } });
    expect(r.definition.subscription).toBe('ce-gateway.sub.connectors.p1');
  });

  it('an empty exact filter value is taken as in a stored definition (it matches nothing): a file that started the gateway before the API refused it still does', () => {
    const r = parseConnectorText(`kind: subscription\nname: p3\nkinds: [PriceLoadingCompleted]\nfilters: [{ exact: { subject: "" } }]\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [S1] }\n`, FILE, { environment: { S1: SECRET } });
    expect(r.ok, JSON.stringify(r)).toBe(true);
  });

  it('reports every problem: unset or malformed secrets, a reserved header, an unknown filter attribute, an unknown field', () => {
    const r = parseConnectorText(
      `kind: subscription\nname: p2\nkinds: [PriceLoadingCompleted]\nfilters: [{ exact: { subjet: x } }]\ncolour: blue\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [MISSING], headersFromEnv: { ce-id: TOKEN } }\n`,
      FILE,
      { environment: { TOKEN: 't' } },
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.path).sort()).toEqual(['(root)', 'filters[0].exact.subjet'].sort());
    const r2 = parseConnectorText(`kind: subscription\nname: p2\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [MISSING, BAD], headersFromEnv: { ce-id: TOKEN } }\n`, FILE, { environment: { TOKEN: 't', BAD: 'plain' } });
    expect(r2.ok).toBe(false);
    if (r2.ok) return;
    expect(r2.problems.map((p) => p.path)).toEqual(['delivery.secretsFromEnv[0]', 'delivery.secretsFromEnv[1]', 'delivery.headersFromEnv.ce-id']);
  });

  it('refuses the gateway\'s own credentials in secretsFromEnv and headersFromEnv (they would be sent to the sink); a variable of the sink\'s own is fine', () => {
    const env = { S1: SECRET, KAFKA_SASL_PASSWORD: 'sasl-pw', DATABASE_URL: 'postgres://u:pw@h/db', SUBSCRIPTION_SECRETS_KEY: SECRET, SCHEMA_REGISTRY_URL: 'http://u:pw@r', ACME_TOKEN: 'Bearer a' };
    const r = parseConnectorText(
      `kind: subscription\nname: p4\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [S1, SUBSCRIPTION_SECRETS_KEY], headersFromEnv: { X-Sasl: KAFKA_SASL_PASSWORD, X-Db: database_url, X-Reg: SCHEMA_REGISTRY_URL, X-Pw-File: KAFKA_SASL_PASSWORD_FILE, Authorization: ACME_TOKEN } }\n`,
      FILE,
      { environment: env },
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.path)).toEqual(['delivery.secretsFromEnv[1]', 'delivery.headersFromEnv.X-Sasl', 'delivery.headersFromEnv.X-Db', 'delivery.headersFromEnv.X-Reg', 'delivery.headersFromEnv.X-Pw-File']);
    for (const p of r.problems) expect(p.problem).toMatch(/one of the gateway's own credentials and is never sent to a sink/);
    // No value of the environment appears in a problem.
    expect(JSON.stringify(r.problems)).not.toMatch(/sasl-pw|u:pw/);
    const fine = parseConnectorText(`kind: subscription\nname: p5\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [S1], headersFromEnv: { Authorization: ACME_TOKEN } }\n`, FILE, { environment: env });
    expect(fine.ok, JSON.stringify(fine)).toBe(true);
  });

  it('a disabled subscription file is checked but its variables are not read: unset ones do not stop the start; header names are still checked', () => {
    const off = parseConnectorText(`kind: subscription\nname: p6\nenabled: false\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [UNSET_SECRET], headersFromEnv: { Authorization: UNSET_TOKEN } }\n`, FILE, { environment: {} });
    expect(off.ok, JSON.stringify(off)).toBe(true);
    const badHeader = parseConnectorText(`kind: subscription\nname: p7\nenabled: false\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [UNSET_SECRET], headersFromEnv: { ce-id: UNSET_TOKEN } }\n`, FILE, { environment: {} });
    expect(badHeader.ok).toBe(false);
    if (!badHeader.ok) expect(badHeader.problems.map((p) => p.path)).toEqual(['delivery.headersFromEnv.ce-id']);
    const on = parseConnectorText(`kind: subscription\nname: p8\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [UNSET_SECRET] }\n`, FILE, { environment: {} });
    expect(on.ok).toBe(false);
  });

  it('a push subscription with delivery.batch: defaults filled in, shown in its view; a bad field named', () => {
    const r = parseConnectorText(`kind: subscription\nname: b1\nkinds: [PriceLoadingCompleted]\nordering: none\nconcurrency: 500\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [S1], batch: { maxEvents: 500 } }\n`, FILE, { environment: { S1: SECRET } });
    if (!r.ok || r.definition.kind !== 'subscription') throw new Error(`expected a subscription: ${JSON.stringify(r)}`);
    expect(r.definition.runtime.delivery).toMatchObject({ mode: 'push', push: { concurrency: 500, batch: { maxEvents: 500, maxBytes: 1_048_576, maxDelayMs: 0 } } });
    expect(r.definition.runtime.view?.delivery).toMatchObject({ batch: { maxEvents: 500, maxBytes: 1_048_576, maxDelayMs: 0 } });
    const bad = parseConnectorText(`kind: subscription\nname: b2\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: push, url: "https://hooks.example/x", secretsFromEnv: [S1], batch: { maxEvents: 0, maxDelayMs: 2000 } }\n`, FILE, { environment: { S1: SECRET } });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.problems.map((p) => p.path).sort()).toEqual(['delivery.batch.maxDelayMs', 'delivery.batch.maxEvents']);
  });

  it('a shell-hook sink as a subscription resource', () => {
    const r = parseConnectorText(`kind: subscription\nname: hook\nowner: ops\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: shell-hook, sink: { command: [./h.sh] } }\n`, FILE, { environment: {} });
    expect(r.ok && r.definition.kind === 'subscription' && r.definition.runtime.delivery.mode === 'shell-hook' ? r.definition.runtime.delivery.sink.command : undefined).toEqual([join('/tmp', 'conn', 'h.sh')]);
  });

  it("the view's retry.timeoutMs is the limit that applies: a hook's own timeoutMs, none for a file drop, the webhook's for push", () => {
    const view = (delivery: string, env: Record<string, string> = {}): unknown => {
      const r = parseConnectorText(`kind: subscription\nname: v\nkinds: [PriceLoadingCompleted]\ndelivery: ${delivery}\n`, FILE, { environment: env });
      if (!r.ok || r.definition.kind !== 'subscription') throw new Error(`expected a subscription: ${JSON.stringify(r)}`);
      return r.definition.runtime.view?.retry;
    };
    expect(view('{ mode: shell-hook, sink: { command: [./h.sh], timeoutMs: 90000 } }')).toMatchObject({ timeoutMs: 90_000, maxAttempts: expect.any(Number) });
    expect(view('{ mode: shell-hook, sink: { command: [./h.sh] } }')).toMatchObject({ timeoutMs: 30_000 });
    const drop = view('{ mode: file-drop, sink: { directory: ./out } }') as Record<string, unknown>;
    expect(drop).toMatchObject({ maxAttempts: expect.any(Number) });
    expect(drop).not.toHaveProperty('timeoutMs');
    expect(view('{ mode: push, url: "https://hooks.example/x", secretsFromEnv: [S1] }', { S1: SECRET })).toMatchObject({ timeoutMs: 10_000 });
  });

  it('retry.timeoutMs written for a shell hook or a file drop is a problem naming the limit that applies, not taken silently', () => {
    const problems = (delivery: string): unknown => {
      const r = parseConnectorText(`kind: subscription\nname: v\nkinds: [PriceLoadingCompleted]\nretry: { timeoutMs: 5000 }\ndelivery: ${delivery}\n`, FILE, { environment: {} });
      return r.ok ? [] : r.problems;
    };
    expect(problems('{ mode: shell-hook, sink: { command: [./h.sh] } }')).toEqual([{ file: FILE, path: 'retry.timeoutMs', problem: expect.stringContaining('delivery.sink.timeoutMs') }]);
    expect(problems('{ mode: file-drop, sink: { directory: ./out } }')).toEqual([{ file: FILE, path: 'retry.timeoutMs', problem: expect.stringContaining('no per-attempt deadline') }]);
  });
});
