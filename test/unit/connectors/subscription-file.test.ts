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
});
