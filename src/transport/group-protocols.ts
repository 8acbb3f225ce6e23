/**
 * The partition assignment protocols a consumer group member offers when it joins, the same on
 * both Kafka adapters, so gateway instances on different `KAFKA_CLIENT`s (a rolling switch of the
 * client, a mixed deployment) are members of one group and share its partitions.
 *
 * Kafka's classic group protocol (JoinGroup, KIP-62 era consumer protocol): the coordinator picks
 * a protocol every member offers; a member offering none in common with the group is refused
 * (INCONSISTENT_GROUP_PROTOCOL, "The group member's supported protocols are incompatible with
 * those of existing members") and never gets a partition. kafkajs names its round robin
 * `RoundRobinAssigner`; @platformatic/kafka and the Java client (RoundRobinAssignor) name theirs
 * `roundrobin`. Both names are offered by both adapters — `roundrobin` first, the name Kafka's own
 * tools know — so a member of this gateway joins a group of either client, also of a release that
 * offered one name only. The leader computes the assignment; the encodings are Kafka's standard
 * ConsumerProtocolSubscription and ConsumerProtocolAssignment on both clients, so any member
 * decodes what any leader assigned.
 */

/** Protocol names offered at JoinGroup, in order of preference. */
export const GROUP_PROTOCOL_NAMES: readonly string[] = Object.freeze(['roundrobin', 'RoundRobinAssigner']);
