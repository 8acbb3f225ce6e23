/**
 * The connector file format (`connectors/*.yaml`): one connector per file, its kind, the
 * durable subscription it runs under, the event kinds it takes, its retry policy and its sink's
 * settings. Unknown keys are errors (a typo never silently falls back to a default).
 * Spec: DESIGN "Connectors"; bus spec S1 (subscription name = durable key), S5 (bounded retries
 * with backoff), "Migration Path".
 */
import { z } from 'zod';
import { NAME_PATTERN, batchSchema, commonFields, fileFiltersSchema, retrySchema as resourceRetrySchema } from '../../bus/subscriptions/index.js';
import { envNameProblem, subscriptionNameProblem } from '../names.js';
import { fileDropSettingsSchema } from '../sinks/file-drop/index.js';
import { shellHookSettingsSchema } from '../sinks/shell-hook/index.js';

/** Kinds of connector a file may declare: the two short forms, and a subscription resource (any sink type). */
export const connectorKinds = ['shell-hook', 'file-drop', 'subscription'] as const;
export type ConnectorKind = (typeof connectorKinds)[number];

/** Retry defaults: 5 attempts, 1 s doubling to at most 60 s, 20 % jitter. */
export const DEFAULT_RETRY = Object.freeze({ maxAttempts: 5, initialMs: 1000, factor: 2, maxMs: 60_000, jitter: 0.2 });

const backoffSchema = z
  .strictObject({
    /** First delay, ms. */
    initialMs: z.number().int().min(0).max(3_600_000).default(DEFAULT_RETRY.initialMs),
    /** Growth per attempt. */
    factor: z.number().min(1).max(10).default(DEFAULT_RETRY.factor),
    /** Largest delay, ms. */
    maxMs: z.number().int().min(0).max(3_600_000).default(DEFAULT_RETRY.maxMs),
    /** 0 = none … 1 = full jitter. */
    jitter: z.number().min(0).max(1).default(DEFAULT_RETRY.jitter),
  })
  .refine((b) => b.maxMs >= b.initialMs, { message: 'maxMs must be ≥ initialMs', path: ['maxMs'] });

const retrySchema = z.strictObject({
  /** Attempts in all, the first included; then the event is dead-lettered to `<subscription>.dlq`. */
  maxAttempts: z.number().int().min(1).max(1000).default(DEFAULT_RETRY.maxAttempts),
  backoff: backoffSchema.prefault({}),
});

const subscriptionName = z.string().superRefine((name, ctx) => {
  const problem = subscriptionNameProblem(name);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

const common = {
  /** Free text for operators. */
  description: z.string().max(2000).optional(),
  /** `false`: validated but never started. */
  enabled: z.boolean().default(true),
  /** Durable subscription name (consumer group); its dead letters go to `<subscription>.dlq`. */
  subscription: subscriptionName,
  /** Event kinds by business name or eventId. */
  kinds: z.array(z.string().regex(/^[A-Za-z0-9._-]{1,200}$/, 'an event kind: business name or eventId')).min(1, 'at least one event kind'),
  /** Where a new subscription starts (one with committed offsets resumes). */
  startFrom: z.enum(['latest', 'earliest']).default('latest'),
  /** `key` (default): per-key order kept, retries in place (holding back only their partition); `none`: retries via `<subscription>.retry`. */
  ordering: z.enum(['key', 'none']).default('key'),
  retry: retrySchema.prefault({}),
};

const envName = z.string().superRefine((name, ctx) => {
  const problem = envNameProblem(name);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

/** Owner of subscriptions declared in files unless they name one. */
export const FILE_OWNER = 'connectors';

/**
 * `kind: subscription`: the resource of `POST /subscriptions` (issue 8) declared in a file (git-ops),
 * with any sink type. Push secrets and sink headers come from the environment (`secretsFromEnv`,
 * `headersFromEnv`): a file in git never holds them.
 */
const subscriptionFile = z.strictObject({
  kind: z.literal('subscription'),
  description: common.description,
  enabled: common.enabled,
  name: commonFields.name,
  owner: z.string().regex(NAME_PATTERN, '1–100 characters of [A-Za-z0-9_-]').default(FILE_OWNER),
  kinds: common.kinds,
  filters: fileFiltersSchema,
  /** For a group without committed offsets (the first start). */
  start: z.enum(['latest', 'earliest']).default('latest'),
  ordering: common.ordering,
  retry: resourceRetrySchema.prefault({}),
  concurrency: commonFields.concurrency,
  rateLimit: commonFields.rateLimit,
  state: commonFields.state,
  delivery: z.discriminatedUnion('mode', [
    z.strictObject({
      mode: z.literal('push'),
      url: z.string().min(1).max(2048),
      contentMode: z.enum(['binary', 'structured']).default('binary'),
      data: z.enum(['json', 'avro']).default('json'),
      handshake: z.boolean().default(true),
      /** Batched content mode (opt-in), as `delivery.batch` of the HTTP resource. */
      batch: batchSchema.optional(),
      /** Environment variables holding the one or two `whsec_` secrets. */
      secretsFromEnv: z.array(envName).min(1).max(2),
      /** Request header → environment variable holding its value (e.g. `Authorization: PARTNER_TOKEN`). */
      headersFromEnv: z.record(z.string(), envName).default({}),
    }),
    z.strictObject({ mode: z.literal('shell-hook'), sink: shellHookSettingsSchema }),
    z.strictObject({ mode: z.literal('file-drop'), sink: fileDropSettingsSchema }),
  ]),
});

/** Schema of one connector file. */
export const connectorFileSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('shell-hook'), ...common, sink: shellHookSettingsSchema }),
  z.strictObject({ kind: z.literal('file-drop'), ...common, sink: fileDropSettingsSchema }),
  subscriptionFile,
]);

/** A connector file as written. */
export type ConnectorFile = z.input<typeof connectorFileSchema>;
/** A connector file after validation and defaults. */
export type ParsedConnectorFile = z.output<typeof connectorFileSchema>;
