/**
 * Name rules of the catalog: event ids, business names, topic collisions and registry subjects
 * (the topic-name rule itself is `core/topic-name.ts`).
 * Spec: DESIGN "Kafka mapping" (subject naming strategies as Confluent names them); Kafka
 * `Topic.validate` (`.` and `_` collide); RFC 9562 §4 (UUID text form).
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const BUSINESS_NAME = /^[A-Z][A-Za-z0-9]{0,127}$/;
const OWNER = /^[a-z][a-z0-9-]{0,62}$/;

/** true for a lowercase RFC 9562 UUID (versions 1–8, RFC variant). */
export function isEventId(value: string): boolean {
  return UUID.test(value);
}

/** true for a PascalCase business name (letters and digits, ≤ 128 chars). */
export function isBusinessName(value: string): boolean {
  return BUSINESS_NAME.test(value);
}

/** true for an owner service name: lowercase letters, digits, `-`. */
export function isOwnerName(value: string): boolean {
  return OWNER.test(value);
}

/** Kafka treats `.` and `_` as colliding in metric names; two topics equal under that map collide. */
export function topicCollisionKey(name: string): string {
  return name.replaceAll('.', '_');
}

/** Confluent TopicNameStrategy: `<topic>-value`. */
export function topicNameSubject(topic: string): string {
  return `${topic}-value`;
}

/** Confluent TopicRecordNameStrategy: `<topic>-<fully qualified record name>`. */
export function topicRecordNameSubject(topic: string, recordFullName: string): string {
  return `${topic}-${recordFullName}`;
}
