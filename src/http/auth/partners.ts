/**
 * Partners: who may call the gateway, declared in the YAML file named by `PARTNERS_FILE` (issue 11).
 * Loaded and checked once at start-up (every problem reported, naming its place in the file), then
 * frozen. API keys are never in the file: only their SHA-256, given inline or read from an
 * environment variable or a secret file, several per partner so keys rotate without a gap.
 *
 * ```yaml
 * partners:
 *   - id: acme                                   # [A-Za-z0-9][A-Za-z0-9_-]{0,99}; part of group names
 *     keys:
 *       - sha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8
 *       - sha256Env: ACME_NEXT_KEY_SHA256        # the hash in an environment variable
 *       - sha256File: /run/secrets/acme.sha256   # the hash in a file
 *     sources: ["urn:partner:acme", "urn:partner:acme:*"]   # exact, or a prefix ending in *
 *     publish: [PriceLoadingCompleted]           # kind names or eventIds; "*" = every kind not internal
 *     subscribe: ["*"]
 *     permissions: [replay, redrive]
 *     roles: [admin]
 *     maxSubscriptions: 10
 *     limits: { requestsPerSecond: 50, eventsPerSecond: 500, maxBodyBytes: 262144, maxBatchEvents: 100, maxHeaderBytes: 8192 }
 * ```
 * Spec: issue 11 ("Partners"); the shape `partners: [{ id, keys: [{ sha256 }], sources, publish,
 * subscribe, permissions, roles, maxSubscriptions }]` is the issue's contract, `limits`,
 * `sha256Env` and `sha256File` are additions.
 */
import { readFileSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { yamlErrorMessage } from '../../core/yaml-error.js';
import { z } from 'zod';
import { GatewayError, readErrorCode } from '../../core/errors.js';
import type { Logger } from '../../observability/index.js';
import type { Catalog, EventKind } from '../../catalog/index.js';
import { DEFAULT_OWNER, NAME_PATTERN } from '../../bus/subscriptions/index.js';
import { schemaIssues } from '../../core/schema-issues.js';
import { uriPrefixProblem, uriReferenceProblem } from '../../envelope/index.js';
import { kindOf } from '../../catalog/lookup.js';
import { readWatchedFile, watchFileShared } from '../../core/watch-file.js';
import type { WatchedFileRead } from '../../core/watch-file.js';

/** Permissions a partner may hold besides `publish` / `subscribe` per kind (issue 11). */
export const PERMISSIONS = ['replay', 'redrive'] as const;
export type Permission = (typeof PERMISSIONS)[number];
export const ROLES = ['admin'] as const;
export type Role = (typeof ROLES)[number];

/** Per-partner bounds; each undefined one falls back to the gateway-wide setting. */
export interface PartnerLimits {
  /** Requests per second (token bucket holding one second's worth). */
  readonly requestsPerSecond?: number;
  /** Events per second through `POST /events` (a batch takes one token per event). */
  readonly eventsPerSecond?: number;
  /** Largest request body, bytes (at most `INGRESS_MAX_BODY_BYTES`). */
  readonly maxBodyBytes?: number;
  /** Most events in one batch (at most `INGRESS_MAX_BATCH_EVENTS`). */
  readonly maxBatchEvents?: number;
  /** Most bytes of request header names and values (the server's own bound is 16 KiB). */
  readonly maxHeaderBytes?: number;
}

/** The kinds a partner may publish or subscribe to. `all`: every kind not `internal`. */
export interface KindGrant {
  readonly all: boolean;
  /** eventIds named explicitly (internal kinds only count when named). */
  readonly eventIds: ReadonlySet<string>;
}

/** A `source` rule: exact, or a prefix (written with a trailing `*`). */
export interface SourceRule {
  readonly value: string;
  readonly prefix: boolean;
}

/** A caller the gateway knows, frozen. `keyHashes` are the SHA-256 digests (32 bytes each) of its API keys. */
export interface Partner {
  readonly id: string;
  readonly keyHashes: readonly Buffer[];
  readonly sources: readonly SourceRule[];
  readonly publish: KindGrant;
  readonly subscribe: KindGrant;
  readonly permissions: ReadonlySet<Permission>;
  readonly roles: ReadonlySet<Role>;
  /** Most subscriptions this partner may own; undefined = no bound. */
  readonly maxSubscriptions?: number;
  readonly limits: PartnerLimits;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;

const keyEntry = z.union([
  z.strictObject({ sha256: z.string().regex(SHA256_HEX, 'lowercase hex SHA-256 of the key (64 digits)') }),
  z.strictObject({ sha256Env: z.string().regex(ENV_NAME, 'an environment variable name') }),
  z.strictObject({ sha256File: z.string().min(1) }),
]);
const kindRef = z.string().min(1).max(200);
const positive = z.number().int().min(1);

/**
 * `by` of a replay an owner did not make itself, as `GET …/replays` shows it to a caller that is not
 * an admin (admins' ids stay private). Reserved as a partner id, so it never names a partner.
 */
export const NEUTRAL_BY = 'admin';

const partnerEntry = z.strictObject({
  id: z
    .string()
    .regex(NAME_PATTERN, '1–100 of [A-Za-z0-9_-], starting with a letter or digit')
    .refine((id) => id !== DEFAULT_OWNER, `"${DEFAULT_OWNER}" is reserved for a gateway without authentication`)
    .refine((id) => id !== NEUTRAL_BY, `"${NEUTRAL_BY}" is reserved: replays list it as the neutral author of an admin's replay; give the admin partner another id (roles: [admin] makes it one)`),
  // None: the partner signs in with OIDC tokens only (OIDC_PARTNER_CLAIM = its id).
  keys: z.array(keyEntry).default([]),
  // Printable ASCII without spaces: a `source` is a URI-reference (CloudEvents §3.1.1).
  sources: z.array(z.string().regex(/^[\x21-\x7e]{1,500}$/, 'a URI-reference, or a prefix ending in *')).default([]),
  publish: z.array(kindRef).default([]),
  subscribe: z.array(kindRef).default([]),
  permissions: z.array(z.enum(PERMISSIONS)).default([]),
  roles: z.array(z.enum(ROLES)).default([]),
  maxSubscriptions: z.number().int().min(0).optional(),
  limits: z
    .strictObject({
      requestsPerSecond: positive.optional(),
      eventsPerSecond: positive.optional(),
      maxBodyBytes: positive.optional(),
      maxBatchEvents: positive.optional(),
      maxHeaderBytes: positive.optional(),
    })
    .default({}),
});

const partnersDocument = z.strictObject({ partners: z.array(partnerEntry).min(1) });

function invalid(file: string, problems: readonly string[]): GatewayError {
  return new GatewayError('CEG_INVALID_OPTIONS', `PARTNERS_FILE ${file}: ${problems.join('; ')}`, { retriable: false, details: { problems } });
}

/**
 * Why a `sources` rule could never match an accepted event, or undefined. Ingress refuses a
 * `source` that is not a URI-reference, so an exact rule that is not one would silently let the
 * partner publish nothing; a prefix rule must be the start of one (its characters, at most one '#').
 * Spec: CloudEvents 1.0.2 §source (URI-reference), RFC 3986 §4.1; issue 11 (exact or prefix rules).
 */
export function sourceRuleProblem(rule: SourceRule): string | undefined {
  if (!rule.prefix) {
    const problem = uriReferenceProblem(rule.value);
    return problem === undefined ? undefined : `is not a source any event can have: a source ${problem}`;
  }
  const problem = uriPrefixProblem(rule.value);
  return problem === undefined ? undefined : `is not the start of any source: a source is ${problem}`;
}

/** Whether `source` matches a rule: the same string, or (prefix rule) starts with it. */
export function sourceAllowed(rules: readonly SourceRule[], source: string): boolean {
  return rules.some((r) => (r.prefix ? source.startsWith(r.value) : source === r.value));
}

/** Whether a grant covers `kind`: named explicitly, or `*` and the kind is not internal. */
export function kindAllowed(grant: KindGrant, kind: EventKind): boolean {
  return grant.eventIds.has(kind.eventId) || (grant.all && !kind.internal);
}

/** SHA-256 of zero bytes, lowercase hex: the hash of an empty key (refused at load). */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/**
 * Parses a partners document (YAML text).
 * `env`: where `sha256Env` names are read; `readFile`: how `sha256File` files are read.
 * Errors: CEG_INVALID_OPTIONS listing every problem by its path (`partners[1].keys[0]`), never a
 *   key or hash value: an unknown kind, a duplicated id or key hash, an unreadable hash file or
 *   an unset variable, a hash that is not 64 lowercase hex digits, the hash of the empty string.
 */
export function parsePartners(text: string, file: string, catalog: Catalog, env: Readonly<Record<string, string | undefined>>, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): readonly Partner[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw invalid(file, [`not YAML: ${err instanceof Error ? yamlErrorMessage(err.message.split('\n')[0]!) : 'parse error'}`]);
  }
  const parsed = partnersDocument.safeParse(doc);
  if (!parsed.success) {
    throw invalid(file, schemaIssues(parsed.error.issues).map((i) => `${i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '') || 'document'}: ${i.message}`));
  }
  const problems: string[] = [];
  const ids = new Set<string>();
  const hashes = new Map<string, string>();
  const partners = parsed.data.partners.map((p, i) => {
    const at = `partners[${i}]`;
    if (ids.has(p.id)) problems.push(`${at}.id: ${p.id} is declared twice`);
    ids.add(p.id);
    const keyHashes: Buffer[] = [];
    p.keys.forEach((k, j) => {
      let hex: string | undefined;
      if ('sha256' in k) hex = k.sha256;
      else if ('sha256Env' in k) {
        hex = env[k.sha256Env]?.trim();
        if (hex === undefined || hex === '') problems.push(`${at}.keys[${j}]: environment variable ${k.sha256Env} is not set`);
      } else {
        try {
          hex = readFile(k.sha256File).trim();
        } catch (err) {
          // The errno code tells a wrong path (ENOENT) from a Secret mounted unreadable (EACCES).
          problems.push(`${at}.keys[${j}]: cannot read ${k.sha256File} (${readErrorCode(err)})`);
        }
      }
      if (hex === undefined || hex === '') return;
      if (!SHA256_HEX.test(hex)) {
        problems.push(`${at}.keys[${j}]: not a lowercase hex SHA-256 (64 digits)`);
        return;
      }
      // Usually `printf '%s' "$UNSET_VAR" | sha256sum`: a key that can never be presented (RFC 6750
      // b64token is one character or more), so the partner would silently have one key fewer.
      if (hex === EMPTY_SHA256) {
        problems.push(`${at}.keys[${j}]: the SHA-256 of the empty string — no Bearer credential is empty, so this key could never be presented (was the key variable unset when it was hashed?)`);
        return;
      }
      const other = hashes.get(hex);
      if (other !== undefined) problems.push(`${at}.keys[${j}]: the same key is also declared at ${other}`);
      hashes.set(hex, `${at}.keys[${j}]`);
      keyHashes.push(Buffer.from(hex, 'hex'));
    });
    const grant = (refs: readonly string[], field: string): KindGrant => {
      const eventIds = new Set<string>();
      let all = false;
      refs.forEach((r, j) => {
        if (r === '*') {
          all = true;
          return;
        }
        const kind = kindOf(catalog, r);
        if (kind === undefined) problems.push(`${at}.${field}[${j}]: unknown event kind "${r.slice(0, 100)}"`);
        else eventIds.add(kind.eventId);
      });
      return Object.freeze({ all, eventIds });
    };
    const sources = p.sources.map((s): SourceRule => (s.endsWith('*') ? { value: s.slice(0, -1), prefix: true } : { value: s, prefix: false }));
    sources.forEach((r, j) => {
      const problem = sourceRuleProblem(r);
      // The rule's text is configuration, not a secret: quoted (cut) so the typo is easy to find.
      if (problem !== undefined) problems.push(`${at}.sources[${j}]: "${p.sources[j]!.slice(0, 100)}" ${problem}`);
    });
    const partner: Partner = {
      id: p.id,
      keyHashes: Object.freeze(keyHashes),
      sources: Object.freeze(sources.map((s) => Object.freeze(s))),
      publish: grant(p.publish, 'publish'),
      subscribe: grant(p.subscribe, 'subscribe'),
      permissions: new Set(p.permissions),
      roles: new Set(p.roles),
      ...(p.maxSubscriptions === undefined ? {} : { maxSubscriptions: p.maxSubscriptions }),
      limits: Object.freeze({ ...p.limits }),
    };
    return Object.freeze(partner);
  });
  if (problems.length > 0) throw invalid(file, problems);
  return Object.freeze(partners);
}

/** A partner that can never authenticate: it has no API key, and no OIDC token can name it. */
export interface PartnerWithoutCredentials {
  readonly id: string;
  /** Its place in the file, `partners[i].keys` (i from 0, the file's order). */
  readonly field: string;
}

/**
 * The partners of `partners` (as {@link parsePartners} returned them, in the file's order) that no
 * request can authenticate as: no `keys` (the field empty or absent) while `oidc` is false. With
 * OIDC on, a partner without keys is an OIDC-only partner (its id in `OIDC_PARTNER_CLAIM`), not one.
 * Such a partner is loaded, not refused (a choice, docs/security.md "The partners file"): emptying
 * a partner's keys is how an operator revokes it, and a refused file would keep the keys it had.
 * Shapes: one entry per such partner, `{ id, field: 'partners[i].keys' }`; never a key or hash.
 */
export function partnersWithoutCredentials(partners: readonly Partner[], oidc: boolean): readonly PartnerWithoutCredentials[] {
  if (oidc) return [];
  return partners.flatMap((p, i) => (p.keyHashes.length === 0 ? [{ id: p.id, field: `partners[${i}].keys` }] : []));
}

/** What the gateway's warning and `config check` say of a {@link PartnerWithoutCredentials}: one wording for both. */
export function withoutCredentialsMessage(p: PartnerWithoutCredentials): string {
  return `partner ${p.id} (PARTNERS_FILE ${p.field}) has no keys and OIDC is off: it cannot authenticate, every request made as it gets 401 CEG_UNAUTHENTICATED (loaded anyway: emptying a partner's keys is how it is revoked)`;
}

/** What {@link loadPartners} read: the partners, and the file's stats taken just before it was read. */
export interface LoadedPartners {
  readonly partners: readonly Partner[];
  /** Where {@link warnWhenPartnersFileChanges} starts from: an edit after the read is a change. */
  readonly stats: Stats;
}

/**
 * Reads and parses `PARTNERS_FILE`.
 * Errors: CEG_INVALID_OPTIONS (unreadable file, or {@link parsePartners}'s).
 */
export function loadPartners(file: string, catalog: Catalog, env: Readonly<Record<string, string | undefined>>): LoadedPartners {
  let read: WatchedFileRead;
  try {
    read = readWatchedFile(file);
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `PARTNERS_FILE: cannot read ${file} (${readErrorCode(err)})`, { retriable: false, cause: err });
  }
  return { partners: parsePartners(read.data.toString('utf8'), file, catalog, env), stats: read.stats };
}

/** How often {@link warnWhenPartnersFileChanges} looks at the file, ms (one stat call). */
export const PARTNERS_WATCH_INTERVAL_MS = 2000;

/**
 * Logs a warning each time `file` (PARTNERS_FILE) changes on disk after it was loaded: the gateway
 * does not reload it (a choice, docs/security.md "The partners file"), so a key taken out of it
 * keeps working until the instance restarts, and an operator who edited it to revoke a key must
 * learn that from the log rather than from an incident. `loaded`: the stats {@link loadPartners}
 * took when it read the file, so an edit right after the load (before the first look) is warned of
 * too. A change is a new modification time, size or inode (a Kubernetes Secret update swaps a
 * symlink: a new inode); a file removed counts, and so does one put back.
 * Polls every `intervalMs` (ms) without keeping the process alive; stops when `signal` aborts.
 */
export function warnWhenPartnersFileChanges(file: string, loaded: Stats, log: Logger, signal: AbortSignal, intervalMs: number = PARTNERS_WATCH_INTERVAL_MS): void {
  if (signal.aborted) return;
  const changed = (curr: Stats | undefined, prev: Stats | undefined): void => {
    // Only its mode or owner changed (the status-change time): the partners are the same.
    if (curr !== undefined && prev !== undefined && curr.mtimeMs === prev.mtimeMs && curr.size === prev.size && curr.ino === prev.ino) return;
    log.warn({ file, removed: curr === undefined }, 'PARTNERS_FILE changed on disk: NOT applied — this instance keeps the partners it loaded at start-up (keys taken out still work) until it restarts; restart every instance to apply it');
  };
  // Shared per path with every gateway of the process (core/watch-file.ts: one poll per path).
  watchFileShared(file, loaded, intervalMs, changed, signal);
}
