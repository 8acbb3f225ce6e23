/**
 * Committing a group's offsets without joining it: one OffsetCommit to the group's coordinator
 * with generation -1 and no member id, which Kafka accepts for a group that has no members (the
 * "simple consumer" commit; the caller checks the group is Empty or Dead first). kafkajs's
 * `admin.setOffsets` instead joins the group with a throw-away consumer and waits for its first
 * fetch — about 5 s per topic on an idle topic (its default fetch wait), which made creating a
 * subscription on three topics take 15 s. kafkajs exposes no such call, so this uses the cluster
 * object its `Kafka` instance builds for its own clients (a private symbol); when that is not
 * there (another kafkajs version), `setOffsets` is used as before.
 * Spec: Kafka protocol OffsetCommit (GenerationIdOrMemberEpoch -1 with an empty member id: commits
 *   for a group without an active generation).
 */
import type { Admin, Kafka } from 'kafkajs';

interface Coordinator {
  offsetCommit(req: { groupId: string; groupGenerationId: number; memberId: string; topics: { topic: string; partitions: { partition: number; offset: string }[] }[] }): Promise<unknown>;
}

interface Cluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  refreshMetadata(): Promise<void>;
  findGroupCoordinator(req: { groupId: string }): Promise<Coordinator>;
}

type CreateCluster = (o: { metadataMaxAge?: number; allowAutoTopicCreation: boolean }) => Cluster;

function clusterFactory(kafka: Kafka): CreateCluster | undefined {
  const sym = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const f = sym === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[sym];
  return typeof f === 'function' ? (f as CreateCluster) : undefined;
}

export class OffsetCommitter {
  readonly #create: CreateCluster | undefined;
  #cluster: Promise<Cluster> | undefined;

  constructor(kafka: Kafka) {
    this.#create = clusterFactory(kafka);
  }

  /** Commits `partitions` of `topic` for the (member-less) `group`. Errors: kafkajs's. */
  async commit(admin: Admin, group: string, topic: string, partitions: { partition: number; offset: string }[]): Promise<void> {
    if (this.#create === undefined) {
      await admin.setOffsets({ groupId: group, topic, partitions });
      return;
    }
    const create = this.#create;
    this.#cluster ??= (async () => {
      const c = create({ allowAutoTopicCreation: false });
      await c.connect();
      // A new cluster knows only its seed broker: its first findGroupCoordinator failed with "No
      // brokers in the broker pool" and went through only on kafkajs's retry (never with `retries: 0`).
      await c.refreshMetadata();
      return c;
    })();
    const pending = this.#cluster;
    pending.catch(() => {
      if (this.#cluster === pending) this.#cluster = undefined;
    });
    const coordinator = await (await pending).findGroupCoordinator({ groupId: group });
    await coordinator.offsetCommit({ groupId: group, groupGenerationId: -1, memberId: '', topics: [{ topic, partitions }] });
  }

  async close(): Promise<void> {
    const c = this.#cluster;
    this.#cluster = undefined;
    if (c !== undefined) await (await c.catch(() => undefined))?.disconnect();
  }
}
