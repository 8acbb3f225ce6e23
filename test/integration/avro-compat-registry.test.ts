/**
 * The verdict table of test/unit/avro-compat, run against the registry's own compatibility
 * endpoint on the dev stack (Apicurio 3 ccompat API). Every difference between our checker and the
 * registry is listed below with its reason; the test fails when an unlisted difference appears or
 * a listed one disappears.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { analyzeAvroSchema, checkCompatibility } from '../../src/registry/avro/index.js';
import { createConfluentRegistry } from '../../src/registry/index.js';
import type { SchemaRegistry } from '../../src/registry/index.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { historyRows, invalidRows, pairRows } from '../unit/avro-compat/table.js';

const text = (s: unknown): string => JSON.stringify(s);

const SPEC_DECIMAL = 'Avro Java (SchemaCompatibility) compares the underlying bytes only; the Avro spec says two decimals match only when scale and precision match, so old values would be read with the wrong scale — we refuse, the registry accepts';
const LOGICAL_UNIT = 'Avro Java ignores logical types when resolving; the same stored long/bytes would be read with another meaning (a time 1000× off, raw bytes as an unscaled decimal) — we refuse, the registry accepts';
const APICURIO_ALL_VERSIONS =
  'Apicurio 3.0.9 answers POST /compatibility/subjects/{s}/versions (no version) by checking EVERY registered version even under a non-transitive level; Confluent checks the latest only. Registration itself honours the level (see the registration column)';
const UNION_FIRST_MATCH =
  'Avro Java (SchemaCompatibility) accepts when ANY reader branch reads the writer; the Avro 1.11 spec resolves against the FIRST branch that matches by unqualified name (other.A), which needs a field old data lacks — we refuse, the registry accepts';
const AVSC_CANNOT_LOAD = 'Avro Java accepts it; avsc, which this project encodes with, cannot load it (a float/double default is a JSON number in the spec; longs beyond 2^53−2 are not exact as JavaScript numbers)';
const APICURIO_NONE = 'Apicurio\'s ccompat API stores NONE as "no subject rule", so the stack\'s global rule (BACKWARD) applies instead; on Confluent NONE checks nothing';

/** Pair rows where the registry's verdict differs from ours, with the reason. */
const pairDifferences: Readonly<Record<string, string>> = {
  'decimal scale changed': SPEC_DECIMAL,
  'decimal precision changed': SPEC_DECIMAL,
  'decimal added to plain bytes': LOGICAL_UNIT,
  'timestamp-millis → timestamp-micros': LOGICAL_UNIT,
  "reader union: first branch of the writer's unqualified name is incompatible, a later one compatible": UNION_FIRST_MATCH,
};

/** History rows where the compatibility endpoint (no version: "as the level says") differs from ours. */
const historyEndpointDifferences: Readonly<Record<string, string>> = {
  'BACKWARD compares with the latest version only': APICURIO_ALL_VERSIONS,
  'FORWARD: removing a field that now has a default': APICURIO_ALL_VERSIONS,
  'FULL compares both ways with the latest only': APICURIO_ALL_VERSIONS,
  'NONE accepts anything': APICURIO_NONE,
};

/** History rows where registering the candidate differs from our verdict. */
const historyRegistrationDifferences: Readonly<Record<string, string>> = {
  'NONE accepts anything': APICURIO_NONE,
};

/** Invalid schemas the registry registers although the spec or avsc refuses them. */
const invalidAcceptedByRegistry: Readonly<Record<string, string>> = {
  'union default does not match the first branch':
    'Apicurio 3.0.9 registers it (its Avro parser accepts a union default that matches a later branch); the Avro 1.11 spec and avsc require the first branch, and this project\'s avsc decoder could not load it',
  'decimal scale above precision': 'Avro Java drops an invalid logical type silently and registers plain bytes; the spec requires 0 ≤ scale ≤ precision, and readers would disagree on the meaning',
  'bare name of a null-namespace type used inside a namespace': 'Avro Java falls back to the null namespace when ns.N is not defined; the Avro 1.11 spec (§"Names") says a name without a dot is in the enclosing namespace, and avsc cannot load the schema',
  '"NaN" as a double default': AVSC_CANNOT_LOAD,
  'long default beyond 2^53−2': AVSC_CANNOT_LOAD,
  'record named after a primitive type inside a namespace': 'Avro Java accepts a named type called int inside a namespace; the Avro 1.11 spec (§"Names") says primitive type names may not be defined in any namespace, and avsc cannot load the schema',
};

interface Observed {
  pairs: Map<string, boolean>;
  endpoint: Map<string, boolean>;
  registration: Map<string, boolean>;
  invalidAccepted: Map<string, boolean>;
}

async function registers(registry: SchemaRegistry, subject: string, schema: string): Promise<boolean> {
  try {
    await registry.register(subject, schema);
    return true;
  } catch (err) {
    if (err instanceof GatewayError && (err.code === 'CEG_SCHEMA_INCOMPATIBLE' || err.code === 'CEG_SCHEMA_INVALID')) return false;
    throw err;
  }
}

describe('Avro compatibility table against the registry (Apicurio ccompat) on the dev stack', () => {
  const registry = createConfluentRegistry({ url: stackEnv().schemaRegistryUrl, timeoutMs: 15_000 });
  const observed: Observed = { pairs: new Map(), endpoint: new Map(), registration: new Map(), invalidAccepted: new Map() };

  beforeAll(async () => {
    const test = registry.testCompatibility?.bind(registry);
    if (test === undefined) throw new Error('the Confluent client must implement testCompatibility');
    await Promise.all(
      pairRows.map(async (row) => {
        const subject = uniqueName('compat-pair');
        await registry.setCompatibility(subject, 'BACKWARD');
        await registry.register(subject, text(row.writer));
        observed.pairs.set(row.id, (await test(subject, text(row.reader), 'latest')).compatible);
      }),
    );
    await Promise.all(
      historyRows.map(async (row) => {
        const subject = uniqueName('compat-history');
        await registry.setCompatibility(subject, 'BACKWARD');
        for (const h of row.history) await registry.register(subject, text(h));
        await registry.setCompatibility(subject, row.level);
        observed.endpoint.set(row.id, (await test(subject, text(row.candidate))).compatible);
        observed.registration.set(row.id, await registers(registry, subject, text(row.candidate)));
      }),
    );
    await Promise.all(invalidRows.map(async (row) => observed.invalidAccepted.set(row.id, await registers(registry, uniqueName('compat-invalid'), text(row.schema)))));
  }, 120_000);

  it('the difference lists name only rows of the table', () => {
    const pairIds = new Set(pairRows.map((r) => r.id));
    const historyIds = new Set(historyRows.map((r) => r.id));
    const invalidIds = new Set(invalidRows.map((r) => r.id));
    expect(Object.keys(pairDifferences).filter((id) => !pairIds.has(id))).toEqual([]);
    expect([...Object.keys(historyEndpointDifferences), ...Object.keys(historyRegistrationDifferences)].filter((id) => !historyIds.has(id))).toEqual([]);
    expect(Object.keys(invalidAcceptedByRegistry).filter((id) => !invalidIds.has(id))).toEqual([]);
  });

  for (const row of pairRows) {
    const listed = pairDifferences[row.id];
    it(`pair "${row.id}": registry ${listed === undefined ? 'agrees' : `differs (${listed.slice(0, 40)}…)`}`, () => {
      const ours = checkCompatibility(text(row.reader), [{ version: 1, schema: text(row.writer) }], 'BACKWARD').length === 0;
      expect(ours).toBe(row.compatible);
      expect(observed.pairs.get(row.id)).toBe(listed === undefined ? ours : !ours);
    });
  }

  for (const row of historyRows) {
    const viaEndpoint = historyEndpointDifferences[row.id];
    const viaRegistration = historyRegistrationDifferences[row.id];
    it(`history ${row.level} "${row.id}": endpoint ${viaEndpoint === undefined ? 'agrees' : 'differs'}, registration ${viaRegistration === undefined ? 'agrees' : 'differs'}`, () => {
      const previous = row.history.map((s, i) => ({ version: i + 1, schema: text(s) }));
      const ours = checkCompatibility(text(row.candidate), previous, row.level).length === 0;
      expect(ours).toBe(row.compatible);
      expect(observed.endpoint.get(row.id)).toBe(viaEndpoint === undefined ? ours : !ours);
      expect(observed.registration.get(row.id)).toBe(viaRegistration === undefined ? ours : !ours);
    });
  }

  for (const row of invalidRows) {
    const listed = invalidAcceptedByRegistry[row.id];
    it(`invalid "${row.id}": we refuse it; the registry ${listed === undefined ? 'refuses it too' : 'accepts it (listed)'}`, () => {
      expect(analyzeAvroSchema(text(row.schema)).problems.length).toBeGreaterThan(0);
      expect(observed.invalidAccepted.get(row.id)).toBe(listed !== undefined);
    });
  }
});
