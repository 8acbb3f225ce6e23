/**
 * Rate limits per partner: requests per second on every authenticated route, events per second
 * through `POST /events` (a batch takes one token per event). Token buckets (`limiter`) holding one
 * second's worth, so a partner may burst to its per-second rate and is held to it on average; each
 * partner has its own buckets, so one partner's pace never slows another.
 * Over the limit: 429 `CEG_RATE_LIMITED` with `Retry-After`; every limited answer and every
 * authenticated one carries the IETF headers `RateLimit-Policy` and `RateLimit`.
 * Spec: issue 11 ("Rate limits per partner … token bucket; 429 with Retry-After and the RateLimit
 *   headers of the IETF draft"); draft-ietf-httpapi-ratelimit-headers-09 §4 (`RateLimit-Policy`:
 *   `"<name>";q=<quota>;w=<window s>`), §5 (`RateLimit`: `"<name>";r=<remaining>;t=<s until full>`);
 *   RFC 6585 §4 (429); RFC 9110 §10.2.3 (Retry-After).
 */
import { TokenBucket } from 'limiter';
import { GatewayError } from '../../core/errors.js';
import type { Partner } from './partners.js';

/** Gateway-wide rates; a partner's `limits` override them. */
export interface RateDefaults {
  readonly requestsPerSecond: number;
  readonly eventsPerSecond: number;
}

/** Outcome of taking tokens: the headers to send either way, and the error when over the limit. */
export interface RateOutcome {
  readonly headers: Readonly<Record<string, string>>;
  readonly error?: GatewayError;
}

type PolicyName = 'requests' | 'events';

function full(perSecond: number): TokenBucket {
  const b = new TokenBucket({ bucketSize: perSecond, tokensPerInterval: perSecond, interval: 1000 });
  b.content = b.bucketSize; // limiter's buckets start empty; a partner starts with a whole second's worth
  return b;
}

/** The two IETF header values for one bucket. */
function describe(name: PolicyName, b: TokenBucket): { policy: string; state: string } {
  const remaining = Math.max(0, Math.floor(b.content));
  const untilFullS = Math.ceil(((b.bucketSize - b.content) / b.tokensPerInterval) * (b.interval / 1000));
  return { policy: `"${name}";q=${b.bucketSize};w=1`, state: `"${name}";r=${remaining};t=${Math.max(0, untilFullS)}` };
}

export class PartnerRateLimits {
  readonly #d: RateDefaults;
  readonly #buckets = new Map<string, { readonly requests: TokenBucket; readonly events: TokenBucket }>();

  constructor(defaults: RateDefaults) {
    this.#d = defaults;
  }

  #of(p: Partner): { readonly requests: TokenBucket; readonly events: TokenBucket } {
    let b = this.#buckets.get(p.id);
    if (b === undefined) {
      b = { requests: full(p.limits.requestsPerSecond ?? this.#d.requestsPerSecond), events: full(p.limits.eventsPerSecond ?? this.#d.eventsPerSecond) };
      this.#buckets.set(p.id, b);
    }
    return b;
  }

  /** Takes one request token. Errors (in the outcome): CEG_RATE_LIMITED (retriable) with `retryAfterS`. */
  request(p: Partner): RateOutcome {
    return this.#take(p, 'requests', 1);
  }

  /**
   * Takes `count` event tokens. A batch larger than the bucket passes only when the bucket is
   * full and leaves it in debt (later requests wait the longer), so the average rate holds.
   * Errors (in the outcome): CEG_RATE_LIMITED (retriable) with `retryAfterS`.
   */
  events(p: Partner, count: number): RateOutcome {
    return this.#take(p, 'events', count);
  }

  #take(p: Partner, name: PolicyName, count: number): RateOutcome {
    const b = this.#of(p)[name];
    b.drip();
    const need = Math.min(count, b.bucketSize);
    if (b.content >= need) {
      b.content -= count;
      const d = describe(name, b);
      return { headers: { 'ratelimit-policy': d.policy, ratelimit: d.state } };
    }
    const waitMs = ((need - b.content) / b.tokensPerInterval) * b.interval;
    const retryAfterS = Math.max(1, Math.ceil(waitMs / 1000));
    const d = describe(name, b);
    return {
      headers: { 'ratelimit-policy': d.policy, ratelimit: d.state, 'retry-after': String(retryAfterS) },
      error: new GatewayError('CEG_RATE_LIMITED', `over the ${name} rate of partner ${p.id} (${b.bucketSize} per second); retry in ${retryAfterS} s`, { retriable: true, details: { retryAfterS, limit: `${name}PerSecond`, max: b.bucketSize } }),
    };
  }
}
