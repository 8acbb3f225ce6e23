/**
 * A time as Kafka's ListOffsets takes it. Record timestamps are never negative (Kafka refuses
 * them on produce), so a time before 1970-01-01T00:00:00Z is before every record and means the
 * same as 0: the earliest offset with a record. Sent as is, it would collide with ListOffsets'
 * special values (KIP-79, KIP-734: -1 latest, -2 earliest, -3 max timestamp) or be refused by the
 * broker. Shape: epoch ms in, epoch ms ≥ 0 out (an integer).
 */
export function listOffsetsTime(timestampMs: number): number {
  return timestampMs < 0 ? 0 : Math.trunc(timestampMs);
}
