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
