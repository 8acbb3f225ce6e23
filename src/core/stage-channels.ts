/**
 * Where one event's time goes on the way in (issue 14: "find where the single-event p99 comes
 * from"), as `node:diagnostics_channel` messages. Nothing is built or sent unless a subscriber
 * listens (`channel.hasSubscribers`), so production pays a few boolean reads per request (one per
 * record in the publisher) and one number per queued record; the bench
 * probe (`npm run bench:latency-probe`, bench/lib/stage-recorder.ts) subscribes in the gateway
 * child. All times are `performance.now()` values of the publishing process, ms.
 *
 * The channel names are the interface between the gateway and the probe: keep them.
 */
import { channel } from 'node:diagnostics_channel';

/** One `POST /events` answered 202: when it arrived, its body was read, its records were handed to the publisher, the broker confirmed them all, the answer was written. */
export interface IngressStages {
  readonly events: number;
  readonly arrivedAt: number;
  readonly bodyAt: number;
  readonly preparedAt: number;
  readonly ackedAt: number;
  readonly answeredAt: number;
}

/** One produce attempt of the record publisher: when its oldest record was queued, the transport was called, it answered. */
export interface PublisherStages {
  readonly records: number;
  readonly oldestQueuedAt: number;
  readonly calledAt: number;
  readonly answeredAt: number;
  readonly ok: boolean;
}

/** One produce request of the @platformatic/kafka sender: when each joined call was queued, the request left, the broker answered. */
export interface SenderStages {
  readonly records: number;
  /** One per call joined into the request, in queue order. */
  readonly queuedAt: readonly number[];
  readonly sentAt: number;
  readonly answeredAt: number;
  readonly ok: boolean;
}

/** `ce-gateway:ingress` — {@link IngressStages}. */
export const ingressChannel = channel('ce-gateway:ingress');
/** `ce-gateway:publisher` — {@link PublisherStages}. */
export const publisherChannel = channel('ce-gateway:publisher');
/** `ce-gateway:sender` — {@link SenderStages}. */
export const senderChannel = channel('ce-gateway:sender');
