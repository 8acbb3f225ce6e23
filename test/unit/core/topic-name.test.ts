/**
 * The one topic-name rule: a table of names Kafka and this project accept or refuse, properties
 * over generated names against the rule written out character by character, and the places that
 * used to keep copies of their own (transports, catalog) agreeing with it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCatalog } from '../../../src/catalog/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { MAX_TOPIC_NAME_LENGTH, assertTopicName, topicNameProblem } from '../../../src/core/topic-name.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import { caught } from '../../helpers/errors.js';

const isTopicName = (name: string): boolean => topicNameProblem(name) === undefined;

const LEGAL_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-';

/** The rule spelled out without a regular expression, as Kafka's `Topic.validate` states it, plus the `__` refusal. */
function reference(name: string): boolean {
  if (name.length < 1 || name.length > 249) return false;
  for (const ch of name) if (!LEGAL_CHARS.includes(ch)) return false;
  if (name === '.' || name === '..') return false;
  return !(name[0] === '_' && name[1] === '_');
}

const accepted = ['bars.closed', 'a', 'A-b_c.9', 'x'.repeat(249), '_single', '.hidden', '...', 'a__b', '-', '_', '_.'];
const refused = ['', '.', '..', '__consumer_offsets', '__', '__transaction_state', 'has space', 'a/b', 'x'.repeat(250), 'ümlaut', 'a\nb', 'tab\t', 'a:b', 'é'];

describe('topic-name rule: table', () => {
  it.each(accepted)('accepts %j', (name) => {
    expect(topicNameProblem(name)).toBeUndefined();
    expect(() => assertTopicName(name)).not.toThrow();
  });

  it.each(refused)('refuses %j with CEG_INVALID_NAME (retriable: false) giving the reason', (name) => {
    const reason = topicNameProblem(name);
    expect(typeof reason).toBe('string');
    const err = caught(() => assertTopicName(name));
    expect(err).toBeInstanceOf(GatewayError);
    expect([err.code, err.retriable]).toEqual(['CEG_INVALID_NAME', false]);
    expect(err.details).toEqual({ topic: name.length > 80 ? `${name.slice(0, 80)}…` : name, reason });
  });

  it('names the reason: charset and length, dot names, the internal prefix', () => {
    expect(topicNameProblem('a b')).toMatch(/1–249 characters of \[a-zA-Z0-9._-\]/);
    expect(topicNameProblem('..')).toMatch(/'\.' or '\.\.'/);
    expect(topicNameProblem('__consumer_offsets')).toMatch(/reserved for Kafka's internal topics/);
    expect(MAX_TOPIC_NAME_LENGTH).toBe(249);
  });
});

describe('topic-name rule: properties', () => {
  const legalChar = fc.constantFrom(...LEGAL_CHARS);
  const anyChar = fc.oneof(legalChar, fc.constantFrom(' ', '/', ':', '\n', '\0', 'ü', '€', '😀', '*', '\\'));

  it('agrees with the rule written out, on names of legal and illegal characters, short and long', () => {
    const name = fc.oneof(fc.string({ unit: anyChar, maxLength: 260 }), fc.string({ unit: legalChar, minLength: 240, maxLength: 260 }), fc.constantFrom('.', '..', '__', '_'));
    fc.assert(fc.property(name, (n) => isTopicName(n) === reference(n)), { numRuns: 2000 });
  });

  it('accepts every name of 1–249 legal characters that is not "." or ".." and does not start with "__"', () => {
    const legal = fc.string({ unit: legalChar, minLength: 1, maxLength: 249 }).filter((n) => n !== '.' && n !== '..' && !n.startsWith('__'));
    fc.assert(fc.property(legal, (n) => isTopicName(n)), { numRuns: 1000 });
  });

  it('refuses any accepted name once it gains the "__" prefix or an illegal character', () => {
    const legal = fc.string({ unit: legalChar, minLength: 1, maxLength: 200 }).filter(isTopicName);
    const illegal = fc.constantFrom(' ', '/', '\n', 'ü', '😀', '#');
    fc.assert(
      fc.property(legal, illegal, fc.nat(), (n, bad, at) => {
        const i = at % (n.length + 1);
        return !isTopicName(`__${n}`) && !isTopicName(n.slice(0, i) + bad + n.slice(i));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('topic-name rule: one rule everywhere', () => {
  it('the transport refuses what the rule refuses, the "__" prefix included, and creates what it accepts', async () => {
    const t = createMemoryTransport();
    const spec = (name: string) => ({ name, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' as const });
    for (const name of ['__consumer_offsets', '__x', '..', 'a b']) {
      await expect(t.ensureTopics([spec(name)])).rejects.toMatchObject({ code: 'CEG_INVALID_NAME', details: { topic: name, reason: topicNameProblem(name) } });
      await expect(t.produce(name, [{ key: null, value: null, headers: [] }])).rejects.toMatchObject({ code: 'CEG_INVALID_NAME' });
    }
    await t.ensureTopics([spec('_single.ok')]);
    await expect(t.partitionCount('_single.ok')).resolves.toBe(1);
    await t.close();
  });

  it('the catalog refuses a kind whose topic the rule refuses, with the rule\'s reason', () => {
    const schema = JSON.stringify({ type: 'record', name: 'Thing', namespace: 't', fields: [{ name: 'id', type: 'string' }] });
    const kind = { eventId: '78b8fd47-3ff3-4881-9419-7bfe84ce89cb', name: 'Thing', description: 'x', schema: 'thing.avsc', key: ['id'], class: 'notification', maxDataBytes: 1024, publish: true, owner: 'svc' };
    // JSON is YAML 1.2.
    const catalogText = (topic: string) => JSON.stringify({ version: 1, kinds: [{ ...kind, topic }] });
    expect(parseCatalog(catalogText('_single.ok'), () => schema, '/cat').kinds[0]?.topic.name).toBe('_single.ok');
    for (const topic of ['__internal', 'x'.repeat(250)]) {
      let err: unknown;
      try {
        parseCatalog(catalogText(topic), () => schema, '/cat');
      } catch (e) {
        err = e;
      }
      const problems = (err as GatewayError).details.problems as { path: string; problem: string }[];
      expect(problems).toContainEqual({ path: 'kinds[0].topic', problem: topicNameProblem(topic) });
    }
  });
});
