/**
 * The one Kafka topic-name rule of the project: the catalog, the transports (both adapters), the
 * subscriber's retry and dead-letter topics and the connectors' names all check names here, so
 * nothing reserved or foreign can become a topic (no injection of Kafka's internal topics).
 * Spec: Apache Kafka `org.apache.kafka.common.internals.Topic.validate` (legal characters
 *   [a-zA-Z0-9._-], at most 249 characters, not `.` or `..`); Kafka's internal topics
 *   (`__consumer_offsets`, `__transaction_state`, `__cluster_metadata`…) start with `__`, and
 *   this project refuses that prefix too; DESIGN "Kafka mapping" (strict charset check).
 */
import { GatewayError } from './errors.js';

/** Longest legal Kafka topic name, characters. */
export const MAX_TOPIC_NAME_LENGTH = 249;

const LEGAL = /^[a-zA-Z0-9._-]+$/;
/** Characters of a name quoted in an error. */
const SHOWN = 80;

/** Why `name` cannot be a topic of this project, or undefined when it can. */
export function topicNameProblem(name: string): string | undefined {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_TOPIC_NAME_LENGTH || !LEGAL.test(name)) {
    return `topic names are 1–${MAX_TOPIC_NAME_LENGTH} characters of [a-zA-Z0-9._-]`;
  }
  if (name === '.' || name === '..') return "topic names cannot be '.' or '..'";
  if (name.startsWith('__')) return "topic names starting with '__' are reserved for Kafka's internal topics";
  return undefined;
}

/**
 * Throws unless `name` is a legal, non-internal Kafka topic name.
 * Errors: CEG_INVALID_NAME (retriable: false), details `{ topic, reason }` (the name cut to 80
 *   characters).
 */
export function assertTopicName(name: string): void {
  const reason = topicNameProblem(name);
  if (reason === undefined) return;
  const text = String(name);
  const topic = text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text;
  throw new GatewayError('CEG_INVALID_NAME', `invalid topic name ${JSON.stringify(topic)}: ${reason}`, { retriable: false, details: { topic, reason } });
}

/**
 * The name Kafka compares new topics by: `.` and `_` count as the same character, so
 * `a.b_c` and `a_b.c` cannot both exist (Kafka `Topic.unifyCollisionChars`, CreateTopics answers
 * INVALID_TOPIC_EXCEPTION for the second). Pure.
 */
export function collisionKey(name: string): string {
  return name.replaceAll('.', '_');
}

/**
 * Throws when a topic to create collides with an existing one under {@link collisionKey} (and is
 * not that topic). Both adapters and the in-memory transport check this before creating, so the
 * refusal is the same everywhere and says why (Kafka's own answer names neither topic).
 * Errors: CEG_CONFLICT (retriable: false), details `{ topic, reason }`: `topic` the one wanted; the
 *   existing one is not named (it may be another tenant's).
 */
export function assertNoCollision(wanted: readonly string[], existing: Iterable<string>): void {
  const keys = new Map<string, string>();
  for (const name of existing) keys.set(collisionKey(name), name);
  for (const name of wanted) {
    const other = keys.get(collisionKey(name));
    if (other !== undefined && other !== name) throw topicCollision(name);
    keys.set(collisionKey(name), name);
  }
}

/**
 * The refusal of {@link assertNoCollision}, also for Kafka's own INVALID_TOPIC_EXCEPTION to a
 * CreateTopics of a name that passed {@link topicNameProblem} when the names do collide (another
 * creator got there first; see {@link invalidTopicRefusal}).
 */
export function topicCollision(name: string): GatewayError {
  const reason = "another topic's name differs from it only in '.' against '_', which Kafka treats as the same character";
  return new GatewayError('CEG_CONFLICT', `topic ${name} cannot be created: ${reason}`, { retriable: false, details: { topic: name, reason } });
}

/**
 * What Kafka's INVALID_TOPIC_EXCEPTION to a CreateTopics of `names` (names that passed
 * {@link topicNameProblem} and {@link assertNoCollision} just before) is, decided on the topics
 * that exist now (`existing`, listed again after the refusal): a '.'/'_' collision only when one of
 * them has the {@link collisionKey} of a name and is not that name (another creator got there
 * first) → {@link topicCollision}; otherwise the broker's refusal as it is, never called a
 * collision. `names`: the topics the broker refused, or every topic of the request when its answer
 * did not say which. Pure.
 * Errors (returned, not thrown): CEG_CONFLICT as {@link topicCollision}; else CEG_INVALID_NAME
 *   (retriable: false), message and `reason` with the broker's own message, details
 *   `{ topic, reason, kafkaType: 'INVALID_TOPIC_EXCEPTION' }` (`topic` the first of `names`).
 */
export function invalidTopicRefusal(names: readonly string[], existing: Iterable<string>, brokerMessage: string | undefined, cause?: unknown): GatewayError {
  const keys = new Map<string, string[]>();
  for (const t of existing) {
    const k = collisionKey(t);
    const same = keys.get(k);
    if (same === undefined) keys.set(k, [t]);
    else same.push(t);
  }
  for (const name of names) {
    if ((keys.get(collisionKey(name)) ?? []).some((t) => t !== name)) return topicCollision(name);
  }
  const first = names[0] ?? '(unknown)';
  const which = names.length > 1 ? `one of the topics ${names.join(', ')}` : `topic ${first}`;
  const said = brokerMessage === undefined || brokerMessage.trim() === '' ? 'the request attempted to perform an operation on an invalid topic' : brokerMessage.trim();
  const reason = `the broker refused the name (INVALID_TOPIC_EXCEPTION: ${said}); no existing topic collides with it in '.' against '_'`;
  return new GatewayError('CEG_INVALID_NAME', `${which} cannot be created: ${reason}`, { retriable: false, ...(cause === undefined ? {} : { cause }), details: { topic: first, reason, kafkaType: 'INVALID_TOPIC_EXCEPTION' } });
}
