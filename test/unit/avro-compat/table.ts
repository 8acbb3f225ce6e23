/**
 * The verdict table of the Avro compatibility checker, shared by the unit test (our checker) and
 * the integration test (the registry's own compatibility endpoint on the dev stack).
 * Pair rows: can data written with `writer` be read with `reader`? (run as BACKWARD: writer is the
 * registered version, reader the candidate). History rows: a candidate against several registered
 * versions under a level.
 */
import type { CompatibilityLevel } from '../../../src/registry/port.js';

export type AvroJson = string | readonly unknown[] | Readonly<Record<string, unknown>>;

export interface PairRow {
  readonly id: string;
  readonly writer: AvroJson;
  readonly reader: AvroJson;
  readonly compatible: boolean;
  /** A substring of the (first) explanation, for incompatible rows. */
  readonly explain?: string;
}

export interface HistoryRow {
  readonly id: string;
  readonly level: CompatibilityLevel;
  /** Registered versions, oldest first (each step is BACKWARD compatible, so a registry takes them). */
  readonly history: readonly AvroJson[];
  readonly candidate: AvroJson;
  readonly compatible: boolean;
  readonly explain?: string;
}

const rec = (fields: readonly object[], extra: Record<string, unknown> = {}): AvroJson => ({ type: 'record', name: 'Rec', namespace: 'test.compat', fields: [{ name: 'id', type: 'string' }, ...fields], ...extra });
const field = (name: string, type: unknown, extra: Record<string, unknown> = {}): object => ({ name, type, ...extra });
const one = (type: unknown, extra: Record<string, unknown> = {}): AvroJson => rec([field('x', type, extra)]);
const en = (symbols: string[], extra: Record<string, unknown> = {}): object => ({ type: 'enum', name: 'Side', symbols, ...extra });
const fx = (size: number, name = 'Hash'): object => ({ type: 'fixed', name, size });
const dec = (precision: number, scale: number): object => ({ type: 'bytes', logicalType: 'decimal', precision, scale });
const inner = (fields: readonly object[], name = 'Inner'): object => ({ type: 'record', name, fields });
const named = (namespace: string, fields: readonly string[]): object => ({ type: 'record', name: 'A', namespace, fields: fields.map((name) => ({ name, type: 'int' })) });
const list = (withExtra: boolean): object => ({
  type: 'record',
  name: 'Node',
  fields: [{ name: 'value', type: 'int' }, { name: 'next', type: ['null', 'Node'], default: null }, ...(withExtra ? [{ name: 'label', type: 'string', default: '' }] : [])],
});

export const pairRows: readonly PairRow[] = [
  { id: 'identical record', writer: one('int'), reader: one('int'), compatible: true },
  { id: 'field added with a default', writer: rec([]), reader: rec([field('b', 'int', { default: 0 })]), compatible: true },
  { id: 'optional field added (null default)', writer: rec([]), reader: rec([field('b', ['null', 'string'], { default: null })]), compatible: true },
  { id: 'field added without a default', writer: rec([]), reader: rec([field('b', 'int')]), compatible: false, explain: '/fields/b: field "b" added without a default' },
  { id: 'field removed (backward)', writer: rec([field('b', 'int')]), reader: rec([]), compatible: true },
  { id: 'int → long', writer: one('int'), reader: one('long'), compatible: true },
  { id: 'int → float', writer: one('int'), reader: one('float'), compatible: true },
  { id: 'int → double', writer: one('int'), reader: one('double'), compatible: true },
  { id: 'long → float', writer: one('long'), reader: one('float'), compatible: true },
  { id: 'long → double', writer: one('long'), reader: one('double'), compatible: true },
  { id: 'float → double', writer: one('float'), reader: one('double'), compatible: true },
  { id: 'string → bytes', writer: one('string'), reader: one('bytes'), compatible: true },
  { id: 'bytes → string', writer: one('bytes'), reader: one('string'), compatible: true },
  { id: 'long → int (narrowing)', writer: one('long'), reader: one('int'), compatible: false, explain: '/fields/x: type changed from long to int — new readers (int) cannot read old data' },
  { id: 'double → float (narrowing)', writer: one('double'), reader: one('float'), compatible: false, explain: 'type changed from double to float — new readers (float) cannot read old data (version 1) written as double, narrowing; keep double' },
  { id: 'float → long', writer: one('float'), reader: one('long'), compatible: false, explain: 'type changed from float to long' },
  { id: 'string → int', writer: one('string'), reader: one('int'), compatible: false, explain: 'type changed from string to int' },
  { id: 'int → string', writer: one('int'), reader: one('string'), compatible: false, explain: 'type changed from int to string' },
  { id: 'boolean → int', writer: one('boolean'), reader: one('int'), compatible: false, explain: 'type changed from boolean to int' },
  { id: 'record renamed without alias', writer: rec([]), reader: rec([], { name: 'Renamed' }), compatible: false, explain: '/: record renamed from test.compat.Rec to test.compat.Renamed' },
  { id: 'record renamed with alias', writer: rec([]), reader: rec([], { name: 'Renamed', aliases: ['Rec'] }), compatible: true },
  { id: 'record namespace changed (names compare unqualified)', writer: rec([]), reader: rec([], { namespace: 'other.ns' }), compatible: true },
  { id: 'field renamed with reader alias', writer: rec([field('old', 'int')]), reader: rec([field('renamed', 'int', { aliases: ['old'] })]), compatible: true },
  { id: 'field renamed without alias', writer: rec([field('old', 'int')]), reader: rec([field('renamed', 'int')]), compatible: false, explain: 'field "renamed" added without a default — new readers cannot fill it in when reading old data (version 1), which lacks it; give it a default, e.g. type ["null", …] with "default": null (if it renames "old"' },
  { id: 'field renamed with alias and widened', writer: rec([field('old', 'int')]), reader: rec([field('renamed', 'long', { aliases: ['old'] })]), compatible: true },
  { id: 'enum symbol added', writer: one(en(['BUY', 'SELL'])), reader: one(en(['BUY', 'SELL', 'FLAT'])), compatible: true },
  { id: 'enum symbol removed', writer: one(en(['BUY', 'SELL', 'FLAT'])), reader: one(en(['BUY', 'SELL'])), compatible: false, explain: '/fields/x: enum Side lost symbol(s) FLAT' },
  { id: 'enum symbol removed, reader has an enum default', writer: one(en(['BUY', 'SELL', 'FLAT', 'UNKNOWN'])), reader: one(en(['BUY', 'SELL', 'UNKNOWN'], { default: 'UNKNOWN' })), compatible: true },
  { id: 'enum renamed without alias', writer: one(en(['A'])), reader: one(en(['A'], { name: 'Direction' })), compatible: false, explain: 'enum renamed from test.compat.Side to test.compat.Direction' },
  { id: 'enum renamed with alias', writer: one(en(['A'])), reader: one(en(['A'], { name: 'Direction', aliases: ['Side'] })), compatible: true },
  { id: 'fixed unchanged', writer: one(fx(16)), reader: one(fx(16)), compatible: true },
  { id: 'fixed size changed', writer: one(fx(16)), reader: one(fx(32)), compatible: false, explain: '/fields/x: fixed Hash size changed from 16 to 32 bytes' },
  { id: 'fixed renamed', writer: one(fx(16)), reader: one(fx(16, 'Digest')), compatible: false, explain: 'fixed renamed from test.compat.Hash to test.compat.Digest' },
  { id: 'union branch added', writer: one(['null', 'string']), reader: one(['null', 'string', 'int']), compatible: true },
  { id: 'union branch removed', writer: one(['null', 'string', 'int']), reader: one(['null', 'string']), compatible: false, explain: '/fields/x: union branch int removed' },
  { id: 'plain type made optional (into a union)', writer: one('string'), reader: one(['null', 'string']), compatible: true },
  { id: 'optional made required (union to plain)', writer: one(['null', 'string']), reader: one('string'), compatible: false, explain: 'type changed from a union with null to string — new readers cannot read old data (version 1) holding a null' },
  { id: 'int into a union with long (promotion)', writer: one('int'), reader: one(['null', 'long']), compatible: true },
  { id: 'union branch int → long', writer: one(['null', 'int']), reader: one(['null', 'long']), compatible: true },
  { id: 'union branch long → int', writer: one(['null', 'long']), reader: one(['null', 'int']), compatible: false, explain: 'union branch long removed' },
  { id: 'writer union, plain reader accepting every branch', writer: one(['int', 'long']), reader: one('double'), compatible: true },
  { id: 'string into a union without string', writer: one('string'), reader: one(['null', 'int']), compatible: false, explain: 'no branch of the reader union accepts it' },
  { id: 'array items int → long', writer: one({ type: 'array', items: 'int' }), reader: one({ type: 'array', items: 'long' }), compatible: true },
  { id: 'array items long → int', writer: one({ type: 'array', items: 'long' }), reader: one({ type: 'array', items: 'int' }), compatible: false, explain: '/fields/x/items: type changed from long to int' },
  { id: 'map values string → bytes', writer: one({ type: 'map', values: 'string' }), reader: one({ type: 'map', values: 'bytes' }), compatible: true },
  { id: 'map values int → string', writer: one({ type: 'map', values: 'int' }), reader: one({ type: 'map', values: 'string' }), compatible: false, explain: '/fields/x/values: type changed from int to string' },
  { id: 'array → map', writer: one({ type: 'array', items: 'string' }), reader: one({ type: 'map', values: 'string' }), compatible: false, explain: 'type changed from array<string> to map<string>' },
  { id: 'record → string', writer: one(inner([field('a', 'int')])), reader: one('string'), compatible: false, explain: 'type changed from record Inner to string' },
  { id: 'enum → string', writer: one(en(['A'])), reader: one('string'), compatible: false, explain: 'type changed from enum Side to string' },
  { id: 'fixed → bytes', writer: one(fx(4)), reader: one('bytes'), compatible: false, explain: 'type changed from fixed Hash(4) to bytes' },
  { id: 'nested record: field added without a default', writer: one(inner([field('a', 'int')])), reader: one(inner([field('a', 'int'), field('b', 'int')])), compatible: false, explain: '/fields/x/fields/b: field "b" added without a default' },
  { id: 'nested optional record: field added with a default', writer: one(['null', inner([field('a', 'int')])], { default: null }), reader: one(['null', inner([field('a', 'int'), field('b', 'string', { default: 'n/a' })])], { default: null }), compatible: true },
  { id: 'nested optional record: field added without a default', writer: one(['null', inner([field('a', 'int')])], { default: null }), reader: one(['null', inner([field('a', 'int'), field('b', 'string')])], { default: null }), compatible: false, explain: '/fields/x/fields/b: field "b" added without a default' },
  { id: 'changed type, reader default does not help', writer: one('string'), reader: one('int', { default: 0 }), compatible: false, explain: 'type changed from string to int' },
  { id: 'recursive record unchanged', writer: one(list(false)), reader: one(list(false)), compatible: true },
  { id: 'recursive record: field added with a default', writer: one(list(false)), reader: one(list(true)), compatible: true },
  { id: 'top-level int → long', writer: 'int', reader: 'long', compatible: true },
  { id: 'top-level long → int', writer: 'long', reader: 'int', compatible: false, explain: '/: type changed from long to int' },
  { id: 'decimal scale changed', writer: one(dec(18, 5)), reader: one(dec(18, 4)), compatible: false, explain: 'logical type changed from decimal(18,5) to decimal(18,4) — new readers would misread old data (version 1) written as decimal(18,5) (the stored number means something else); a schema registry (Avro Java) would accept this change' },
  { id: 'decimal precision changed', writer: one(dec(10, 2)), reader: one(dec(12, 2)), compatible: false, explain: 'logical type changed from decimal(10,2) to decimal(12,2)' },
  { id: 'decimal added to plain bytes', writer: one('bytes'), reader: one(dec(10, 2)), compatible: false, explain: 'logical type changed from bytes to decimal(10,2)' },
  { id: 'timestamp-millis → timestamp-micros', writer: one({ type: 'long', logicalType: 'timestamp-millis' }), reader: one({ type: 'long', logicalType: 'timestamp-micros' }), compatible: false, explain: 'logical type changed from long timestamp-millis to long timestamp-micros' },
  { id: 'uuid logical type added to a string', writer: one('string'), reader: one({ type: 'string', logicalType: 'uuid' }), compatible: true },
  {
    // Avro 1.11 §"Schema Resolution": the FIRST reader branch matching the writer by unqualified name is resolved (other.A, which needs b).
    id: 'reader union: first branch of the writer\'s unqualified name is incompatible, a later one compatible',
    writer: one(named('ns', ['a'])),
    reader: one([named('other', ['a', 'b']), named('ns', ['a'])]),
    compatible: false,
    explain: '/fields/x/fields/b: field "b" added without a default',
  },
];

export const historyRows: readonly HistoryRow[] = [
  {
    id: 'BACKWARD compares with the latest version only',
    level: 'BACKWARD',
    history: [rec([]), rec([field('b', 'int', { default: 0 })])],
    candidate: rec([field('b', 'int')]),
    compatible: true,
  },
  {
    id: 'BACKWARD_TRANSITIVE compares with every version',
    level: 'BACKWARD_TRANSITIVE',
    history: [rec([]), rec([field('b', 'int', { default: 0 })])],
    candidate: rec([field('b', 'int')]),
    compatible: false,
    explain: 'field "b" added without a default — new readers cannot fill it in when reading old data (version 1)',
  },
  {
    id: 'FORWARD: removing a field that now has a default',
    level: 'FORWARD',
    history: [rec([field('b', 'int')]), rec([field('b', 'int', { default: 0 })])],
    candidate: rec([]),
    compatible: true,
  },
  {
    id: 'FORWARD_TRANSITIVE: the first version still requires the field',
    level: 'FORWARD_TRANSITIVE',
    history: [rec([field('b', 'int')]), rec([field('b', 'int', { default: 0 })])],
    candidate: rec([]),
    compatible: false,
    explain: '/fields/b: field "b" removed (or renamed) — readers of version 1 require it',
  },
  {
    id: 'FULL compares both ways with the latest only',
    level: 'FULL',
    history: [rec([field('b', 'string')]), rec([field('b', 'string', { default: '' })])],
    candidate: rec([]),
    compatible: true,
  },
  {
    id: 'FULL_TRANSITIVE: removal breaks readers of the first version',
    level: 'FULL_TRANSITIVE',
    history: [rec([field('b', 'string')]), rec([field('b', 'string', { default: '' })])],
    candidate: rec([]),
    compatible: false,
    explain: 'readers of version 1 require it',
  },
  {
    id: 'FULL_TRANSITIVE: optional field added over three versions',
    level: 'FULL_TRANSITIVE',
    history: [rec([]), rec([field('b', ['null', 'string'], { default: null })])],
    candidate: rec([field('b', ['null', 'string'], { default: null }), field('c', 'int', { default: 0 })]),
    compatible: true,
  },
  {
    id: 'FULL_TRANSITIVE: field removed without a default',
    level: 'FULL_TRANSITIVE',
    history: [rec([field('b', 'int')])],
    candidate: rec([]),
    compatible: false,
    explain: '/fields/b: field "b" removed (or renamed) — readers of version 1 require it',
  },
  {
    id: 'FULL_TRANSITIVE: type narrowed',
    level: 'FULL_TRANSITIVE',
    history: [one('double')],
    candidate: one('float'),
    compatible: false,
    explain: '/fields/x: type changed from double to float — new readers (float) cannot read old data (version 1) written as double, narrowing',
  },
  {
    id: 'FULL_TRANSITIVE: type widened (old readers break)',
    level: 'FULL_TRANSITIVE',
    history: [one('int')],
    candidate: one('long'),
    compatible: false,
    explain: '/fields/x: type changed from int to long — readers of version 1 (int) cannot read new data written as long, int→long is a widening only new readers can follow',
  },
  {
    id: 'FULL_TRANSITIVE: record renamed without alias',
    level: 'FULL_TRANSITIVE',
    history: [rec([])],
    candidate: rec([], { name: 'Renamed' }),
    compatible: false,
    explain: '/: record renamed from test.compat.Rec to test.compat.Renamed — new readers expect Renamed',
  },
  {
    id: 'FULL_TRANSITIVE: record renamed with alias (old readers still break)',
    level: 'FULL_TRANSITIVE',
    history: [rec([])],
    candidate: rec([], { name: 'Renamed', aliases: ['Rec'] }),
    compatible: false,
    explain: 'readers of version 1 expect Rec and cannot read new data written as Renamed',
  },
  {
    id: 'FULL_TRANSITIVE: enum symbol added without an enum default',
    level: 'FULL_TRANSITIVE',
    history: [one(en(['BUY', 'SELL']))],
    candidate: one(en(['BUY', 'SELL', 'FLAT'])),
    compatible: false,
    explain: 'enum Side gained symbol(s) FLAT — readers of version 1 have no enum "default"',
  },
  {
    id: 'FULL_TRANSITIVE: enum symbol added when every version has an enum default',
    level: 'FULL_TRANSITIVE',
    history: [one(en(['UNKNOWN', 'BUY', 'SELL'], { default: 'UNKNOWN' }))],
    candidate: one(en(['UNKNOWN', 'BUY', 'SELL', 'FLAT'], { default: 'UNKNOWN' })),
    compatible: true,
  },
  {
    id: 'BACKWARD_TRANSITIVE: promotion chain int → long → double',
    level: 'BACKWARD_TRANSITIVE',
    history: [one('int'), one('long')],
    candidate: one('double'),
    compatible: true,
  },
  {
    id: 'FORWARD_TRANSITIVE: widening chain breaks the first readers',
    level: 'FORWARD_TRANSITIVE',
    history: [one('int'), one('long')],
    candidate: one('double'),
    compatible: false,
    explain: 'readers of version 1 (int) cannot read new data written as double',
  },
  {
    id: 'NONE accepts anything',
    level: 'NONE',
    history: [one('string')],
    candidate: one('int'),
    compatible: true,
  },
];

/** Schemas the Avro spec or avsc refuses; `path` is the field path reported, `explain` a substring of the message. */
export interface InvalidRow {
  readonly id: string;
  readonly schema: AvroJson;
  readonly path: string;
  readonly explain: string;
}

export const invalidRows: readonly InvalidRow[] = [
  { id: 'union default does not match the first branch', schema: rec([field('b', ['null', 'int'], { default: 1 })]), path: '/fields/b', explain: 'a union default must match the FIRST branch (null)' },
  { id: 'int field with a string default', schema: rec([field('b', 'int', { default: 'one' })]), path: '/fields/b', explain: 'invalid default: "one" is not a int' },
  { id: 'field name with a dash', schema: rec([field('bad-name', 'int')]), path: '/fields/bad-name', explain: 'is not a valid Avro name' },
  { id: 'record name starting with a digit', schema: rec([], { name: '9Rec' }), path: '/', explain: 'record name "test.compat.9Rec" is not a valid Avro name' },
  { id: 'enum default not a symbol', schema: one(en(['A', 'B'], { default: 'C' })), path: '/fields/x', explain: 'enum default "C" is not one of its symbols' },
  { id: 'decimal scale above precision', schema: one(dec(4, 6)), path: '/fields/x', explain: 'decimal "scale" must be an integer from 0 to the precision (4)' },
  { id: 'field declared twice', schema: rec([field('b', 'int'), field('b', 'long')]), path: '/fields/b', explain: 'field "b" is declared twice' },
  { id: 'unknown type reference', schema: one('Missing'), path: '/fields/x', explain: 'unknown type "Missing"' },
  { id: 'nested record field with a bad default', schema: one(inner([field('y', 'string', { default: null })])), path: '/fields/x/fields/y', explain: 'invalid default: null is not a string' },
  { id: 'union with two strings', schema: one(['null', 'string', 'string']), path: '/fields/x', explain: 'union has two branches of type string' },
  { id: 'fixed with a negative size', schema: one({ type: 'fixed', name: 'F', size: -1 }), path: '/fields/x', explain: 'needs "size", an integer ≥ 0' },
  {
    id: 'bare name of a null-namespace type used inside a namespace',
    schema: { type: 'record', name: 'Outer', fields: [field('a', { type: 'record', name: 'N', fields: [] }), field('b', { type: 'record', name: 'Inner', namespace: 'ns', fields: [field('n', 'N')] })] },
    path: '/fields/b/fields/n',
    explain: 'unknown type "N": inside namespace ns it means ns.N',
  },
  { id: '"NaN" as a double default', schema: one('double', { default: 'NaN' }), path: '/fields/x', explain: '"NaN" is not a double default' },
  { id: 'long default beyond 2^53−2', schema: one('long', { default: 9007199254740991 }), path: '/fields/x', explain: 'is beyond ±9007199254740990 (2^53−2)' },
  { id: 'record named after a primitive type inside a namespace', schema: one({ type: 'record', name: 'int', fields: [] }), path: '/fields/x', explain: 'record may not be named after the primitive type int' },
];
