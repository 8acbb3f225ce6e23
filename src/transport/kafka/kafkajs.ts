/**
 * The one place that loads kafkajs. Every other module takes kafkajs values from here, so that the
 * record decoder below is in place before kafkajs's own modules capture the original.
 *
 * Why: kafkajs 2.2.4 (`protocol/recordBatch/record/v0/decoder.js`) builds a record's headers object
 * by spreading the object built so far once per header — quadratic in the header count (measured:
 * 10,000 headers 32 s, 20,000 headers 178 s of blocked event loop). One partner record with tens
 * of thousands of headers froze every consumer of its topic, and the process then ignored SIGTERM
 * (issue 7). kafkajs has had no release since 2023, so the decoder is replaced at load time: same
 * output shape (one key per header name; repeated names collect into an array in arrival order),
 * built in linear time. `__proto__` as a header name becomes an own property, as it did before.
 * A second fix, {@link installBrokerHandshakeCheck} (applied on the first {@link kafkajs} call),
 * keeps a broker whose first answer timed out from counting as connected for good.
 */
import { createRequire } from 'node:module';
import type * as KafkaJs from 'kafkajs';

const require = createRequire(import.meta.url);

interface VarIntDecoder {
  readInt8(): number;
  readVarLong(): { toString(): string };
  readVarInt(): number;
  readVarIntBytes(): Buffer | null;
  readVarIntString(): string;
  readVarIntArray<T>(reader: (d: VarIntDecoder) => T): T[];
}

interface BatchContext {
  readonly firstOffset?: string;
  readonly firstTimestamp?: string;
  readonly magicByte?: number;
  readonly isControlBatch?: boolean;
  readonly timestampType?: number;
  readonly maxTimestamp?: string;
}

type HeaderValue = Buffer | null;
type Headers = Record<string, HeaderValue | HeaderValue[]>;


/** Adds one header in O(1): a repeated name collects into an array (arrival order kept). */
function addHeader(headers: Headers, key: string, value: HeaderValue): void {
  const prev = Object.hasOwn(headers, key) ? headers[key] : undefined;
  const next = prev === undefined ? value : Array.isArray(prev) ? (prev.push(value), prev) : [prev, value];
  if (key === '__proto__') Object.defineProperty(headers, key, { value: next, enumerable: true, writable: true, configurable: true });
  else headers[key] = next;
}

/** Marks the replacement, so a second evaluation of this module (test runners) sees it in place. */
const PATCHED = Symbol.for('ce-gateway.kafkajs.linear-header-decoder');

/**
 * Puts the linear decoder in kafkajs's module cache: loads the four small modules it needs, not
 * kafkajs itself. Whoever loads kafkajs afterwards (this module's {@link kafkajs}, a library user's
 * own `import 'kafkajs'`) gets it. Warns (CEG_KAFKAJS_UNPATCHED) when kafkajs was loaded before.
 */
function installLinearHeaderDecoder(): void {
  const decoderPath = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/decoder.js');
  const current = require.cache[decoderPath]?.exports as Record<symbol, unknown> | undefined;
  if (current?.[PATCHED] === true) return;
  const alreadyLoaded = Object.keys(require.cache).some((p) => /[\\/]kafkajs[\\/]index\.js$/.test(p));
  const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): { add(n: unknown): { toString(): string } } };
  const TimestampTypes = require('kafkajs/src/protocol/timestampTypes.js') as { LOG_APPEND_TIME: number };
  const HeaderDecoder = require('kafkajs/src/protocol/recordBatch/header/v0/decoder.js') as (d: VarIntDecoder) => { key: string; value: HeaderValue };
  require(decoderPath); // creates the cache entry whose exports are replaced below
  const entry = require.cache[decoderPath];
  if (entry === undefined) throw new Error('kafkajs record decoder not in the module cache');
  entry.exports = Object.assign((decoder: VarIntDecoder, batchContext: BatchContext = {}) => {
    const { firstOffset, firstTimestamp, magicByte, isControlBatch = false, timestampType, maxTimestamp } = batchContext;
    const attributes = decoder.readInt8();
    const timestampDelta = decoder.readVarLong();
    const timestamp = timestampType === TimestampTypes.LOG_APPEND_TIME && maxTimestamp ? maxTimestamp : Long.fromValue(firstTimestamp).add(timestampDelta).toString();
    const offsetDelta = decoder.readVarInt();
    const offset = Long.fromValue(firstOffset).add(offsetDelta).toString();
    const key = decoder.readVarIntBytes();
    const value = decoder.readVarIntBytes();
    const headers: Headers = {};
    for (const h of decoder.readVarIntArray(HeaderDecoder)) addHeader(headers, h.key, h.value);
    return { magicByte, attributes, timestamp, offset, key, value, headers, isControlRecord: isControlBatch, batchContext };
  }, { [PATCHED]: true });
  if (alreadyLoaded) {
    process.emitWarning('kafkajs was loaded before ce-gateway: its quadratic record-header decoder is still in use (import kafkajs after ce-gateway)', { code: 'CEG_KAFKAJS_UNPATCHED' });
  }
}

installLinearHeaderDecoder();

/** Set on a kafkajs Broker once its connect() finished: the API versions are known, requests can be built. */
const HANDSHAKE_DONE = Symbol.for('ce-gateway.kafkajs.broker-handshake-done');
/** Marks the patched Broker class (a second evaluation of this module sees it in place). */
const PATCHED_CONNECT = Symbol.for('ce-gateway.kafkajs.broker-connect');

interface KafkaJsBroker {
  isConnected: (this: KafkaJsBroker) => boolean;
  connect: (this: KafkaJsBroker) => Promise<void>;
  [HANDSHAKE_DONE]?: boolean;
}

/**
 * kafkajs 2.2.4's Broker counts as connected once its TCP connection is open
 * (`broker/index.js` isConnected), before the ApiVersions answer that lets it build requests. When
 * that answer times out (a broker that accepts connections but does not answer: paused, swapping,
 * stuck in GC), the retry of connect() finds the socket open, returns at once, and the broker stays
 * "connected" without request versions: every later call fails with `Broker not connected`, also
 * after the broker answers again, until the process ends (measured on Kafka 4.1.1 with SIGSTOP: a
 * transport whose first call met the paused broker never recovered;
 * test/integration/read-timeout.kafka.test.ts). So a Broker counts as connected only once a
 * connect() of its own has finished; until then connect() does the whole handshake again on the
 * open socket. Broker instances are kafkajs's, so this holds for every client of the process.
 */
function installBrokerHandshakeCheck(): void {
  const Broker = require('kafkajs/src/broker/index.js') as { prototype: KafkaJsBroker & Record<symbol, unknown> };
  const proto = Broker.prototype;
  if (proto[PATCHED_CONNECT] === true) return;
  const isConnected = proto.isConnected;
  const connect = proto.connect;
  proto.isConnected = function (this: KafkaJsBroker): boolean {
    return this[HANDSHAKE_DONE] === true && isConnected.call(this);
  };
  proto.connect = async function (this: KafkaJsBroker): Promise<void> {
    await connect.call(this);
    this[HANDSHAKE_DONE] = true;
  };
  proto[PATCHED_CONNECT] = true;
}

let loaded: typeof KafkaJs | undefined;

/**
 * kafkajs, with the linear header decoder in place, loaded on first call. A gateway on the default
 * client (@platformatic/kafka) never calls it, so kafkajs's ~180 modules stay out of its heap
 * (about 2 MiB live, and their code); the decoder above is in place from this module's load on.
 */
export function kafkajs(): typeof KafkaJs {
  if (loaded === undefined) {
    // Here, not at this module's load: the broker module pulls in kafkajs's protocol (about 40
    // modules) that a gateway on @platformatic/kafka never needs. A prototype patch applies to
    // every Broker that connects afterwards, so this is early enough for the transport's clients.
    installBrokerHandshakeCheck();
    loaded = require('kafkajs') as typeof KafkaJs;
  }
  return loaded;
}

export type Kafka = KafkaJs.Kafka;
export type logLevel = KafkaJs.logLevel;
export type CompressionTypes = KafkaJs.CompressionTypes;
