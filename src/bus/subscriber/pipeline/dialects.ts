/**
 * Attribute filters in the dialects of the CloudEvents Subscriptions API: `exact`, `prefix`,
 * `suffix` (each one attribute and one string), `all`, `any` (lists of filters) and `not` (one
 * filter). A subscription's `filters` list holds when every filter in it holds (an implicit
 * `all`). Values are compared with the attribute's canonical string (CloudEvents type system), so
 * an Integer attribute such as `schemaversion` matches `"2"`. An attribute the event does not carry
 * makes `exact`, `prefix` and `suffix` false (and so `not` of them true).
 *
 * Checked once, compiled once: {@link filterProblems} reports every unknown dialect, attribute or
 * malformed filter with its path (`filters[1].any[0].exact.subjet`), {@link compileFilters} turns
 * a valid list into one predicate over attributes.
 * Spec: CloudEvents Subscriptions API 0.1 §3.2.4 "filters" and §3.2.4.1–6 (the dialects); the
 * SQL dialect (CESQL) is not supported and is refused like any unknown dialect.
 */
import type { Attributes } from '../../../envelope/types.js';
import { canonicalString, knownAttributes, stringProblem } from '../../../envelope/index.js';

/** One filter expression, as JSON. */
export type FilterExpression =
  | { readonly exact: Readonly<Record<string, string>> }
  | { readonly prefix: Readonly<Record<string, string>> }
  | { readonly suffix: Readonly<Record<string, string>> }
  | { readonly all: readonly FilterExpression[] }
  | { readonly any: readonly FilterExpression[] }
  | { readonly not: FilterExpression };

/** The dialects this gateway evaluates. */
export const FILTER_DIALECTS = Object.freeze(['exact', 'prefix', 'suffix', 'all', 'any', 'not'] as const);

/**
 * The attributes a filter may name: CloudEvents core attributes and the extensions this gateway
 * fills or carries (DESIGN "The envelope"). Anything else is refused at create time, so a typo
 * (`subjet`) never becomes a filter that silently matches nothing.
 */
export const FILTERABLE_ATTRIBUTES: ReadonlySet<string> = new Set([
  'specversion', 'id', 'source', 'type', 'datacontenttype', 'dataschema', 'subject', 'time',
  'correlationid', 'causationid', 'runid', 'eventname', 'partitionkey', 'schemaversion', 'eventclass',
  'traceparent', 'tracestate', 'dataref',
]);

/** Deepest nesting of `all` / `any` / `not`, and most filters in all, bounding evaluation work. */
export const MAX_FILTER_DEPTH = 8;
export const MAX_FILTER_NODES = 200;
/** Longest value of `exact` / `prefix` / `suffix`, characters. */
export const MAX_FILTER_VALUE_LENGTH = 4096;

/**
 * How strict {@link filterProblems} is about an empty `exact` value.
 * - `refuse` (new definitions: the subscriptions API's create and PATCH, connector files): an
 *   empty value is a problem. The Subscriptions API says so for every dialect value (§3.2.4.1.1:
 *   "The attribute name and value specified in the filter expression MUST NOT be empty strings"),
 *   and for every attribute but `tracestate` it could never match anyway: CloudEvents 1.0.2 makes
 *   `id`, `source`, `type`, `subject`, `dataschema`… non-empty when present, and so do this
 *   gateway's extensions (envelope/attribute-types.ts `nonEmpty`).
 * - `allow` (the default: a running subscriber, a definition stored before the rule): such a
 *   filter is kept, matching nothing, so a stored subscription still starts (its member commits
 *   what it skips instead of stalling the group).
 *   `refuse` also refuses a value holding a character CloudEvents Strings exclude (control
 *   characters, noncharacters, lone surrogates: envelope `stringProblem`), which no attribute value
 *   holds; `allow` keeps it (a definition stored before that rule, 2026-12-07, still starts).
 * An empty `prefix` or `suffix` is refused in both: the same §3.2.4.1.1 sentence forbids it, and it
 * would match every event carrying the attribute (for `id`, `source`, `type`: every event) — not
 * what anyone writing a filter means; leaving the filter out says that.
 */
export type EmptyExact = 'refuse' | 'allow';

/** One problem of a filter list: where (`filters[0].exact.subjet`) and what. */
export interface FilterProblem {
  readonly path: string;
  readonly problem: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Every problem of `filters` (a list of filter expressions), or an empty list when it is valid.
 * `path` is the JSON path of the list in the request (default `filters`); `emptyExact` says
 * whether an empty `exact` value is a problem ({@link EmptyExact}; default `allow`).
 * Spec: CloudEvents Subscriptions API §3.2.4 (filters), §3.2.4.1.1 (the mandatory dialects).
 */
export function filterProblems(filters: unknown, path = 'filters', emptyExact: EmptyExact = 'allow'): FilterProblem[] {
  const out: FilterProblem[] = [];
  let nodes = 0;
  const at = (p: string, problem: string): void => void out.push({ path: p, problem });
  const list = (v: unknown, p: string, depth: number): void => {
    if (!Array.isArray(v)) return at(p, 'must be an array of filter expressions');
    v.forEach((f, i) => expr(f, `${p}[${i}]`, depth));
  };
  const expr = (f: unknown, p: string, depth: number): void => {
    if (++nodes > MAX_FILTER_NODES) {
      if (nodes === MAX_FILTER_NODES + 1) at(p, `at most ${MAX_FILTER_NODES} filter expressions in all`);
      return;
    }
    if (depth > MAX_FILTER_DEPTH) return at(p, `filters nest at most ${MAX_FILTER_DEPTH} levels deep`);
    if (!isObject(f)) return at(p, 'a filter expression is an object with exactly one dialect key (exact, prefix, suffix, all, any, not)');
    const keys = Object.keys(f);
    if (keys.length !== 1) return at(p, `a filter expression has exactly one dialect key, got ${keys.length === 0 ? 'none' : keys.join(', ')}`);
    const dialect = keys[0]!;
    const v = f[dialect];
    const here = `${p}.${dialect}`;
    switch (dialect) {
      case 'exact':
      case 'prefix':
      case 'suffix': {
        if (!isObject(v)) return at(here, `${dialect} takes an object { "<attribute>": "<value>" }`);
        const names = Object.keys(v);
        if (names.length !== 1) return at(here, `${dialect} names exactly one attribute, got ${names.length}`);
        const name = names[0]!;
        if (!FILTERABLE_ATTRIBUTES.has(name)) return at(`${here}.${name}`, `unknown attribute "${name.slice(0, 100)}"; known: ${[...FILTERABLE_ATTRIBUTES].join(', ')}`);
        const value = v[name];
        if (typeof value !== 'string') return at(`${here}.${name}`, 'the value must be a string');
        if (value.length > MAX_FILTER_VALUE_LENGTH) return at(`${here}.${name}`, `values are at most ${MAX_FILTER_VALUE_LENGTH} characters`);
        // A value no attribute can hold: every attribute is a CloudEvents String (or an Integer,
        // URI… in canonical string form), which the gateway refuses at ingress when it holds such
        // a character, so an exact value could never match; a lone surrogate would match prefixes
        // and suffixes by UTF-16 code unit (prefix "\ud83d" matching "😀…"), which a subscriber in
        // another language, comparing code points or UTF-8 bytes, never does.
        const bad = emptyExact === 'refuse' ? stringProblem(value) : undefined;
        if (bad !== undefined) return at(`${here}.${name}`, `${bad}: attribute values never contain one, so this filter would compare against no value an event can carry`);
        if (value === '') {
          if (dialect !== 'exact') return at(`${here}.${name}`, `must not be empty (CloudEvents Subscriptions API §3.2.4.1.1): an empty ${dialect} matches every event that has ${name}; leave the filter out instead`);
          if (emptyExact === 'refuse') return at(`${here}.${name}`, knownAttributes.get(name)?.nonEmpty === false ? 'must not be empty (CloudEvents Subscriptions API §3.2.4.1.1)' : `must not be empty: ${name} is never empty when present (CloudEvents 1.0.2), so this filter could never match (Subscriptions API §3.2.4.1.1)`);
        }
        return;
      }
      case 'all':
      case 'any':
        if (!Array.isArray(v) || v.length === 0) return at(here, `${dialect} takes a non-empty array of filter expressions`);
        return list(v, here, depth + 1);
      case 'not':
        return expr(v, here, depth + 1);
      default:
        return at(here, `unknown filter dialect "${dialect.slice(0, 100)}"; supported: ${FILTER_DIALECTS.join(', ')}`);
    }
  };
  list(filters, path, 1);
  return out;
}

/** A compiled filter: true when the event's attributes match. */
export type AttributePredicate = (attributes: Attributes) => boolean;

const ALWAYS: AttributePredicate = () => true;

function valueOf(a: Attributes, name: string): string | undefined {
  const v = a[name];
  return v === undefined ? undefined : canonicalString(v);
}

function compileOne(f: FilterExpression): AttributePredicate {
  if ('exact' in f) {
    const [name, want] = Object.entries(f.exact)[0]!;
    return (a) => valueOf(a, name) === want;
  }
  if ('prefix' in f) {
    const [name, want] = Object.entries(f.prefix)[0]!;
    return (a) => valueOf(a, name)?.startsWith(want) === true;
  }
  if ('suffix' in f) {
    const [name, want] = Object.entries(f.suffix)[0]!;
    return (a) => valueOf(a, name)?.endsWith(want) === true;
  }
  if ('all' in f) return compileAll(f.all);
  if ('any' in f) {
    const parts = f.any.map(compileOne);
    return (a) => parts.some((p) => p(a));
  }
  const inner = compileOne(f.not);
  return (a) => !inner(a);
}

function compileAll(filters: readonly FilterExpression[]): AttributePredicate {
  if (filters.length === 0) return ALWAYS;
  const parts = filters.map(compileOne);
  return parts.length === 1 ? parts[0]! : (a) => parts.every((p) => p(a));
}

/**
 * One predicate for a list of filters (all must hold; an empty list matches everything).
 * `filters` must be valid ({@link filterProblems} empty): a malformed expression throws a TypeError.
 */
export function compileFilters(filters: readonly FilterExpression[]): AttributePredicate {
  return compileAll(filters);
}
