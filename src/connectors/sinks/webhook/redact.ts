/**
 * A subscription's own secret values taken out of what its sink answered, before the answer's
 * excerpt is kept (dead letter header `dlq_response_excerpt`, `GET …/deadletters`, the logs). A
 * sink that echoes the request in its error body (common in debugging endpoints and some API
 * gateways) sent back the `delivery.headers` values — stored sealed and "never returned" — and
 * they reached the dead-letter topic in clear.
 * Redacted: every `delivery.headers` value and every signing secret (the stored text, and its
 * base64 key without the `whsec_` prefix), as they appear and JSON-escaped, each at least
 * {@link MIN_REDACTED_LENGTH} characters long (shorter values are not secrets worth the noise of
 * redacting every occurrence of, e.g., `1`). A header value also has its credentials taken out
 * on their own ({@link credentialParts}): a sink refusing `Authorization: Bearer <token>` names
 * the token alone (`invalid token <token>`), never the whole value, and one refusing Basic names
 * the decoded user (break report 2026-12-07: the token stayed in `GET …/deadletters`).
 * The answer is redacted before it is cut to the excerpt's {@link MAX_EXCERPT_BYTES}: cut first,
 * a value crossing the cut no longer matched and its start stayed in the dead letter (break report,
 * 2026-12-06). So the attempt keeps {@link REDACTION_MARGIN_BYTES} more than the excerpt: every
 * value that starts inside the excerpt ends inside what was kept.
 * Spec: Standard Webhooks 1.0.0 (secrets `whsec_` + base64); docs/subscriptions.md (headers
 * "stored encrypted, never returned").
 */
import { MAX_EXCERPT_BYTES, utf8Prefix } from '../../../bus/subscriber/index.js';
import { MAX_SINK_HEADER_VALUE_LENGTH } from '../../../bus/subscriptions/model.js';
import { redact } from '../../../core/secret-texts.js';

// The rules themselves live in core (the registry client redacts its answers with them too).
export { MIN_REDACTED_LENGTH, REDACTED, credentialParts, redact, secretTexts } from '../../../core/secret-texts.js';

/**
 * Bytes of a sink's answer kept beyond the excerpt, so that redaction sees whole values: the longest
 * text {@link secretTexts} makes is a header value JSON-escaped (each character at most two: `\"`,
 * `\\`); signing secrets are shorter.
 */
export const REDACTION_MARGIN_BYTES = 2 * MAX_SINK_HEADER_VALUE_LENGTH;

/**
 * The excerpt of an answer's start `text` (up to {@link MAX_EXCERPT_BYTES} + {@link REDACTION_MARGIN_BYTES}
 * bytes as read): `secrets` ({@link secretTexts}) redacted, then cut to whole characters within
 * {@link MAX_EXCERPT_BYTES} bytes.
 */
export function redactedExcerpt(text: string, secrets: readonly string[]): string {
  return utf8Prefix(secrets.length === 0 ? text : redact(text, secrets), MAX_EXCERPT_BYTES);
}
