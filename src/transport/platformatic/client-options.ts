import type { BaseOptions } from '@platformatic/kafka';
import type { KafkaTransportOptions } from '../kafka/options.js';
import { protocolIds } from './errors.js';

/**
 * Delay between metadata look-ups of a topic the broker calls unknown, ms. With the general retry
 * delay (300 ms × 5 retries) an unknown topic took 1.5 s to report (measured on Kafka 4.1.1), and
 * such look-ups are routine: the work check's own topics, `tail` of a mistyped topic, whether a
 * subscription name's retry topic is left from an earlier subscription. Topics this gateway creates
 * are waited for until they have leaders (ensureTopics), so the retries only cover another
 * broker's metadata catching up with a topic created elsewhere moments before.
 */
const UNKNOWN_TOPIC_RETRY_MS = 20;

const SASL = { plain: 'PLAIN', 'scram-sha-256': 'SCRAM-SHA-256', 'scram-sha-512': 'SCRAM-SHA-512' } as const;

/**
 * The transport's options as @platformatic/kafka's base client options: client id, bootstrap
 * brokers, connect and request timeouts (ms), bounded retries with the first retry delay (ms),
 * metadata age (ms), TLS and SASL. Topic auto-creation is off for every client.
 * `onRetry`: told each error the client is about to retry (it must not throw).
 */
export function baseOptions(o: KafkaTransportOptions, clientIdSuffix?: string, onRetry?: (error: unknown) => void): BaseOptions {
  return {
    clientId: clientIdSuffix === undefined ? o.clientId : `${o.clientId}-${clientIdSuffix}`.slice(0, 255),
    bootstrapBrokers: [...o.brokers],
    connectTimeout: o.connectionTimeoutMs,
    requestTimeout: o.requestTimeoutMs,
    retries: o.retries,
    retryDelay: (_client, operationId, _attempt, _retries, error) => {
      onRetry?.(error);
      return operationId === 'metadata' && protocolIds(error).has('UNKNOWN_TOPIC_OR_PARTITION') ? UNKNOWN_TOPIC_RETRY_MS : o.initialRetryTimeMs;
    },
    metadataMaxAge: o.metadataMaxAgeMs,
    autocreateTopics: false,
    ...(o.ssl === undefined || o.ssl === false ? {} : { tls: o.ssl === true ? {} : o.ssl }),
    ...(o.sasl === undefined ? {} : { sasl: { mechanism: SASL[o.sasl.mechanism], username: o.sasl.username, password: o.sasl.password } }),
  };
}

/**
 * Closes a consumer or producer with `force` (streams and a joined group are left at once), as a
 * promise. (The library's typings resolve `close(true)` to its callback overload.)
 */
export function closeForced(client: { close(force: boolean, callback: (error?: Error | null) => void): void }): Promise<void> {
  return new Promise<void>((resolve, reject) => client.close(true, (error) => (error ? reject(error) : resolve())));
}
