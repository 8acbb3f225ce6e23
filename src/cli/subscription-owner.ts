/**
 * Who serves a consumer group, as the CLI commands that write to a subscription's own topics
 * (`deadletters redrive` to `<group>.redrive`, `deadletters purge` to `<group>.dlq.state`) must
 * know before they write: the HTTP routes answer 404 for a subscription that does not exist, and
 * the CLI, which reads Kafka directly, has to ask the same question itself. Otherwise a redrive of
 * a deleted subscription marks its dead letters redriven onto a redrive topic nothing reads, and
 * a subscription re-created under that name never gets them (it starts at that topic's end) nor
 * can redrive them again ("redriven already").
 *
 * A group is served when one of these owns it:
 * - a stored subscription: a definition on the compacted definitions topic (SUBSCRIPTIONS_TOPIC),
 *   read the way every gateway loads it (SubscriptionStore), without creating the topic;
 * - a connector file of CONNECTORS_DIR (a `kind: subscription` file, or a shell-hook/file-drop
 *   connector, enabled or not: its group keeps its offsets);
 * - a live consumer group: members joined now (a library subscriber, `ce-gateway subscribe`…).
 * Spec: issue 10 ("redrive to that subscription only"); tester report F2.
 */
import type { Gateway } from '../app/index.js';
import { SubscriptionStore } from '../bus/subscriptions/index.js';
import type { Config } from '../config/index.js';
import { loadConnectors } from '../connectors/index.js';
import { topicMissing } from '../transport/topics.js';
import { GatewayError, errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/index.js';

/** What owns a group. */
export type GroupOwner =
  | { readonly by: 'stored'; readonly name: string; readonly owner: string; readonly pull: boolean; readonly state: string }
  | { readonly by: 'file'; readonly file: string }
  | { readonly by: 'members'; readonly members: number; readonly state: string };

/** The answer: the owner found, or none with what was looked at (for the refusal's message). */
export interface OwnerCheck {
  readonly owner?: GroupOwner;
  /** One line per place looked at, e.g. `not stored on ce-gateway.subscriptions`. */
  readonly looked: readonly string[];
}

// As the transport says it (transport/topics.ts topicMissing), not any CEG_INVALID_NAME.
const missingTopic = topicMissing;

/** The stored definition of `group` on the definitions topic, read once to its end; undefined when none (or no such topic: nothing is created). */
async function stored(gw: Gateway, topic: string, group: string, log: Logger): Promise<GroupOwner | undefined> {
  const exists = await gw.transport.partitionCount(topic).then(
    () => true,
    (err: unknown) => {
      if (missingTopic(err)) return false;
      throw err;
    },
  );
  if (!exists) return undefined;
  const store = new SubscriptionStore(gw.transport, topic, log);
  try {
    await store.start();
    const s = store.get(group);
    return s === undefined ? undefined : { by: 'stored', name: s.name, owner: s.owner, pull: s.delivery.mode === 'pull', state: s.state };
  } finally {
    await store.stop();
  }
}

/**
 * The owners of the subscriptions stored under `name` on the definitions topic `topic` (sorted),
 * for a CLI that looked for `name` under the wrong owner: partner subscriptions are groups
 * `ce-gateway.sub.<owner>.<name>`, and the CLI, which has no caller, assumes `anonymous` unless
 * told `--owner`. Empty when none, or when the topic does not exist (nothing is created).
 * Errors: the transport's (CEG_BROKER_UNAVAILABLE …).
 */
export async function ownersOfName(gw: Gateway, topic: string, name: string, log: Logger): Promise<string[]> {
  const exists = await gw.transport.partitionCount(topic).then(
    () => true,
    (err: unknown) => {
      if (missingTopic(err)) return false;
      throw err;
    },
  );
  if (!exists) return [];
  const store = new SubscriptionStore(gw.transport, topic, log);
  try {
    await store.start();
    return [...store.all().values()].filter((s) => s.name === name).map((s) => s.owner).sort();
  } finally {
    await store.stop();
  }
}

/** The connector file of CONNECTORS_DIR that declares `group`. Errors: CEG_INVALID_OPTIONS for a folder `serve` would refuse too. */
function declared(gw: Gateway, dir: string, group: string): GroupOwner | undefined {
  const d = loadConnectors(dir, { catalog: gw.catalog }).find((c) => c.subscription === group);
  return d === undefined ? undefined : { by: 'file', file: d.file };
}

/**
 * The group's members on the broker now (Kafka DescribeGroups), asked through the gateway's own
 * transport (Transport.groupMembers: the client and connection settings `serve` would use).
 * Errors: the transport's (CEG_BROKER_UNAVAILABLE …).
 */
async function members(gw: Gateway, group: string): Promise<GroupOwner | undefined> {
  try {
    const g = await gw.transport.groupMembers(group);
    return g === undefined ? undefined : { by: 'members', members: g.members, state: g.state };
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code === 'CEG_CLOSED') throw err;
    throw new GatewayError(err.code, `cannot describe consumer group ${group}: ${errorMessage(err)}`, { retriable: err.retriable, cause: err, details: { ...err.details, group } });
  }
}

/**
 * Who owns `group`: a stored subscription, a connector file, or live members, looked up in that
 * order (the first found answers). Nothing is written.
 * Errors: the transport's (CEG_BROKER_UNAVAILABLE …); a connectors folder that does not load is
 *   not an error: it is named in `looked` (a `serve` on it would not start either).
 */
export async function ownerOfGroup(gw: Gateway, config: Config, group: string, log: Logger): Promise<OwnerCheck> {
  const looked: string[] = [];
  const topic = config.subscriptions.topic;
  const s = await stored(gw, topic, group, log);
  if (s !== undefined) return { owner: s, looked };
  looked.push(`no definition on the subscriptions topic ${topic} (SUBSCRIPTIONS_TOPIC)`);
  if (config.connectorsDir === undefined) looked.push('no CONNECTORS_DIR set');
  else {
    try {
      const f = declared(gw, config.connectorsDir, group);
      if (f !== undefined) return { owner: f, looked };
      looked.push(`no connector file in ${config.connectorsDir} (CONNECTORS_DIR)`);
    } catch (err) {
      looked.push(`the connector files of ${config.connectorsDir} do not load (${errorMessage(err).slice(0, 300)})`);
    }
  }
  if (config.kafka === undefined) looked.push('no live members looked for (KAFKA_BROKERS is not set)');
  else {
    const m = await members(gw, group);
    if (m !== undefined) return { owner: m, looked };
    looked.push('no live member in the consumer group');
  }
  return { looked };
}
