/**
 * Parameters of a media type text (`type/subtype; name=value; …`) as the sender wrote them, to
 * refuse a parameter given twice: every receiver parses it its own way (ce-gateway's
 * `parseMediaType` kept the last one, others keep the first), so `charset=latin1; charset=utf-8`
 * was accepted and `charset=utf-8; charset=latin1` refused, and a reader downstream may decode
 * the accepted one as Latin-1. The same reason the gateway refuses a JSON member name twice.
 * Spec: RFC 6838 §4.3 ("It is an error for a specific parameter to be specified more than once");
 * RFC 9110 §8.3.1 (parameter names are case-insensitive; values are tokens or quoted-strings).
 */

import { isMediaTypeFault, mediaTypeProblem, readMediaType } from './media-type.js';

/**
 * The parameter name (lowercased) that occurs more than once in the media type `text`, compared
 * case-insensitively, else undefined (also for a text that is not a media type for another
 * reason). Read by the gateway's one parser ({@link readMediaType}). Pure; cached.
 */
export function repeatedMediaParameter(text: string): string | undefined {
  const r = readMediaType(text);
  return isMediaTypeFault(r) && r.fault === 'repeated' ? r.name : undefined;
}

/**
 * Reason to refuse the media type `text` for a repeated parameter, naming it (cut to 40
 * characters) and `what` carries it (`Content-Type`, `datacontenttype`), else undefined.
 * Spec: RFC 6838 §4.3.
 */
export function repeatedMediaParameterProblem(text: string, what: string): string | undefined {
  return mediaTypeProblem(text, what, ['repeated']);
}
