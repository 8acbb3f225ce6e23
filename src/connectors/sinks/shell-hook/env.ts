/**
 * The environment of a hook process, built from nothing: PATH, the connector's configured
 * variables, the delivery (`CEG_*`) and every CloudEvents attribute as `CE_<NAME>` (uppercase).
 * The gateway's own environment — and so its secrets — never reaches a hook, except variables a
 * connector names in `passEnv` that do not look like secrets.
 * Spec: CloudEvents 1.0.2 §3.1.1 (attribute names are [a-z0-9], so `CE_<NAME>` is a portable
 * variable name); bus spec M2 (correlationid is the chain's id), "Migration Path".
 */
import type { DeliveryContext } from '../../../bus/subscriber/index.js';
import { canonicalString } from '../../../envelope/index.js';
import type { Envelope } from '../../../envelope/types.js';
import { refuse } from '../../outcome.js';

/** Largest value of one `CE_*` variable, bytes (Linux refuses a single string over 128 KiB). */
export const MAX_ENV_VALUE_BYTES = 32_768;
const ATTRIBUTE_NAME = /^[a-z0-9]{1,64}$/;

/** What a hook's environment is made of besides the event. */
export interface HookEnvSettings {
  /** PATH of the hook. */
  readonly path: string;
  /** Configured variables (already checked: names, no NUL, not PATH, not CE_/CEG_). */
  readonly vars: Readonly<Record<string, string>>;
}

/**
 * The complete environment for one delivery:
 * - configured variables, then `PATH`;
 * - `CEG_SUBSCRIPTION`, `CEG_TOPIC`, `CEG_PARTITION`, `CEG_OFFSET`, `CEG_ATTEMPT` (1, 2, … per retry);
 * - `CE_<NAME>` = canonical string of every attribute present (`CE_ID`, `CE_TYPE`, `CE_SOURCE`,
 *   `CE_TIME`, `CE_SUBJECT`, `CE_EVENTNAME`, `CE_PARTITIONKEY`, `CE_CAUSATIONID`, extensions…);
 *   `CE_CORRELATIONID` is always set: the event's `correlationid`, or its `id` when it starts a chain
 *   (as the subscriber's correlation context does).
 * Throws: GatewayError CEG_SINK_FAILED, retriable false (dead letter) when an attribute value
 *   contains NUL or exceeds {@link MAX_ENV_VALUE_BYTES}; details `{ attribute }`.
 */
export function buildHookEnv(event: Envelope, delivery: DeliveryContext, settings: HookEnvSettings): Record<string, string> {
  const env: Record<string, string> = { ...settings.vars, PATH: settings.path };
  env.CEG_SUBSCRIPTION = delivery.subscription;
  env.CEG_TOPIC = delivery.topic;
  env.CEG_PARTITION = String(delivery.partition);
  env.CEG_OFFSET = delivery.offset.toString();
  env.CEG_ATTEMPT = String(delivery.attempt);
  const attrs = event.attributes;
  for (const name in attrs) {
    const v = attrs[name];
    // Attribute names are [a-z0-9] after envelope validation; anything else never becomes a variable.
    if (v === undefined || !ATTRIBUTE_NAME.test(name)) continue;
    const text = canonicalString(v);
    if (text.includes('\0')) refuse(`attribute ${name} contains NUL and cannot be passed to a hook as CE_${name.toUpperCase()}`, { attribute: name });
    if (text.length > MAX_ENV_VALUE_BYTES / 3 && Buffer.byteLength(text, 'utf8') > MAX_ENV_VALUE_BYTES) {
      refuse(`attribute ${name} is longer than ${MAX_ENV_VALUE_BYTES} bytes and cannot be passed to a hook as CE_${name.toUpperCase()}`, { attribute: name });
    }
    env[`CE_${name.toUpperCase()}`] = text;
  }
  if (env.CE_CORRELATIONID === undefined) env.CE_CORRELATIONID = attrs.id;
  return env;
}
