/**
 * Parameters of a media type text (`type/subtype; name=value; …`) as the sender wrote them, to
 * refuse a parameter given twice: every receiver parses it its own way (ce-gateway's
 * `parseMediaType` kept the last one, others keep the first), so `charset=latin1; charset=utf-8`
 * was accepted and `charset=utf-8; charset=latin1` refused, and a reader downstream may decode
 * the accepted one as Latin-1. The same reason the gateway refuses a JSON member name twice.
 * Spec: RFC 6838 §4.3 ("It is an error for a specific parameter to be specified more than once");
 * RFC 9110 §8.3.1 (parameter names are case-insensitive; values are tokens or quoted-strings).
 */

const SHOWN = 40;

/**
 * The first parameter name (lowercased) that occurs more than once in the media type `text`,
 * compared case-insensitively, else undefined. Quoted-string values are skipped whole (a `;` or
 * `name=` inside quotes is not a parameter). Does not judge the syntax otherwise (the callers do).
 * Cost: linear in `text`. Pure.
 */
export function repeatedMediaParameter(text: string): string | undefined {
  let seen: Set<string> | undefined;
  let i = text.indexOf(';');
  while (i >= 0 && i < text.length) {
    // `i` is at a `;`: the parameter's name runs to the next `=` or `;`.
    let j = i + 1;
    while (j < text.length && text[j] !== '=' && text[j] !== ';') j++;
    const name = text.slice(i + 1, j).trim().toLowerCase();
    if (j < text.length && text[j] === '=') {
      j++;
      while (j < text.length && (text[j] === ' ' || text[j] === '\t')) j++;
      if (text[j] === '"') {
        for (j++; j < text.length && text[j] !== '"'; j++) if (text[j] === '\\') j++;
        j++;
      }
      while (j < text.length && text[j] !== ';') j++;
    }
    if (name !== '') {
      seen ??= new Set();
      if (seen.has(name)) return name;
      seen.add(name);
    }
    i = j;
  }
  return undefined;
}

/**
 * Reason to refuse the media type `text` for a repeated parameter, naming it (cut to 40
 * characters) and `what` carries it (`Content-Type`, `datacontenttype`), else undefined.
 * Spec: RFC 6838 §4.3.
 */
export function repeatedMediaParameterProblem(text: string, what: string): string | undefined {
  const name = repeatedMediaParameter(text);
  if (name === undefined) return undefined;
  const shown = name.length > SHOWN ? `${name.slice(0, SHOWN)}…` : name;
  return `${what} has the parameter ${shown} more than once (RFC 6838 §4.3): receivers would disagree on which one counts; give each parameter once`;
}
