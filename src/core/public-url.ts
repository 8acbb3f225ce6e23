/**
 * The one way a configured URL leaves the process (documents, logs, error messages and details,
 * metrics labels): without its userinfo (`user:password@`) and without query parameters whose name
 * says they hold a secret (`token`, `api_key`, `password`, `sig`, …). A registry URL may carry
 * basic-auth credentials (SCHEMA_REGISTRY_URL=http://user:pw@host/…, moved into a header by the
 * client); they are for the connection only, never for a reader of the AsyncAPI document.
 */

/** Words that, as a whole word of a query parameter's name, say it holds a secret (`code`: Azure Functions' function key, OAuth's authorization code). */
const SECRET_WORDS = new Set(['pass', 'passwd', 'password', 'passphrase', 'pwd', 'secret', 'token', 'key', 'apikey', 'sig', 'signature', 'auth', 'authorization', 'cred', 'creds', 'credential', 'credentials', 'session', 'sessionid', 'sid', 'jwt', 'bearer', 'code']);

/**
 * Whether a query parameter's name says it holds a secret: one of its words (split at `_`, `-`,
 * `.`, and lower-to-upper case changes: `api_key`, `X-Amz-Signature`, `accessToken`) is a
 * {@link SECRET_WORDS} word. Whole words only: `design`, `monkey`, `author` are not secrets.
 */
function isSecretParam(name: string): boolean {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((w) => SECRET_WORDS.has(w));
}

/** `scheme://userinfo@` in a text that does not parse as a URL (credentials are cut all the same). */
const USERINFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#@]*@/;

/**
 * `url` as it may be shown to anyone: userinfo removed, secret-looking query parameters removed.
 * A URL holding neither comes back unchanged (character for character); otherwise it is rebuilt
 * without them, a trailing `/` kept only where `url` had one. A text that is not an absolute URL
 * only loses a `scheme://…@` prefix's userinfo. Pure.
 */
export function publicUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.replace(USERINFO, '$1');
  }
  const secretParams = [...parsed.searchParams.keys()].filter(isSecretParam);
  if (parsed.username === '' && parsed.password === '' && secretParams.length === 0 && !/^[^/?#]*:\/\/[^/?#]*@/.test(url)) return url;
  parsed.username = '';
  parsed.password = '';
  for (const k of secretParams) parsed.searchParams.delete(k);
  let text = parsed.toString();
  // `new URL('http://h')` adds the root path: keep the caller's form when it had no path.
  if (parsed.pathname === '/' && parsed.search === '' && parsed.hash === '' && !/^[^/?#]*:\/\/[^/?#]*\//.test(url)) text = text.replace(/\/$/, '');
  return text;
}

/** What {@link maskedUrl} puts in place of a secret-looking query value. */
export const MASKED_VALUE = '***';

/**
 * `url` as a read of its resource shows it (a webhook's `delivery.url` in `GET /subscriptions`):
 * the values of secret-looking query parameters (as {@link publicUrl} tells them) replaced by
 * {@link MASKED_VALUE}, so the reader sees which parameters there are but not the credential a
 * sink may expect there (e.g. `?code=…`, `?token=…`). A URL without such a parameter comes back
 * unchanged (character for character); one that does not parse too. Pure.
 */
export function maskedUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const params = [...parsed.searchParams];
  if (!params.some(([k]) => isSecretParam(k))) return url;
  // Rebuilt in order; the other values keep their meaning (their encoding may be normalized).
  parsed.search = new URLSearchParams(params.map(([k, v]): [string, string] => [k, isSecretParam(k) ? MASKED_VALUE : v])).toString();
  return parsed.toString();
}

/** Whether `url` holds userinfo (`user[:password]@` before the host): such a URL must not be published. */
export function hasUserinfo(url: string): boolean {
  try {
    const u = new URL(url);
    return u.username !== '' || u.password !== '';
  } catch {
    return USERINFO.test(url);
  }
}

/** An absolute http(s) URL inside free text (an error message), up to the first space or quote. */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>]+/gi;

/**
 * `text` (an error message, a log line) with every http(s) URL in it written as {@link publicUrl}
 * writes it: a library's message that quotes the URL it was given loses the credentials. Pure.
 */
export function publicText(text: string): string {
  return text.replace(URL_IN_TEXT, (u) => publicUrl(u));
}

/**
 * Takes the userinfo (`user:password@`) out of `url` (it is changed in place) and returns the
 * credentials: `username`/`password` given win over the URL's; the URL's are percent-decoded, and a
 * part written with a bare `%` (`50%off`) is taken as written rather than throwing a URIError.
 * Used wherever a configured registry URL may carry basic-auth credentials (config, registry client).
 */
export function takeUserinfo(url: URL, username?: string, password?: string): { readonly username: string | undefined; readonly password: string | undefined } {
  if (url.username === '' && url.password === '') return { username, password };
  const taken = { username: username ?? decodedUserinfo(url.username), password: password ?? decodedUserinfo(url.password) };
  url.username = '';
  url.password = '';
  return taken;
}

function decodedUserinfo(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
