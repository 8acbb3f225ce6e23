/**
 * The SchemaRegistry port's contract: every adapter (memory, Confluent REST against a real
 * registry) must pass it. Subjects are unique per run, so a shared registry needs no cleanup.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { SchemaRegistry } from '../../src/registry/port.js';
import { caughtAsync as failure } from '../helpers/errors.js';

const schema = (fields: object[], name = 'ContractRecord'): string =>
  JSON.stringify({ type: 'record', name, namespace: 'ceg.contract', fields: [{ name: 'a', type: 'string' }, ...fields] });

const V1 = schema([]);
const V2_OPTIONAL = schema([{ name: 'b', type: ['null', 'int'], default: null }]);
const V2_DEFAULTED = schema([{ name: 'b', type: 'int', default: 0 }]);
const V3_REQUIRED = schema([{ name: 'b', type: 'int' }]);
const INCOMPATIBLE = schema([{ name: 'z', type: 'long' }]);

/** What an adapter's registry can express; the contract only tests what the backend supports. */
export interface RegistryContractOptions {
  /**
   * false for Apicurio's ccompat API: it stores a subject's NONE as "no subject rule", so the
   * registry-wide rule (apicurio.rules.global.compatibility) still applies. Default true.
   */
  readonly subjectLevelNone?: boolean;
  /**
   * The most subjects `subjects()` answers, when the registry cuts its list short (Apicurio's
   * ccompat API: 1,000, whatever the paging parameters); undefined = the whole list.
   */
  readonly subjectListCap?: number;
}

export function registryContract(name: string, make: () => Promise<SchemaRegistry>, options: RegistryContractOptions = {}): void {
  describe(`SchemaRegistry contract: ${name}`, () => {
    const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    const subject = (s: string): string => `ceg-contract-${run}-${s}-value`;
    let r: SchemaRegistry;

    beforeAll(async () => {
      r = await make();
    });

    it('is healthy', async () => {
      expect(await r.isHealthy()).toBe(true);
    });

    it('registers a first version and serves it by id, by version and as latest', async () => {
      const s = subject('first');
      await r.setCompatibility(s, 'BACKWARD');
      const reg = await r.register(s, V1);
      expect(reg.subject).toBe(s);
      expect(reg.version).toBe(1);
      expect(Number.isInteger(reg.id) && reg.id > 0).toBe(true);
      expect(JSON.parse(reg.schema)).toEqual(JSON.parse(V1));
      expect(JSON.parse(await r.schemaById(reg.id))).toEqual(JSON.parse(V1));
      expect(await r.latest(s)).toEqual(reg);
      expect(await r.version(s, 1)).toEqual(reg);
      expect(await r.versions(s)).toEqual([1]);
    });

    it('is idempotent: the same schema again gives the same id and version', async () => {
      const s = subject('idem');
      const a = await r.register(s, V1);
      const b = await r.register(s, V1);
      expect([b.id, b.version]).toEqual([a.id, a.version]);
      expect(await r.versions(s)).toEqual([1]);
    });

    it('gives the same id to the same schema in another subject', async () => {
      const a = await r.register(subject('same-a'), V2_DEFAULTED);
      const b = await r.register(subject('same-b'), V2_DEFAULTED);
      expect(b.id).toBe(a.id);
      expect(b.version).toBe(1);
    });

    it('adds a compatible version with a new id; older versions stay readable', async () => {
      const s = subject('evolve');
      await r.setCompatibility(s, 'FULL_TRANSITIVE');
      const v1 = await r.register(s, V1);
      const v2 = await r.register(s, V2_OPTIONAL);
      expect(v2.version).toBe(2);
      expect(v2.id).not.toBe(v1.id);
      expect((await r.latest(s)).version).toBe(2);
      expect((await r.version(s, 1)).id).toBe(v1.id);
      expect(await r.versions(s)).toEqual([1, 2]);
      // Re-registering an older schema returns its existing version.
      expect((await r.register(s, V1)).version).toBe(1);
    });

    it('refuses an incompatible schema under BACKWARD, and keeps the versions as they were', async () => {
      const s = subject('incompatible');
      await r.setCompatibility(s, 'BACKWARD');
      await r.register(s, V1);
      const err = await failure(r.register(s, INCOMPATIBLE));
      expect([err.code, err.retriable]).toEqual(['CEG_SCHEMA_INCOMPATIBLE', false]);
      expect(await r.versions(s)).toEqual([1]);
    });

    it('checks every earlier version under BACKWARD_TRANSITIVE, only the latest under BACKWARD', async () => {
      const plain = subject('backward');
      const transitive = subject('backward-transitive');
      await r.setCompatibility(plain, 'BACKWARD');
      await r.setCompatibility(transitive, 'BACKWARD_TRANSITIVE');
      for (const s of [plain, transitive]) {
        await r.register(s, V1);
        await r.register(s, V2_DEFAULTED);
      }
      // V3 reads V2 data (b present) but not V1 data (b missing, no default).
      expect((await r.register(plain, V3_REQUIRED)).version).toBe(3);
      const err = await failure(r.register(transitive, V3_REQUIRED));
      expect(err.code).toBe('CEG_SCHEMA_INCOMPATIBLE');
    });

    if (options.subjectLevelNone ?? true) {
      it('accepts anything under NONE', async () => {
        const s = subject('none');
        await r.setCompatibility(s, 'BACKWARD');
        await r.register(s, V1);
        await r.setCompatibility(s, 'NONE');
        expect((await r.register(s, INCOMPATIBLE)).version).toBe(2);
      });
    }

    it('accepts NONE for a subject without versions', async () => {
      await r.setCompatibility(subject('none-fresh'), 'NONE');
      expect(await r.versions(subject('none-fresh'))).toEqual([]);
    });

    it('lists subjects that have versions, not one that only has a compatibility level', async () => {
      const s = subject('listed');
      await r.register(s, V1);
      await r.setCompatibility(subject('level-only'), 'BACKWARD');
      const listed = await r.subjects!();
      expect(listed.every((x) => typeof x === 'string')).toBe(true);
      expect(listed).not.toContain(subject('level-only'));
      if (options.subjectListCap === undefined || listed.length < options.subjectListCap) {
        expect(listed).toContain(s);
      } else {
        // A full list cut short: what is listed is still real (a listed subject has versions).
        expect(listed.length).toBeLessThanOrEqual(options.subjectListCap);
        expect(await r.versions(listed[0]!)).not.toEqual([]);
      }
    });

    it('refuses an invalid schema with CEG_SCHEMA_INVALID', async () => {
      const err = await failure(r.register(subject('invalid'), '{"type":"recordx"}'));
      expect([err.code, err.retriable]).toEqual(['CEG_SCHEMA_INVALID', false]);
    });

    it('answers CEG_SCHEMA_NOT_FOUND for unknown subjects, versions and ids, and [] for versions of an unknown subject', async () => {
      const s = subject('absent');
      expect(await r.versions(s)).toEqual([]);
      const latest = await failure(r.latest(s));
      expect([latest.code, latest.retriable]).toEqual(['CEG_SCHEMA_NOT_FOUND', false]);
      await r.register(subject('known'), V1);
      expect((await failure(r.version(subject('known'), 99))).code).toBe('CEG_SCHEMA_NOT_FOUND');
      expect((await failure(r.schemaById(2_000_000_000))).code).toBe('CEG_SCHEMA_NOT_FOUND');
    });
  });
}
