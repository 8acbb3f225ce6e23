/**
 * The subscription resources: create, read, list, update (JSON merge patch), delete — what the
 * HTTP routes call. Validation reports every problem naming its field; the webhook target is
 * checked (by the injected `checkTarget`, the webhook sink's rules) at create and whenever the URL
 * changes; `start` is committed before the creation is answered; secrets are generated when
 * absent (returned once, in the `201` only) and sealed before anything is written.
 * Spec: issue 8; RFC 7396 (JSON Merge Patch); CloudEvents Subscriptions API 0.1 §3.2.
 */
import { GatewayError, isGatewayError } from '../../core/errors.js';
import type { Catalog, EventKind } from '../../catalog/index.js';
import type { TopicPartitionOffset, Transport } from '../../transport/port.js';
import { topicExists } from '../../transport/topics.js';
import { redriveTopic, retryTopic, subscriptionTopics } from '../subscriber/index.js';
import type { FilterExpression } from '../subscriber/pipeline/dialects.js';
import { DEFAULT_OWNER, MAX_KINDS, createSchema, deliveryModeProblem, fieldPath, groupOf, reachesAnotherPartner } from './model.js';
import type { BatchSettings, CreateRequest, SubscriptionState } from './model.js';
import { generateWebhookSecret, secretsKeyMissing } from './secrets.js';
import type { SecretBox } from './secrets.js';
import { commitPositions, commitStart, resolveStart } from './start.js';
import { CLAIM_WRITE_MS } from './store.js';
import { MAX_RECORD_WRITES, writeOnNewest } from './record-write.js';
import type { SubscriptionStore } from './store.js';
import { liveStartAt, startPositionsOf } from './stored.js';
import type { StoredStartAt, StoredSubscription } from './stored.js';
import { replayStatus } from './replay/state.js';
import type { ReplayPhase, StoredReplay } from './replay/state.js';
import { schemaIssues } from '../../core/schema-issues.js';
import { maskedUrl } from '../../core/public-url.js';
import { splitReadable } from './readable.js';
import { kindOf, repeatedKindReason, repeatedKinds, topicsOfKinds } from '../../catalog/lookup.js';

/** The secrets of a push subscription, opened. */
export interface OpenedSecrets {
  readonly secrets: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  /** The webhook URL as given, when the record stores it masked (version 2); else the stored `delivery.url` is it. */
  readonly url?: string;
}

/** What `GET` shows: everything but the secrets and the sink headers' values. */
export interface SubscriptionView {
  readonly name: string;
  readonly owner: string;
  /** The consumer group; its dead letters go to `<group>.dlq`. */
  readonly group: string;
  readonly deadLetterTopic: string;
  readonly kinds: readonly string[];
  readonly filters: readonly FilterExpression[];
  readonly start: string;
  readonly delivery:
    | {
        readonly mode: 'push';
        readonly url: string;
        readonly contentMode: 'binary' | 'structured';
        readonly data: 'json' | 'avro';
        readonly handshake: boolean;
        /** Batched content mode, when the subscription opted in. */
        readonly batch?: BatchSettings;
        readonly secretCount: number;
        readonly headerNames: readonly string[];
      }
    /** Pull delivery (issue 9): read with `GET …/events` or `…/stream`, committed with `POST …/cursors`. */
    | { readonly mode: 'pull'; readonly data: 'json' | 'avro' }
    /** Sinks on the gateway's host, declared in connector files only. */
    | { readonly mode: 'shell-hook' | 'file-drop' };
  readonly ordering: 'key' | 'none';
  /**
   * The retry settings in force. `timeoutMs` is the deadline of one attempt: the webhook's for push;
   * for a connector file's shell hook, the hook's own `delivery.sink.timeoutMs`; absent for a file
   * drop, whose writes have none. `maxAgeMs` is absent for a short-form connector (`kind:
   * shell-hook` / `file-drop`), whose retries are bounded by `maxAttempts` only.
   */
  readonly retry: Omit<StoredSubscription['retry'], 'timeoutMs' | 'maxAgeMs'> & { readonly timeoutMs?: number; readonly maxAgeMs?: number };
  readonly concurrency: number;
  readonly rateLimit: number | null;
  /**
   * `failed` only for a short-form connector (`kind: shell-hook` / `file-drop`) whose member stopped
   * on a failure on this instance, as its status says (`stateReason`: the failure); stored and
   * file subscriptions are `active`, `paused` or `gone`.
   */
  readonly state: SubscriptionState | 'failed';
  readonly stateReason?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly generation: number;
  /** The last replay (issue 9): `pausing` while it holds delivery, `done`, `failed` (with `reason`), or `expired` (its lease ran out unfinished). */
  readonly replay?: Omit<StoredReplay, 'phase'> & { readonly phase: ReplayPhase | 'expired' };
  /** `api` (created over HTTP) or `file` (declared in a connector file: read-only here). */
  readonly origin: 'api' | 'file';
  /**
   * The connector file that declares it (`origin: file` only): its `name` (the file name without
   * extension) and its `kind` — `subscription` (a resource declared in a file), or `shell-hook` /
   * `file-drop` for the short forms, whose subscription name is their consumer group. Absent for
   * `origin: api`.
   */
  readonly connector?: { readonly kind: 'subscription' | 'shell-hook' | 'file-drop'; readonly name: string };
  /**
   * Set by the gateway's routes, not stored: the `kinds` (by name) its owner may no longer read
   * (a `subscribe` permission revoked), which are not delivered; absent when there are none.
   */
  readonly forbiddenKinds?: readonly string[];
  /** Why, and what to do (with `forbiddenKinds`). */
  readonly forbiddenReason?: string;
  /**
   * Set on a stored (`api`) subscription that a connector file's subscription shadows
   * ({@link shadowingFile}): the file's wins, so this one is not run (its sink gets nothing, a pull
   * is refused 409) until it is deleted or the file is. Absent otherwise. Not stored.
   */
  readonly shadowedBy?: ShadowingFile;
}

/** The connector file's subscription that shadows a stored one: its name, owner and consumer group, and what to do. */
export interface ShadowingFile {
  readonly name: string;
  readonly owner: string;
  readonly group: string;
  readonly reason: string;
}

/**
 * The connector file's subscription that shadows the stored subscription `stored`, or undefined.
 * Names are unique where they are addressed (as in a Kubernetes namespace), and the file's
 * declaration wins over the stored one (git-ops), which is then not run:
 * - the file declares the same consumer group (same owner and name): both cannot run in one group;
 * - `stored` belongs to the anonymous owner ({@link DEFAULT_OWNER}, every caller of a gateway
 *   without authentication) and a file declares a subscription of the same name under another
 *   owner: the anonymous caller addresses files' subscriptions by name too (GET, PATCH, DELETE,
 *   status), so two of one name would be one name for two subscriptions.
 * A partner's subscription is in the partner's own namespace: a file's of the same name under
 * another owner does not shadow it. `declared`: the files' subscriptions by consumer group.
 * Spec: docs/subscriptions.md "Subscriptions in connector files (git-ops)".
 */
export function shadowingFile(stored: Pick<StoredSubscription, 'name' | 'owner' | 'group'>, declared: ReadonlyMap<string, Pick<SubscriptionView, 'name' | 'owner' | 'group'>>): ShadowingFile | undefined {
  const same = declared.get(stored.group);
  const file = same ?? (stored.owner === DEFAULT_OWNER ? [...declared.values()].find((v) => v.name === stored.name) : undefined);
  if (file === undefined) return undefined;
  const reason =
    same !== undefined
      ? `a connector file declares subscription ${file.name} of the same owner (consumer group ${file.group}), and the file's wins: this one is not run; delete it, or rename one of them`
      : `a connector file declares subscription ${file.name} of owner ${file.owner} (consumer group ${file.group}), and names are unique for the anonymous owner: the file's wins, this one (owner ${stored.owner}) is not run; delete it, or rename one of them`;
  return { name: file.name, owner: file.owner, group: file.group, reason };
}

export interface SubscriptionServiceDeps {
  readonly store: SubscriptionStore;
  /** Undefined: no key on this gateway (push subscriptions cannot be created or run: CEG_SECRETS_KEY_MISSING). */
  readonly box: SecretBox | undefined;
  readonly catalog: Catalog;
  readonly transport: Transport;
  /** Checks a webhook URL (the sink's target rules). Errors: CEG_WEBHOOK_TARGET_REFUSED. */
  readonly checkTarget: (url: string) => Promise<void>;
  /** Subscriptions declared in connector files, by group (read-only over HTTP). */
  readonly declared?: () => ReadonlyMap<string, SubscriptionView>;
  /**
   * The short-form connectors (`kind: shell-hook` / `file-drop`) this process runs, as GET shows
   * them: listed, and addressed by name by the anonymous owner (an admin: `?owner=anonymous`),
   * read-only (PATCH and DELETE 409). Unlike `declared` they shadow no stored subscription: their
   * groups are their names, never an HTTP subscription's (`ce-gateway.sub.…`).
   */
  readonly connectors?: () => readonly SubscriptionView[];
  readonly now?: () => Date;
  /**
   * Whether `owner` may read `kind` now (the partners' `subscribe`, http/auth `ownerMayRead`);
   * absent: every owner may read every kind (no authentication). A PATCH leaving a kind the owner
   * may not read in `kinds` is refused (docs/security.md "Revoking a permission").
   */
  readonly mayRead?: (owner: string, kind: EventKind) => boolean;
  /**
   * The partners' ids (PARTNERS_FILE); absent without partners. A name that would take topics in
   * another partner's namespace is refused at create ({@link reachesAnotherPartner}).
   */
  readonly partners?: () => ReadonlySet<string>;
}

const IMMUTABLE = ['name', 'owner', 'start'] as const;
/**
 * What a GET shows that the gateway sets: ignored in a PATCH rather than refused, so the GET's body
 * can be sent back with a member changed (Google AIP-203, output-only fields; Kubernetes ignores
 * `status` in an update of the spec the same way).
 */
const OUTPUT_ONLY = ['group', 'deadLetterTopic', 'stateReason', 'createdAt', 'updatedAt', 'generation', 'replay', 'origin', 'forbiddenKinds', 'forbiddenReason', 'shadowedBy'] as const;
const OUTPUT_ONLY_DELIVERY = ['secretCount', 'headerNames'] as const;

/**
 * The fields a merge patch sets to null (each removes its member, RFC 7396), as {@link fieldPath}
 * writes them: a required one then fails as "expected string, received undefined" although the
 * client sent null, not nothing.
 */
function nullPaths(patch: unknown, path: readonly string[] = [], out = new Set<string>()): Set<string> {
  if (!isObject(patch) || path.length > 8) return out;
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) out.add(fieldPath([...path, k]));
    else nullPaths(v, [...path, k], out);
  }
  return out;
}

/** `patch` without the {@link OUTPUT_ONLY} members (and `delivery`'s). */
function withoutOutputOnly(patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = Object.fromEntries(Object.entries(patch).filter(([k]) => !(OUTPUT_ONLY as readonly string[]).includes(k)));
  if (isObject(out.delivery)) out.delivery = Object.fromEntries(Object.entries(out.delivery).filter(([k]) => !(OUTPUT_ONLY_DELIVERY as readonly string[]).includes(k)));
  return out;
}

function invalid(problems: readonly { field: string; reason: string }[]): GatewayError {
  return new GatewayError('CEG_INVALID_SUBSCRIPTION', `invalid subscription: ${problems.map((p) => `${p.field}: ${p.reason}`).join('; ')}`, {
    retriable: false,
    details: { field: problems[0]?.field ?? 'body', violations: problems },
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What `delivery` takes, said where it is missing. */
const DELIVERY_SHAPES = '{ "mode": "push", "url": "https://…" } (a webhook) or { "mode": "pull" } (GET …/events, …/stream)';

/**
 * The reason for a missing `delivery` or `delivery.mode`, or undefined when `field` is neither or
 * was given: zod's own texts there ("Invalid input: expected object, received undefined",
 * "Invalid discriminator value") name neither what the field takes nor how to write it, and a
 * first subscription without `delivery` is a likely first mistake. Pure.
 */
function missingDelivery(body: Record<string, unknown>, field: string): string | undefined {
  if (field === 'delivery' && body.delivery === undefined) return `required: ${DELIVERY_SHAPES}`;
  if (field === 'delivery.mode' && isObject(body.delivery) && body.delivery.mode === undefined) return 'required: push (a webhook, with delivery.url) or pull (the partner reads with GET …/events or …/stream)';
  return undefined;
}

/** Kinds named in the reason for an unknown kind; `GET /catalog` has the rest. */
const LISTED_KINDS = 10;

/**
 * The reason for an unknown entry of `kinds`: the kinds a subscription may name (business names,
 * at most {@link LISTED_KINDS}; an eventId is taken too) and where the full list is, as a
 * connector file's unknown kind and the ingress's unknown `type` (src/catalog/unknown-type.ts) are
 * answered; until 2026-12-07 the API said only `unknown event kind "X"`. Internal kinds are not named
 * (`GET /catalog` hides them too). The kind is quoted cut to 100 characters. Pure.
 */
function unknownKindReason(catalog: Pick<Catalog, 'kinds'>, kind: string): string {
  const kinds = catalog.kinds.filter((k) => !k.internal);
  const more = kinds.length > LISTED_KINDS ? `, and ${kinds.length - LISTED_KINDS} more` : '';
  // The form of connector files' and `tail`'s answer (src/connectors/loader/load.ts), bounded.
  return `unknown event kind ${JSON.stringify(kind.slice(0, 100))}; the catalog has ${kinds.slice(0, LISTED_KINDS).map((k) => k.name).join(', ')}${more} (business name or eventId; GET /catalog lists them)`;
}

/**
 * `headers` without the names a PATCH's `delivery.headers` names in another letter case: HTTP
 * header names are case-insensitive (RFC 9110 §5.1), so `{"x-token": null}` removes `X-Token` and
 * `{"x-token": "v"}` replaces it (the merge alone kept it, or refused the pair as a duplicate).
 */
function headersNotNamedIn(headers: Readonly<Record<string, string>>, patchHeaders: Readonly<Record<string, unknown>>): Record<string, string> {
  const named = new Set(Object.keys(patchHeaders).map((n) => n.toLowerCase()));
  return Object.fromEntries(Object.entries(headers).filter(([n]) => Object.hasOwn(patchHeaders, n) || !named.has(n.toLowerCase())));
}

/** RFC 7396 §2: objects merge member by member, `null` removes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export function viewOf(s: StoredSubscription, origin: 'api' | 'file' = 'api'): SubscriptionView {
  const d = s.delivery;
  return {
    name: s.name,
    owner: s.owner,
    group: s.group,
    deadLetterTopic: `${s.group}.dlq`,
    kinds: s.kinds,
    filters: s.filters,
    start: s.start,
    // A credential in the URL's query is shown masked, as the sink headers are not shown (issue 8).
    delivery: d.mode === 'pull' ? { mode: 'pull', data: d.data } : { mode: d.mode, url: maskedUrl(d.url), contentMode: d.contentMode, data: d.data, handshake: d.handshake, ...(d.batch === undefined ? {} : { batch: d.batch }), secretCount: d.secretCount, headerNames: d.headerNames },
    ordering: s.ordering,
    retry: s.retry,
    concurrency: s.concurrency,
    rateLimit: s.rateLimit,
    state: s.state,
    ...(s.stateReason === undefined ? {} : { stateReason: s.stateReason }),
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    generation: s.generation,
    ...(s.replay === undefined ? {} : { replay: replayStatus(s.replay, Date.now()) }),
    origin,
  };
}

export class SubscriptionService {
  readonly #d: SubscriptionServiceDeps;

  constructor(deps: SubscriptionServiceDeps) {
    this.#d = deps;
  }

  /** Opens the sealed secrets of a stored subscription (a pull subscription has none). Errors: CEG_INVALID_OPTIONS (wrong key, altered). */
  openSecrets(s: StoredSubscription): OpenedSecrets {
    if (s.delivery.mode === 'pull') return { secrets: [], headers: {} };
    const o = this.#box().open(s.delivery.sealed, s.group) as { secrets?: unknown; headers?: unknown };
    const secrets = Array.isArray(o.secrets) ? o.secrets.filter((x): x is string => typeof x === 'string') : [];
    const headers = isObject(o.headers) ? Object.fromEntries(Object.entries(o.headers).filter((e): e is [string, string] => typeof e[1] === 'string')) : {};
    return typeof (o as { url?: unknown }).url === 'string' ? { secrets, headers, url: (o as { url: string }).url } : { secrets, headers };
  }

  #box(): SecretBox {
    if (this.#d.box === undefined) throw secretsKeyMissing('this gateway is bound beyond loopback with Kafka and has no key to seal webhook secrets with');
    return this.#d.box;
  }

  /** Every subscription of `owner`; without one (no partner identities yet, issue 11), every subscription. */
  list(owner?: string): SubscriptionView[] {
    const api = [...this.#d.store.all().values()].filter((s) => owner === undefined || s.owner === owner).map((s) => this.#storedView(s));
    const files = [...(this.#d.declared?.().values() ?? []), ...(this.#d.connectors?.() ?? [])].filter((v) => owner === undefined || v.owner === owner);
    return [...api, ...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Errors: CEG_NOT_FOUND. */
  get(name: string, owner: string = DEFAULT_OWNER): SubscriptionView {
    const group = groupOf(owner, name);
    const s = this.#d.store.get(group);
    if (s !== undefined) return this.#storedView(s);
    const declared = this.#declaredNamed(name, owner);
    if (declared !== undefined) return declared;
    throw notFound(name);
  }

  /**
   * A file-declared subscription of `owner` by name. For the anonymous owner (a gateway without
   * authentication) also the one of that name under any owner (files name their own owner); an
   * authenticated partner sees only its own (issue 11: others' subscriptions are 404).
   */
  /**
   * Where the group of a stored subscription starts on partitions without a commit, as its
   * definition keeps them now (the live `startAt` of a kind added by PATCH: stored.ts
   * startPositionsOf); empty for an unknown group or one without any. For the status's lag.
   */
  startPositions(group: string): TopicPartitionOffset[] {
    return startPositionsOf(this.#d.store.get(group), Date.now());
  }

  /**
   * The connector file's subscription that shadows the stored one of consumer group `group`
   * ({@link shadowingFile}), or undefined (none, or no such stored subscription).
   */
  shadowedBy(group: string): ShadowingFile | undefined {
    const s = this.#d.store.get(group);
    const declared = this.#d.declared?.();
    return s === undefined || declared === undefined ? undefined : shadowingFile(s, declared);
  }

  /** A stored subscription's view, marked when a connector file shadows it. */
  #storedView(s: StoredSubscription): SubscriptionView {
    const declared = this.#d.declared?.();
    const shadow = declared === undefined ? undefined : shadowingFile(s, declared);
    return shadow === undefined ? viewOf(s) : { ...viewOf(s), shadowedBy: shadow };
  }

  #declaredNamed(name: string, owner: string): SubscriptionView | undefined {
    const all = this.#d.declared?.();
    const file = all === undefined ? undefined : (all.get(groupOf(owner, name)) ?? (owner === DEFAULT_OWNER ? [...all.values()].find((v) => v.name === name) : undefined));
    return file ?? this.#d.connectors?.().find((v) => v.owner === owner && v.name === name);
  }

  /**
   * Creates a subscription. Resolves with its view and, when the request had no secrets, the
   * generated one (to be returned once).
   * Concurrent creates of one name, on this or other instances: exactly one succeeds, the others
   * get CEG_CONFLICT (a claim on the definitions topic decides: {@link SubscriptionStore.claim}).
   * `maxSubscriptions` (the owner's quota, issue 11) is decided by the same claim, in the topic's
   * order: of simultaneous creates on any instances, only as many as leave the owner at or below
   * it succeed.
   * Errors: CEG_INVALID_SUBSCRIPTION (every problem, each naming its field), CEG_UNKNOWN_TYPE
   *   (not used: an unknown kind is a violation of `kinds`), CEG_FORBIDDEN (a kind its owner may not
   *   read: `mayRead`), CEG_WEBHOOK_TARGET_REFUSED, CEG_CONFLICT,
   *   CEG_QUOTA_EXCEEDED (retriable: false; `details.maxSubscriptions`), the transport's (retriable).
   */
  async create(body: unknown, owner: string = DEFAULT_OWNER, limits: { readonly maxSubscriptions?: number } = {}): Promise<{ view: SubscriptionView; generatedSecrets?: readonly string[] }> {
    if (isObject(body) && 'owner' in body) throw invalid([{ field: 'owner', reason: 'set by the gateway (the partner that creates the subscription)' }]);
    const req = this.#validate(body);
    if (this.#d.partners !== undefined && reachesAnotherPartner(owner, req.name, this.#d.partners())) {
      throw invalid([{ field: 'name', reason: "'_' is not available in this owner's names: another partner's namespace begins with this owner's id and '_', and Kafka treats '.' and '_' in topic names alike; use '-'" }]);
    }
    // The owner's permission, not the caller's: an admin creating for another owner included.
    this.#requireReadable(req.kinds, owner);
    const push = req.delivery.mode === 'push' ? req.delivery : undefined;
    if (push !== undefined) this.#box();
    const group = groupOf(owner, req.name);
    const file = this.#declaredNamed(req.name, owner);
    if (file !== undefined) {
      // The file's wins (shadowingFile): a stored one of its name would never run.
      throw new GatewayError('CEG_CONFLICT', `a connector file declares a subscription named ${req.name} (owner ${file.owner}, consumer group ${file.group}); change it there, or choose another name`, { retriable: false, details: { field: 'name' } });
    }
    if (this.#d.store.get(group) !== undefined) {
      throw new GatewayError('CEG_CONFLICT', `a subscription named ${req.name} exists already`, { retriable: false, details: { field: 'name' } });
    }
    // The quota after the body's own checks (a bad body is named whatever the count); the local
    // count is the fast answer, the claim below decides across instances.
    const max = limits.maxSubscriptions;
    if (max !== undefined && [...this.#d.store.all().values()].filter((s) => s.owner === owner).length >= max) throw quotaExceeded(owner, max);
    if (push !== undefined) await this.#d.checkTarget(push.url);
    const topics = this.#topics(req.kinds);
    // Check-and-set over every instance: the local look above is only a fast answer. Of two creates
    // of one name at the same moment (any instances) one claim wins; only the winner touches the
    // group's offsets and writes the definition.
    const claim = await this.#d.store.claim(group, undefined, max === undefined ? undefined : { owner, max });
    if (!claim.won) {
      await this.#d.store.release(claim).catch(() => undefined); // a claim left behind expires (CLAIM_TTL_MS)
      if (claim.refusal === 'quota') throw quotaExceeded(owner, max ?? 0);
      throw new GatewayError('CEG_CONFLICT', `a subscription named ${req.name} exists already (or is being created)`, { retriable: false, details: { field: 'name' } });
    }
    try {
      // A pull subscription never retries in the gateway (the client does): no retry topic.
      const withRetryTopic = push !== undefined && req.ordering === 'none';
      await this.#d.transport.ensureTopics(subscriptionTopics(group, withRetryTopic ? 'none' : 'key')).catch((err: unknown) => {
        // Another owner's subscription (or any topic) whose name differs only in '.' against '_'.
        if (!isGatewayError(err, 'CEG_CONFLICT')) throw err;
        throw new GatewayError('CEG_CONFLICT', `the name ${req.name} cannot be used: ${err.message}; choose another name`, { retriable: false, cause: err, details: { field: 'name', topic: err.details.topic } });
      });
      // The own topics start at their end: a re-created name never gets the old one's redriven
      // events (issue 10) nor its parked retries, which that one had delivered or dead-lettered
      // (a retry topic left from it is read under `ordering: key` too, while it exists).
      const retryFrom = withRetryTopic || (push !== undefined && (await topicExists(this.#d.transport, retryTopic(group))));
      await commitStart(this.#d.transport, group, topics, req.start, [...(retryFrom ? [[retryTopic(group), 'latest'] as const] : []), [redriveTopic(group), 'latest'] as const]);
      if (Date.now() - claim.atMs > CLAIM_WRITE_MS) {
        throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'creating the subscription took too long; nothing was created, try again', { retriable: true, details: { field: 'name' } });
      }
      const generated = push !== undefined && push.secrets === undefined ? [generateWebhookSecret()] : undefined;
      const now = (this.#d.now?.() ?? new Date()).toISOString();
      const stored = this.#seal(req, owner, group, generated ?? push?.secrets ?? [], push?.headers ?? {}, { createdAt: now, updatedAt: now, generation: 1, state: req.state });
      await this.#d.store.put(stored, undefined, claim);
      return { view: viewOf(stored), ...(generated === undefined ? {} : { generatedSecrets: generated }) };
    } catch (err) {
      await this.#d.store.release(claim).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Applies a JSON merge patch (RFC 7396). `name`, `owner`, `start` and `delivery.mode` cannot
   * change (sent with their current value, they are no change); header names in
   * `delivery.headers` match case-insensitively; `state` takes `active` or `paused` (`gone` is the gateway's); `delivery.secrets`
   * replaces the secrets (send old and new while rotating), `delivery.headers` merges (null removes).
   * A topic that `kinds` brings starts at its end as of this call (`latest`, as `start` is resolved at
   * create), on its partitions where the group has no commit yet (a commit stays where it is), before
   * this resolves: a pull subscription's group gets those offsets committed; a push subscription's
   * (whose group has live members, so Kafka refuses member-less commits) keeps them in its
   * definition (`startAt`), which the restarted members start from. Every event accepted after the
   * `200` is delivered.
   * Errors: CEG_NOT_FOUND, CEG_CONFLICT (declared in a file), CEG_INVALID_SUBSCRIPTION,
   *   CEG_FORBIDDEN (the resulting `kinds` keep a kind its owner may not read now: `mayRead`),
   *   CEG_WEBHOOK_TARGET_REFUSED (a changed URL), CEG_CONFLICT (retriable: the record
   *   changed elsewhere during each of its writes, record-write.ts), the transport's.
   */
  async update(name: string, sent: unknown, owner: string = DEFAULT_OWNER): Promise<SubscriptionView> {
    const group = groupOf(owner, name);
    const local = this.#d.store.get(group);
    if (local === undefined) {
      if (this.#declaredNamed(name, owner) !== undefined) throw fromFile(name);
      throw notFound(name);
    }
    if (!isObject(sent)) throw invalid([{ field: 'body', reason: 'a JSON merge patch is an object' }]);
    const patch = withoutOutputOnly(sent);
    // The patch is checked and its work done (target check, new kinds' start positions) on this
    // instance's copy, so a bad patch is answered before any write; the record is then built on the
    // newest one (record-write.ts): a change stored meanwhile — a replay's `done` above all, which
    // keeps the generation — is not undone by a record built on a copy without it. A change that
    // moved the generation (another PATCH, the gateway's own state) has the patch checked and
    // applied again on it. The replay state goes on as stored: a replay under way keeps its pause
    // through an update (issue 9), an ended one stays ended.
    let prepared = { on: local, record: await this.#patched(local, patch, owner, group) };
    let deleted = false;
    const written = await writeOnNewest(
      this.#d.store,
      group,
      async (newest) => {
        if (newest === undefined) {
          deleted = true; // a DELETE stored meanwhile stays: 404, as after it
          return undefined;
        }
        if (newest.generation !== prepared.on.generation || newest.createdAt !== prepared.on.createdAt) prepared = { on: newest, record: await this.#patched(newest, patch, owner, group) };
        return { ...prepared.record, generation: newest.generation + 1, ...(newest.replay === undefined ? {} : { replay: newest.replay }) };
      },
      { changedEachTime: () => changedEachTime(name) },
    );
    if (deleted || written === undefined) throw notFound(name);
    return this.#storedView(written);
  }

  /**
   * `patch` applied to `current` (see {@link update}): checked, the webhook target checked when the
   * URL changes, the start positions of topics new kinds bring resolved (committed for a pull
   * subscription), secrets sealed. The record to store, without `replay`, at generation
   * `current.generation + 1`. Errors: as {@link update}'s.
   */
  async #patched(current: StoredSubscription, patch: Record<string, unknown>, owner: string, group: string): Promise<StoredSubscription> {
    const problems: { field: string; reason: string }[] = IMMUTABLE.filter((f) => f in patch && patch[f] !== current[f]).map((f) => ({ field: f, reason: f === 'start' ? 'start applies when a subscription is created (to move a subscription, replay it)' : 'cannot change' }));
    if (isObject(patch.delivery) && 'mode' in patch.delivery && patch.delivery.mode !== current.delivery.mode) problems.push({ field: 'delivery.mode', reason: deliveryModeProblem(patch.delivery.mode) ?? 'cannot change (create a new subscription)' });
    if (patch.state === 'gone') problems.push({ field: 'state', reason: 'gone is set by the gateway when the sink answers 410; set active or paused' });
    // A merge patch's null removes a member; secrets are optional only at create (generated then):
    // a push subscription always signs, so "remove them" cannot be done (it was ignored in silence).
    if (isObject(patch.delivery) && patch.delivery.secrets === null) problems.push({ field: 'delivery.secrets', reason: 'secrets cannot be removed: every delivery is signed; send the new list to rotate them' });
    if (problems.length > 0) throw invalid(problems);
    const opened = this.openSecrets(current);
    const { state, stateReason: _r, v: _v, owner: _o, group: _g, createdAt: _c, updatedAt: _u, generation: _n, replay: _replay, startAt: storedStartAt, ...rest } = current;
    // The URL as given (a version 2 record stores it masked and sealed).
    const cd = current.delivery.mode === 'push' && opened.url !== undefined ? { ...current.delivery, url: opened.url } : current.delivery;
    const delivery = cd.mode === 'pull' ? { ...cd } : (({ secretCount: _sc, headerNames: _hn, sealed: _s, ...d }) => ({ ...d, secrets: opened.secrets, headers: opened.headers }))(cd);
    const patchHeaders = isObject(patch.delivery) && isObject(patch.delivery.headers) ? patch.delivery.headers : undefined;
    const kept = delivery.mode === 'push' && patchHeaders !== undefined ? { ...delivery, headers: headersNotNamedIn(delivery.headers, patchHeaders) } : delivery;
    const asInput = { ...rest, ...(state === 'gone' ? {} : { state }), delivery: kept };
    // `owner` is not a field of the definition's body (the gateway sets it): sent unchanged, it goes.
    const { owner: _po, ...unmasked } = patch;
    // The URL as GET shows it (query credentials masked) sent back means "unchanged", not "store the mask".
    const body = cd.mode === 'push' && isObject(unmasked.delivery) && unmasked.delivery.url !== cd.url && unmasked.delivery.url === maskedUrl(cd.url) ? { ...unmasked, delivery: { ...unmasked.delivery, url: cd.url } } : unmasked;
    const merged = mergePatch(asInput, body);
    // Filters the patch leaves alone are checked as stored (an empty exact value stored before it
    // was refused must not block every later PATCH: pause, URL, secrets); patched ones as new.
    const filtersPatched = 'filters' in body;
    const checked = this.#validate(filtersPatched || !isObject(merged) ? merged : { ...merged, filters: [] }, nullPaths(body), 'kinds' in body);
    const req = filtersPatched ? checked : { ...checked, filters: [...current.filters] };
    this.#requireReadable(req.kinds, owner);
    const push = req.delivery.mode === 'push' ? req.delivery : undefined;
    if (push !== undefined && (cd.mode !== 'push' || push.url !== cd.url)) await this.#d.checkTarget(push.url);
    const topics = this.#topics(req.kinds);
    // A topic that a new kind brings starts at its end as of now, as `latest` at create would
    // (start.ts), where the group has no commit on it yet (a kind removed and added again resumes).
    const before = new Set(topicsOfKinds(this.#d.catalog, current.kinds));
    const added = topics.filter((t) => !before.has(t));
    const positions = added.length > 0 ? await resolveStart(this.#d.transport, group, added, 'latest') : [];
    // Pull: no members, commit them now. Push: the group has live members (Kafka refuses member-less
    // commits), so the positions go into the definition; the members the reconciler restarts for
    // the new kinds start there (GroupSpec.startAt) and commit them at once.
    if (push === undefined && positions.length > 0) await commitPositions(this.#d.transport, group, positions);
    const takenAt = new Date().toISOString();
    const startAt: StoredStartAt[] = push === undefined ? [] : [
      // Kept while members may still need them (stored.ts, liveStartAt); older ones go.
      ...liveStartAt(storedStartAt, Date.now()).filter((p) => topics.includes(p.topic) && !added.includes(p.topic)),
      ...positions.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.offset.toString(), takenAt })),
    ];
    const nextState: SubscriptionState = patch.state === undefined ? current.state : req.state;
    const stored = this.#seal(req, owner, group, push?.secrets ?? opened.secrets, push?.headers ?? {}, {
      createdAt: current.createdAt,
      updatedAt: (this.#d.now?.() ?? new Date()).toISOString(),
      generation: current.generation + 1,
      state: nextState,
      ...(nextState === 'gone' && current.stateReason !== undefined ? { stateReason: current.stateReason } : {}),
    });
    return { ...stored, ...(startAt.length === 0 ? {} : { startAt }) };
  }

  /** Errors: CEG_NOT_FOUND, CEG_CONFLICT (declared in a file), the transport's. */
  async remove(name: string, owner: string = DEFAULT_OWNER): Promise<void> {
    const group = groupOf(owner, name);
    if (this.#d.store.get(group) === undefined) {
      if (this.#declaredNamed(name, owner) !== undefined) throw fromFile(name);
      throw notFound(name);
    }
    await this.#d.store.remove(group);
  }

  /**
   * Sets a subscription's state by the gateway's own decision (`gone` after a 410), with the reason,
   * on its newest record (record-write.ts: a change stored meanwhile, such as a replay's end, stays).
   * No-op when it is in that state already, deleted, or deleted and created again (the decision was
   * about the one that ran).
   * Errors: CEG_CONFLICT (retriable) when the record changed in between on each of its writes; the
   *   store's (CEG_BROKER_UNAVAILABLE, retriable).
   */
  async setState(group: string, state: SubscriptionState, reason: string): Promise<void> {
    const ran = this.#d.store.get(group);
    if (ran === undefined || ran.state === state) return;
    await writeOnNewest(
      this.#d.store,
      group,
      (newest) => (newest === undefined || newest.createdAt !== ran.createdAt || newest.state === state ? undefined : { ...newest, state, stateReason: reason.slice(0, 500), updatedAt: (this.#d.now?.() ?? new Date()).toISOString(), generation: newest.generation + 1 }),
      { changedEachTime: () => changedEachTime(ran.name) },
    );
  }

  /**
   * The kinds a subscription is created with, or keeps after a PATCH, must all be readable by its
   * owner now: a kind
   * whose `subscribe` permission was revoked blocks every PATCH that keeps it (the answer names
   * it), and a PATCH that takes it out of `kinds` goes through, so the owner can repair the
   * subscription. Checked against the owner (not the caller): an admin changing another owner's
   * subscription cannot give it a kind its owner may not read either.
   * Errors: CEG_FORBIDDEN (`permission: subscribe`, field `kinds[i]` of the first, `kinds` naming all).
   */
  #requireReadable(kinds: readonly string[], owner: string): void {
    const { refused } = splitReadable(this.#d.catalog, kinds, owner, this.#d.mayRead);
    if (refused.length === 0) return;
    const names = refused.map((r) => r.kind.name);
    throw new GatewayError('CEG_FORBIDDEN', `owner ${owner} may not read ${names.join(', ')} (subscribe permission, revoked or never held): the subscription's kinds must leave ${names.length === 1 ? 'it' : 'them'} out before anything else can change (PATCH kinds without ${names.length === 1 ? 'it' : 'them'}, or delete the subscription)`, {
      retriable: false,
      details: { permission: 'subscribe', field: `kinds[${refused[0]!.index}]`, kinds: names },
    });
  }

  /** `removed`: the fields a merge patch set to null (its problems say so, not "received undefined"). */
  /**
   * `kinds: true` checks the kinds as new (create, or a PATCH that sends `kinds`): a kind named
   * twice — the same text, or its business name and its eventId — is a problem at the later index.
   * A PATCH that leaves `kinds` alone checks them as stored (one stored before the rule must not
   * block every later PATCH: pause, URL, secrets).
   */
  #validate(body: unknown, removed: ReadonlySet<string> = new Set(), newKinds = true): CreateRequest {
    if (!isObject(body)) throw invalid([{ field: 'body', reason: 'a subscription is a JSON object' }]);
    const mode = isObject(body.delivery) ? body.delivery.mode : undefined;
    const modeProblem = deliveryModeProblem(mode);
    if (modeProblem !== undefined) throw invalid([{ field: 'delivery.mode', reason: modeProblem }]);
    const parsed = createSchema.safeParse(body);
    const problems = parsed.success
      ? []
      : schemaIssues(parsed.error.issues).flatMap((i) =>
          i.code === 'unrecognized_keys'
            ? i.keys.map((k) => ({ field: fieldPath([...i.path, k]), reason: 'unknown field' }))
            : [{ field: fieldPath(i.path), reason: i.code === 'invalid_type' && removed.has(fieldPath(i.path)) ? `required: null removes a field in a JSON merge patch (RFC 7396); send a ${i.expected} instead` : missingDelivery(body, fieldPath(i.path)) ?? i.message }],
        );
    // Every problem at once: unknown kinds too when other fields (or other kinds) are malformed.
    // Only as many as a subscription may have: a body of thousands is one "too many" problem, not
    // thousands of look-ups and problems.
    const kinds: unknown[] = parsed.success ? parsed.data.kinds : Array.isArray(body.kinds) ? body.kinds.slice(0, MAX_KINDS) : [];
    const flagged = new Set(problems.map((p) => p.field));
    // A kind listed twice is refused, not dropped in silence: the list is the resource (GET answers
    // it as sent), and a repeat is most often a slip for another kind. Kubernetes answers a repeated
    // entry of a set-like list alike ("Duplicate value"); OpenAPI: uniqueItems.
    // The rule of the library and the CLI (catalog/lookup repeatedKinds); an entry already flagged is left out of it.
    const unflagged = kinds.map((k, i) => (flagged.has(`kinds[${i}]`) ? undefined : k));
    const repeats = new Map(newKinds ? repeatedKinds(this.#d.catalog, unflagged).map((r) => [r.index, r] as const) : []);
    unflagged.forEach((k, i) => {
      if (typeof k !== 'string') return;
      const repeat = repeats.get(i);
      if (kindOf(this.#d.catalog, k) === undefined) problems.push({ field: `kinds[${i}]`, reason: unknownKindReason(this.#d.catalog, k) });
      else if (repeat !== undefined) problems.push({ field: `kinds[${i}]`, reason: repeatedKindReason(unflagged, repeat) });
    });
    if (!parsed.success || problems.length > 0) throw invalid(problems);
    return parsed.data;
  }

  #topics(kinds: readonly string[]): string[] {
    const topics = new Set<string>();
    for (const k of kinds) {
      const kind = kindOf(this.#d.catalog, k);
      if (kind === undefined) throw invalid([{ field: 'kinds', reason: `unknown event kind "${k}"` }]);
      topics.add(kind.topic.name);
    }
    return [...topics];
  }

  #seal(req: CreateRequest, owner: string, group: string, secrets: readonly string[], headers: Readonly<Record<string, string>>, meta: { createdAt: string; updatedAt: string; generation: number; state: SubscriptionState; stateReason?: string }): StoredSubscription {
    const d = req.delivery;
    // Credentials in the webhook URL's query are sealed with the other secrets; the record shows the
    // URL as GET does. Without any, the record stays version 1 (readable by older gateways).
    const shownUrl = d.mode === 'push' ? maskedUrl(d.url) : undefined;
    const sealUrl = d.mode === 'push' && shownUrl !== d.url;
    return {
      v: sealUrl ? 2 : 1,
      name: req.name,
      owner,
      group,
      kinds: req.kinds,
      filters: req.filters,
      start: req.start,
      ordering: req.ordering,
      retry: req.retry,
      concurrency: req.concurrency,
      rateLimit: req.rateLimit,
      state: meta.state,
      ...(meta.stateReason === undefined ? {} : { stateReason: meta.stateReason }),
      delivery:
        d.mode === 'pull'
          ? { mode: 'pull', data: d.data }
          : {
              mode: 'push',
              url: shownUrl ?? d.url,
              contentMode: d.contentMode,
              data: d.data,
              handshake: d.handshake,
              ...(d.batch === undefined ? {} : { batch: d.batch }),
              secretCount: secrets.length,
              headerNames: Object.keys(headers),
              sealed: this.#box().seal(sealUrl ? { secrets, headers, url: d.url } : { secrets, headers }, group),
            },
      createdAt: meta.createdAt,
      updatedAt: meta.updatedAt,
      generation: meta.generation,
    };
  }
}

function notFound(name: string): GatewayError {
  return new GatewayError('CEG_NOT_FOUND', `no subscription named ${name.slice(0, 100)}`, { retriable: false, details: { field: 'name' } });
}

/** A change of subscription `name` that found its record changed by another writer on each of its writes: 409, retriable (send it again). */
function changedEachTime(name: string): GatewayError {
  return new GatewayError('CEG_CONFLICT', `subscription ${name.slice(0, 100)} was changed elsewhere during each of ${MAX_RECORD_WRITES} writes of this change; send it again`, { retriable: true, details: { field: 'name' } });
}

function fromFile(name: string): GatewayError {
  return new GatewayError('CEG_CONFLICT', `subscription ${name} is declared in a connector file; change it there`, { retriable: false, details: { field: 'name' } });
}

/**
 * `owner` has `max` subscriptions already (issue 11 `maxSubscriptions`): 403 CEG_QUOTA_EXCEEDED
 * (retriable: false) naming the bound in `details.maxSubscriptions`.
 */
export function quotaExceeded(owner: string, max: number): GatewayError {
  return new GatewayError('CEG_QUOTA_EXCEEDED', `partner ${owner} has ${max} subscriptions already (maxSubscriptions); delete one first`, { retriable: false, details: { maxSubscriptions: max } });
}
