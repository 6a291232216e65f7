// Keeping credentials out of text the service writes about a request: log lines, error
// messages, metric labels. Two rules, applied together:
//
// - by shape: anything that looks like a credential (`sk_`, `tok_`, `tkt_`, then the 16-hex
//   id, then a secret; src/core/credentials.ts) loses its secret, wherever it sits and however
//   it is percent-encoded (a client may encode a value, a separator or every character);
// - by name: the value of a URL query parameter whose name says it holds a secret (`key`,
//   `api-key`, `authorization`, `ticket`, ... in any case, with `-`/`_` or without, the name
//   itself percent-encoded or not) is replaced whatever its shape, so a mistyped key is
//   not logged either.
//
// The credential's id stays: it is the public lookup key, and says which key to rotate.

export const REDACTED = '[Redacted]';

/** A credential by its shape, looser than parseCredential on purpose: a truncated or
 * mangled secret is still a secret. Case-insensitive so `SK_...` is caught too. */
const CREDENTIAL_SHAPE = /(sk|tok|tkt)_([0-9a-f]{16})_[A-Za-z0-9_-]*/gi;
/** A run of URL characters holding at least one percent-escape: the unit that is decoded
 * and, when it hides a credential, replaced whole. `"`, `\`, `&`, `=`, `/`, `?` and spaces
 * end a run, so JSON and URL structure around it survive. */
const ESCAPED_RUN = /[A-Za-z0-9%_.~+-]*%[0-9A-Fa-f]{2}[A-Za-z0-9%_.~+-]*/g;
/** Rounds of percent-decoding tried: a value encoded twice or three times is still found. */
const DECODE_ROUNDS = 4;

/** Query parameter names (lower case, without `-` and `_`) whose values are never written. */
const SECRET_PARAM_NAMES = new Set([
  'key',
  'apikey',
  'accesskey',
  'token',
  'apitoken',
  'accesstoken',
  'authorization',
  'auth',
  'ticket',
  'secret',
  'password',
]);

/** Percent-decoding that never throws: valid escapes are decoded byte by byte (as Latin-1,
 * enough for the ASCII of credentials and names), anything else is kept as it is. */
export function lenientDecode(text: string): string {
  let s = text;
  for (let i = 0; i < DECODE_ROUNDS && s.includes('%'); i++) {
    const next = s.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === s) break;
    s = next;
  }
  return s;
}

function hasCredentialShape(text: string): boolean {
  CREDENTIAL_SHAPE.lastIndex = 0;
  return CREDENTIAL_SHAPE.test(text);
}

/** Remove every credential secret from a text (a log line, a message, a URL). */
export function scrubCredentials(text: string): string {
  let out = text;
  if (out.includes('%')) out = out.replace(ESCAPED_RUN, (run) => (hasCredentialShape(lenientDecode(run)) ? REDACTED : run));
  return out.replace(CREDENTIAL_SHAPE, (_m, prefix: string, id: string) => `${prefix}_${id}_${REDACTED}`);
}

/** Whether a query parameter name (raw, as it is in the URL) names a secret. */
export function isSecretParamName(rawName: string): boolean {
  return SECRET_PARAM_NAMES.has(
    lenientDecode(rawName.replaceAll('+', ' '))
      .toLowerCase()
      .replace(/[-_\s]/g, ''),
  );
}

/** A request URL fit for a log line: secret-named query values replaced, credential
 * shapes scrubbed everywhere (path, query, fragment). */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return scrubCredentials(url);
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const params = query.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0) return pair;
    return isSecretParamName(pair.slice(0, eq)) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
  });
  return scrubCredentials(`${url.slice(0, q)}?${params.join('&')}${hash < 0 ? '' : url.slice(hash)}`);
}
