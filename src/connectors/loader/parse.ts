/**
 * One connector file's text → a definition, or every problem found in it. Pure: file-system
 * checks (does the script exist, is it executable) are the loader's.
 * Spec: DESIGN "Connectors"; bus spec S1, S5.
 */
import { basename, dirname, extname } from 'node:path';
import { LineCounter, isMap, isScalar, isSeq, parseDocument } from 'yaml';
import type { Document } from 'yaml';
import { retryPolicy } from '../../core/retry.js';
import { fileDropOptionsFrom, fileDropSettingsSchema } from '../sinks/file-drop/index.js';
import { shellHookOptionsFrom, shellHookSettingsSchema } from '../sinks/shell-hook/index.js';
import { connectorFileSchema } from './schema.js';
import type { ParsedConnectorFile } from './schema.js';
import { SECRET_PATTERN, groupOf, pushDeliverySchema } from '../../bus/subscriptions/index.js';
import { fieldPath } from '../../bus/subscriptions/index.js';
import type { RuntimeDelivery, RuntimeSubscription } from '../subscriptions/runtime.js';
import type { SubscriptionView } from '../../bus/subscriptions/index.js';
import type { ConnectorDefinition, ConnectorProblem } from './types.js';
import type { FileDropOptions } from '../sinks/file-drop/index.js';
import type { ShellHookOptions } from '../sinks/shell-hook/index.js';
import { schemaIssues } from '../../core/schema-issues.js';
import { errorMessage } from '../../core/errors.js';
import { yamlErrorMessage } from '../../core/yaml-error.js';
import { maskedUrl } from '../../core/public-url.js';
import { checkTargetUrl, parseAllowList, refuseFragment } from '../sinks/webhook/index.js';
import type { AllowList } from '../sinks/webhook/index.js';
import { gatewayCredentialProblem } from '../names.js';

/** A zod issue path as `a.b[0].c`; `(root)` for the document itself. */
export function problemPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : `${out === '' ? '' : '.'}${String(seg)}`;
  return out === '' ? '(root)' : out;
}

export interface ParseContext {
  /** Where `passEnv` variables are read from; default `process.env`. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /**
   * Hosts a push `delivery.url` may target despite the address rules; default
   * `WEBHOOK_ALLOWED_HOSTS` of `environment` (the variable the gateway's config reads).
   */
  readonly allowedHosts?: AllowList;
}

/** A connector's sink, resolved: what the loader checks on the file system. */
export type ResolvedSink = (
  | { readonly kind: 'shell-hook'; readonly sink: ShellHookOptions }
  | { readonly kind: 'file-drop'; readonly sink: FileDropOptions }
) & { readonly enabled: boolean };

/**
 * What the loader can still check of a file whose schema check failed: its `subscription` (is it
 * used by another file?) and its `kinds` (does the catalog have them?), each when it has the
 * right type by itself; `kinds` keeps each string entry with its index in the file.
 */
export interface SalvagedFields {
  readonly enabled: boolean;
  readonly subscription?: string;
  readonly kinds?: readonly (readonly [index: number, kind: string])[];
}

/**
 * The result of parsing one file: a definition when there was no problem. With problems, `sink`
 * is the sink section when it is valid by itself and `salvaged` the fields checked across files
 * and against the catalog, so that the loader can still report every problem of the file at once.
 */
export type ParsedConnector =
  | { readonly ok: true; readonly definition: ConnectorDefinition }
  | { readonly ok: false; readonly problems: readonly ConnectorProblem[]; readonly sink?: ResolvedSink; readonly salvaged?: SalvagedFields };

/** `subscription` and `kinds` of a file whose other parts are invalid (see {@link SalvagedFields}). */
function fieldsAlone(raw: unknown): SalvagedFields | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { subscription, kinds, enabled } = raw as { subscription?: unknown; kinds?: unknown; enabled?: unknown };
  return {
    enabled: enabled !== false,
    ...(typeof subscription === 'string' && subscription !== '' ? { subscription } : {}),
    ...(Array.isArray(kinds) ? { kinds: kinds.flatMap((k: unknown, i) => (typeof k === 'string' && k !== '' ? [[i, k] as const] : [])) } : {}),
  };
}

/** The sink section of a file whose other parts are invalid, when `kind` and `sink` are valid. */
function sinkAlone(raw: unknown, baseDir: string, ctx: ParseContext): ResolvedSink | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { kind, sink, enabled } = raw as { kind?: unknown; sink?: unknown; enabled?: unknown };
  const on = enabled !== false;
  if (kind === 'shell-hook') {
    const s = shellHookSettingsSchema.safeParse(sink);
    return s.success ? { kind, enabled: on, sink: shellHookOptionsFrom(s.data, { baseDir, ...(ctx.environment === undefined ? {} : { environment: ctx.environment }) }) } : undefined;
  }
  if (kind === 'file-drop') {
    const s = fileDropSettingsSchema.safeParse(sink);
    return s.success ? { kind, enabled: on, sink: fileDropOptionsFrom(s.data, { baseDir }) } : undefined;
  }
  return undefined;
}

/** Where a hook's argv and environment values are in a connector file (short form and `kind: subscription`). */
const HOOK_TEXT_PATHS: readonly (readonly string[])[] = [
  ['sink', 'command'],
  ['sink', 'env'],
  ['delivery', 'sink', 'command'],
  ['delivery', 'sink', 'env'],
];

/**
 * Makes an unquoted number or boolean among a hook's arguments and environment values the text
 * written in the file: YAML reads `1.10` as 1.1, `007` as 7, `0x1F` as 31 and a 20-digit number
 * rounded, and the script would get those (break report, connectors 8). A program passes text,
 * so the text as written is what the author meant. Other settings keep YAML's types.
 */
function keepWrittenText(doc: Document): void {
  const asWritten = (node: unknown): void => {
    if (isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean') && typeof node.source === 'string') node.value = node.source;
  };
  for (const path of HOOK_TEXT_PATHS) {
    const node: unknown = doc.getIn(path, true);
    if (isSeq(node)) node.items.forEach(asWritten);
    else if (isMap(node)) for (const pair of node.items) asWritten(pair.value);
  }
}

/**
 * Parses and validates the YAML `text` of the connector file `file` (absolute path; relative
 * paths inside resolve against its folder). Every problem is reported with the file and a path.
 */
export function parseConnectorText(text: string, file: string, ctx: ParseContext = {}): ParsedConnector {
  const problems: ConnectorProblem[] = [];
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  for (const e of doc.errors) {
    const at = lineCounter.linePos(e.pos[0]);
    problems.push({ file, path: '(root)', problem: `YAML line ${at.line} column ${at.col}: ${yamlErrorMessage(e.message)}` });
  }
  if (problems.length > 0) return { ok: false, problems };
  keepWrittenText(doc);
  let raw: unknown;
  try {
    raw = doc.toJS();
  } catch (err) {
    // An alias bomb (yaml's maxAliasCount) is this file's problem, reported with the other files'.
    return { ok: false, problems: [{ file, path: '(root)', problem: `YAML: ${errorMessage(err)}` }] };
  }
  if (raw === null || raw === undefined) return { ok: false, problems: [{ file, path: '(root)', problem: 'the file is empty' }] };
  const parsed = connectorFileSchema.safeParse(raw);
  const baseDir = dirname(file);
  if (!parsed.success) {
    const sink = sinkAlone(raw, baseDir, ctx);
    const salvaged = fieldsAlone(raw);
    return { ok: false, problems: schemaIssues(parsed.error.issues).map((i) => ({ file, path: problemPath(i.path), problem: i.message })), ...(sink === undefined ? {} : { sink }), ...(salvaged === undefined ? {} : { salvaged }) };
  }
  const c = parsed.data;
  if (c.kind === 'subscription') return parseSubscriptionFile(c, file, baseDir, ctx, hasRetryTimeout(raw));
  const b = c.retry.backoff;
  const base = {
    name: basename(file, extname(file)),
    file,
    ...(c.description === undefined ? {} : { description: c.description }),
    enabled: c.enabled,
    subscription: c.subscription,
    kinds: Object.freeze([...c.kinds]),
    startFrom: c.startFrom,
    ordering: c.ordering,
    retry: retryPolicy({ maxAttempts: c.retry.maxAttempts, initialDelayMs: b.initialMs, factor: b.factor, maxDelayMs: b.maxMs, jitter: b.jitter }),
    retrySettings: Object.freeze({ maxAttempts: c.retry.maxAttempts, initialMs: b.initialMs, factor: b.factor, maxMs: b.maxMs, jitter: b.jitter }),
  };
  const definition: ConnectorDefinition =
    c.kind === 'shell-hook'
      ? { ...base, kind: 'shell-hook', sink: shellHookOptionsFrom(c.sink, { baseDir, ...(ctx.environment === undefined ? {} : { environment: ctx.environment }) }) }
      : { ...base, kind: 'file-drop', sink: fileDropOptionsFrom(c.sink, { baseDir }) };
  return { ok: true, definition: Object.freeze(definition) };
}

/**
 * Why a push `delivery.url` is refused, else undefined: the static webhook target rules of
 * `POST /subscriptions` (http/https only, no credentials, no fragment, the address rules for an
 * IP literal, https unless allow-listed). Host names are resolved at delivery, as for the HTTP
 * resource; loading stays synchronous and needs no DNS.
 * Spec: issue 8 ("Webhook targets are checked"); src/connectors/sinks/webhook/target.ts.
 */
function pushUrlProblem(url: string, env: Readonly<Record<string, string | undefined>>, ctx: ParseContext): string | undefined {
  let allow: AllowList;
  try {
    allow = ctx.allowedHosts ?? parseAllowList(env.WEBHOOK_ALLOWED_HOSTS, env.WEBHOOK_ALLOWED_PORTS);
  } catch (err) {
    return `cannot be checked: ${errorMessage(err)}`;
  }
  try {
    refuseFragment(url); // the create-time rule of targetChecker
    checkTargetUrl(url, allow);
    return undefined;
  } catch (err) {
    return errorMessage(err);
  }
}

type SubscriptionFile = Extract<ParsedConnectorFile, { kind: 'subscription' }>;

/** Whether the file as written sets `retry.timeoutMs` (the parsed file always holds its default). */
function hasRetryTimeout(raw: unknown): boolean {
  if (typeof raw !== 'object' || raw === null) return false;
  const retry = (raw as { retry?: unknown }).retry;
  return typeof retry === 'object' && retry !== null && Object.hasOwn(retry, 'timeoutMs');
}

/** The retry settings `GET /subscriptions` shows: `timeoutMs` is the limit that applies to one attempt of this sink. */
function viewedRetry(retry: SubscriptionFile['retry'], delivery: RuntimeDelivery): SubscriptionView['retry'] {
  if (delivery.mode === 'push') return retry;
  const { timeoutMs: _pushOnly, ...rest } = retry;
  return delivery.mode === 'shell-hook' ? { ...rest, timeoutMs: delivery.sink.timeoutMs } : rest;
}

/** A `kind: subscription` file → a definition whose `runtime` the reconciler runs; secrets read from the environment. */
function parseSubscriptionFile(c: SubscriptionFile, file: string, baseDir: string, ctx: ParseContext, retryTimeoutWritten: boolean): ParsedConnector {
  const problems: ConnectorProblem[] = [];
  // retry.timeoutMs is the webhook's attempt deadline; a hook has its own, a file drop none. Taken
  // silently, it would be shown by GET /subscriptions while another limit applies.
  if (retryTimeoutWritten && c.delivery.mode !== 'push') {
    problems.push({
      file,
      path: 'retry.timeoutMs',
      problem: c.delivery.mode === 'shell-hook' ? 'applies to push delivery only: a shell hook\'s time limit is delivery.sink.timeoutMs' : 'applies to push delivery only: a file drop has no per-attempt deadline',
    });
  }
  const env = ctx.environment ?? process.env;
  const group = groupOf(c.owner, c.name);
  let delivery: RuntimeDelivery;
  const d = c.delivery;
  if (d.mode === 'push') {
    const secrets: string[] = [];
    d.secretsFromEnv.forEach((name, i) => {
      const own = gatewayCredentialProblem(name);
      if (own !== undefined) return void problems.push({ file, path: `delivery.secretsFromEnv[${i}]`, problem: own });
      // A disabled file is checked but not run: a variable it names may be unset (set it when enabling).
      if (!c.enabled) return;
      const v = env[name];
      if (v === undefined || v === '') problems.push({ file, path: `delivery.secretsFromEnv[${i}]`, problem: `${name} is not set` });
      else if (!SECRET_PATTERN.test(v)) problems.push({ file, path: `delivery.secretsFromEnv[${i}]`, problem: `${name} does not hold a Standard Webhooks secret (whsec_ + base64)` });
      else secrets.push(v);
    });
    const headers: Record<string, string> = {};
    /** What the header rules are checked on: a disabled file's names with a stand-in value (its variables are not read). */
    const checkedHeaders: Record<string, string> = {};
    for (const [header, name] of Object.entries(d.headersFromEnv)) {
      const own = gatewayCredentialProblem(name);
      if (own !== undefined) {
        problems.push({ file, path: `delivery.headersFromEnv.${header}`, problem: own });
        continue;
      }
      if (!c.enabled) {
        checkedHeaders[header] = 'unset';
        continue;
      }
      const v = env[name];
      if (v === undefined || v === '') problems.push({ file, path: `delivery.headersFromEnv.${header}`, problem: `${name} is not set` });
      else headers[header] = checkedHeaders[header] = v;
    }
    const urlProblem = pushUrlProblem(d.url, env, ctx);
    if (urlProblem !== undefined) problems.push({ file, path: 'delivery.url', problem: urlProblem });
    // The header rules of the HTTP resource apply (reserved names, visible ASCII values).
    const checked = pushDeliverySchema.safeParse({ mode: 'push', url: d.url, secrets: secrets.length > 0 ? secrets : undefined, headers: checkedHeaders });
    if (!checked.success) for (const i of schemaIssues(checked.error.issues)) problems.push({ file, path: `delivery.${fieldPath(i.path)}`.replace('delivery.headers', 'delivery.headersFromEnv'), problem: i.message });
    delivery = {
      mode: 'push',
      push: { url: d.url, contentMode: d.contentMode, data: d.data, handshake: d.handshake, secrets, headers, timeoutMs: c.retry.timeoutMs, retryAfterCapMs: c.retry.backoff.maxMs, rateLimit: c.rateLimit, concurrency: c.concurrency, ...(d.batch === undefined ? {} : { batch: d.batch }) },
    };
  } else if (d.mode === 'shell-hook') {
    delivery = { mode: 'shell-hook', sink: shellHookOptionsFrom(d.sink, { baseDir, ...(ctx.environment === undefined ? {} : { environment: ctx.environment }) }) };
  } else {
    delivery = { mode: 'file-drop', sink: fileDropOptionsFrom(d.sink, { baseDir }) };
  }
  if (problems.length > 0) return { ok: false, problems };
  const b = c.retry.backoff;
  const now = new Date(0).toISOString();
  const runtime: RuntimeSubscription = {
    group,
    name: c.name,
    owner: c.owner,
    kinds: Object.freeze([...c.kinds]),
    filters: c.filters,
    ordering: c.ordering,
    retry: { maxAttempts: c.retry.maxAttempts, backoff: b, maxAgeMs: c.retry.maxAgeMs },
    startFrom: c.start,
    state: c.state,
    concurrency: c.concurrency,
    origin: 'file',
    delivery,
    view: {
      name: c.name,
      owner: c.owner,
      group,
      deadLetterTopic: `${group}.dlq`,
      kinds: c.kinds,
      filters: c.filters,
      start: c.start,
      delivery:
        delivery.mode === 'push'
          ? { mode: 'push', url: d.mode === 'push' ? maskedUrl(d.url) : '', contentMode: delivery.push.contentMode, data: delivery.push.data, handshake: delivery.push.handshake, ...(delivery.push.batch === undefined ? {} : { batch: delivery.push.batch }), secretCount: delivery.push.secrets.length, headerNames: Object.keys(delivery.push.headers) }
          : { mode: delivery.mode },
      ordering: c.ordering,
      retry: viewedRetry(c.retry, delivery),
      concurrency: c.concurrency,
      rateLimit: c.rateLimit,
      state: c.state,
      createdAt: now,
      updatedAt: now,
      generation: 1,
      origin: 'file',
      connector: { kind: 'subscription', name: basename(file, extname(file)) },
    },
  };
  const definition: ConnectorDefinition = {
    kind: 'subscription',
    name: basename(file, extname(file)),
    file,
    ...(c.description === undefined ? {} : { description: c.description }),
    enabled: c.enabled,
    subscription: group,
    kinds: runtime.kinds,
    startFrom: c.start,
    ordering: c.ordering,
    retry: retryPolicy({ maxAttempts: c.retry.maxAttempts, initialDelayMs: b.initialMs, factor: b.factor, maxDelayMs: b.maxMs, jitter: b.jitter }),
    retrySettings: Object.freeze({ maxAttempts: c.retry.maxAttempts, initialMs: b.initialMs, factor: b.factor, maxMs: b.maxMs, jitter: b.jitter }),
    runtime,
  };
  return { ok: true, definition: Object.freeze(definition) };
}
