/**
 * Range assignment of one topic's partitions to the members subscribed to it, sorted by member id:
 * each gets ⌊n/m⌋ consecutive partitions and the first n mod m members one more.
 * Spec: Apache Kafka `RangeAssignor` (the Java consumer's default assignor).
 */
export function rangeAssign(memberIds: readonly string[], partitions: number): Map<string, number[]> {
  const sorted = [...memberIds].sort();
  const out = new Map<string, number[]>(sorted.map((id) => [id, []]));
  if (sorted.length === 0) return out;
  const per = Math.floor(partitions / sorted.length);
  const extra = partitions % sorted.length;
  let next = 0;
  sorted.forEach((id, i) => {
    const n = per + (i < extra ? 1 : 0);
    for (let k = 0; k < n; k++) out.get(id)!.push(next++);
  });
  return out;
}
