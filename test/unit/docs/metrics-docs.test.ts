/**
 * docs/observability.md's metric families are a contract for dashboards and alerts: every family
 * the gateway registers is documented there, every `ce_gateway_*` name any document mentions is
 * one the gateway registers, and each row of its tables gives the family's real type and labels.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from '../../../src/observability/index.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const observability = read('docs/observability.md');
const documents = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** `ce_gateway_publish_{enqueued,failed}_total` → both names; a `{label,…}` selector after a name is left out. */
function namesIn(text: string): string[] {
  const names = new Set<string>();
  for (const [token] of text.matchAll(/ce_gateway_[a-z_]*(?:\{[a-z_,]+\}[a-z_]*)?/g)) {
    const brace = /^(ce_gateway_[a-z_]*)\{([a-z_,]+)\}([a-z_]*)$/.exec(token);
    if (brace === null) names.add(token);
    else if (brace[1]!.endsWith('_')) for (const part of brace[2]!.split(',')) names.add(`${brace[1]!}${part}${brace[3]!}`);
    else names.add(brace[1]!); // name{label,…}: a selector
  }
  return [...names];
}

const registry = new Registry();
GatewayMetrics.for(registry, { defaultMetrics: false });
/** prom-client's metric objects carry these (not in its typings of getMetricsAsArray). */
interface Family { readonly name: string; readonly type: string; readonly labelNames: readonly string[] }
const registered = new Map(registry.getMetricsAsArray().map((m) => m as unknown as Family).map((m) => [m.name, m]));

describe('metric names in the documentation', () => {
  it('the gateway registers families (sanity)', () => {
    expect(registered.size).toBeGreaterThan(30);
  });

  it.each([...registered.keys()].map((n) => [n]))('%s is documented in docs/observability.md', (name) => {
    expect(namesIn(observability)).toContain(name);
  });

  it.each(documents.map((d) => [d]))('every ce_gateway_* name %s mentions is a registered family', (doc) => {
    const unknown = namesIn(read(doc)).filter((n) => !registered.has(n));
    expect(unknown).toEqual([]);
  });

  const rows = [...observability.matchAll(/^\| `(ce_gateway_[a-z_]+)` \| (counter|gauge|histogram) \| ([^|]*) \|/gm)].map((m) => ({
    name: m[1]!,
    type: m[2]!,
    labels: [...m[3]!.matchAll(/`([a-z_]+)`/g)].map((l) => l[1]!).sort(),
  }));
  it('the tables have rows', () => {
    expect(rows.length).toBeGreaterThan(20);
  });
  it.each(rows.map((r) => [r.name, r.type, r.labels.join(',') || '—']))('%s: the table says %s with labels %s', (name, type, labels) => {
    const family = registered.get(name);
    expect(family, name).toBeDefined();
    expect(family!.type).toBe(type);
    expect([...family!.labelNames].sort().join(',') || '—').toBe(labels);
  });
});
