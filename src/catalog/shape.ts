/**
 * The YAML shape of `schemas/catalog.yaml`, checked with zod before any semantic check.
 * Spec: DESIGN "The model is the schema registry".
 */
import { z } from 'zod';
import { compatibilityLevels } from '../registry/port.js';

const cleanupPolicy = z.enum(['delete', 'compact', 'compact,delete']);

const topicSettings = z.strictObject({
  partitions: z.number().int().min(1).max(10_000),
  /** -1 = forever */
  retentionMs: z.number().int().min(-1),
  cleanupPolicy,
  maxMessageBytes: z.number().int().min(1).optional(),
});

const kind = z.strictObject({
  eventId: z.string(),
  name: z.string(),
  description: z.string().min(1),
  topic: z.string(),
  schema: z.string().min(1),
  key: z.array(z.string().min(1)).min(1),
  class: z.enum(['notification', 'document']).optional(),
  maxDataBytes: z.number().int().min(1).optional(),
  publish: z.boolean(),
  /** Issue 11: never accepted over HTTP; offered to partners only with an explicit permission. */
  internal: z.boolean().optional(),
  owner: z.string().min(1),
  compatibility: z.enum(compatibilityLevels).optional(),
});

/** The raw catalog document. */
export const catalogDocument = z.strictObject({
  version: z.literal(1),
  defaults: z
    .strictObject({
      compatibility: z.enum(compatibilityLevels).optional(),
      class: z.enum(['notification', 'document']).optional(),
      maxDataBytes: z.number().int().min(1).optional(),
      topic: topicSettings.optional(),
    })
    .optional(),
  topics: z.record(z.string(), topicSettings).optional(),
  kinds: z.array(kind).min(1),
});

export type CatalogDocument = z.infer<typeof catalogDocument>;
export type TopicSettings = z.infer<typeof topicSettings>;
export type KindDocument = z.infer<typeof kind>;
