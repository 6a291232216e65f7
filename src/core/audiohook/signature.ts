// HTTP Message Signatures (RFC 9421) as Genesys signs an AudioHook upgrade: `signature-input`
// names the covered components and the parameters (keyid, nonce, alg="hmac-sha256", created,
// expires), `signature` carries the HMAC-SHA256 of the signature base, keyed with the
// base64-decoded client secret. Only the subset the AudioHook upgrade uses is read: a
// dictionary of one inner list of strings with string/integer/token parameters, and a byte
// sequence. No structured-fields package is among the project's dependencies, and this
// subset is a few dozen lines; anything outside it is refused as malformed, never guessed.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The components Genesys covers; a signature that leaves one out is refused. */
export const REQUIRED_COMPONENTS = [
  '@request-target',
  '@authority',
  'audiohook-organization-id',
  'audiohook-session-id',
  'audiohook-correlation-id',
  'x-api-key',
] as const;
/** Longest validity window taken (created to expires); Genesys signs for 30 s or so. */
export const MAX_SIGNATURE_LIFETIME_S = 300;
/** Clock difference allowed between Genesys and this node. */
export const CLOCK_SKEW_S = 10;

export type SignatureFailure = 'missing' | 'malformed' | 'components' | 'algorithm' | 'keyid' | 'expired' | 'not_yet_valid' | 'mismatch';

export class SignatureError extends Error {
  constructor(
    readonly reason: SignatureFailure,
    message: string,
  ) {
    super(message);
  }
}

type Param = string | number | boolean;

export interface SignatureInput {
  label: string;
  components: string[];
  params: Record<string, Param>;
  /** The inner list exactly as sent: the `@signature-params` line of the base. */
  raw: string;
}

const TOKEN = /^[A-Za-z*][A-Za-z0-9:/!#$%&'*+\-.^_`|~]*/;
const KEY = /^[a-z*][a-z0-9_\-.*]*/;

class Cursor {
  constructor(
    readonly s: string,
    public at = 0,
  ) {}
  peek(): string {
    return this.s[this.at] ?? '';
  }
  spaces(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.at += 1;
  }
  take(re: RegExp): string {
    const m = re.exec(this.s.slice(this.at));
    if (!m) throw new SignatureError('malformed', `signature-input: unexpected text at ${this.at}`);
    this.at += m[0].length;
    return m[0];
  }
  expect(ch: string): void {
    if (this.peek() !== ch) throw new SignatureError('malformed', `signature-input: expected ${ch} at ${this.at}`);
    this.at += 1;
  }
  string(): string {
    this.expect('"');
    let out = '';
    for (;;) {
      const ch = this.peek();
      if (ch === '') throw new SignatureError('malformed', 'signature-input: unterminated string');
      this.at += 1;
      if (ch === '"') return out;
      if (ch === '\\') {
        const next = this.peek();
        if (next !== '"' && next !== '\\') throw new SignatureError('malformed', 'signature-input: bad escape');
        out += next;
        this.at += 1;
      } else {
        if (ch < ' ' || ch > '~') throw new SignatureError('malformed', 'signature-input: bad character in a string');
        out += ch;
      }
    }
  }
  bareItem(): Param {
    const ch = this.peek();
    if (ch === '"') return this.string();
    if (ch === '?') {
      this.at += 1;
      return this.take(/^[01]/) === '1';
    }
    if (ch === '-' || (ch >= '0' && ch <= '9')) {
      const n = Number(this.take(/^-?\d{1,15}/));
      if (this.peek() === '.') throw new SignatureError('malformed', 'signature-input: decimals are not taken');
      return n;
    }
    return this.take(TOKEN);
  }
  params(): Record<string, Param> {
    const out: Record<string, Param> = {};
    while (this.peek() === ';') {
      this.at += 1;
      this.spaces();
      const key = this.take(KEY);
      let value: Param = true;
      if (this.peek() === '=') {
        this.at += 1;
        value = this.bareItem();
      }
      out[key] = value;
    }
    return out;
  }
}

/** The members of a structured-field dictionary as raw text, by key (`sig1=...`). Commas
 * inside strings and byte sequences are kept. */
function members(header: string): Map<string, string> {
  const out = new Map<string, string>();
  let depthQuote = false;
  let colon = false;
  let paren = 0;
  let start = 0;
  const push = (end: number) => {
    const part = header.slice(start, end).trim();
    if (part === '') return;
    const eq = part.indexOf('=');
    if (eq <= 0) throw new SignatureError('malformed', 'a signature header member has no value');
    out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  };
  for (let i = 0; i < header.length; i++) {
    const ch = header[i];
    if (depthQuote) {
      if (ch === '\\') i += 1;
      else if (ch === '"') depthQuote = false;
    } else if (ch === '"') depthQuote = true;
    else if (ch === ':') colon = !colon;
    else if (ch === '(') paren += 1;
    else if (ch === ')') paren -= 1;
    else if (ch === ',' && !colon && paren === 0) {
      push(i);
      start = i + 1;
    }
  }
  if (depthQuote || colon || paren !== 0) throw new SignatureError('malformed', 'a signature header is not a well-formed dictionary');
  push(header.length);
  return out;
}

/** `signature-input`'s first member (Genesys sends one, `sig1`). */
export function parseSignatureInput(header: string): SignatureInput {
  const all = members(header);
  const first = [...all.entries()][0];
  if (!first) throw new SignatureError('malformed', 'signature-input is empty');
  const [label, raw] = first;
  const c = new Cursor(raw);
  c.expect('(');
  const components: string[] = [];
  for (;;) {
    c.spaces();
    if (c.peek() === ')') {
      c.at += 1;
      break;
    }
    components.push(c.string());
    if (Object.keys(c.params()).length > 0) throw new SignatureError('malformed', 'signature-input: component parameters are not taken');
    if (c.peek() !== ' ' && c.peek() !== ')') throw new SignatureError('malformed', 'signature-input: components are separated by spaces');
  }
  const params = c.params();
  if (c.at !== raw.length) throw new SignatureError('malformed', 'signature-input: text after the parameters');
  return { label, components, params, raw };
}

/** The `signature` member under `label` as bytes (`sig1=:BASE64:`). */
export function parseSignature(header: string, label: string): Buffer {
  const value = members(header).get(label);
  const m = value === undefined ? null : /^:([A-Za-z0-9+/]*={0,2}):$/.exec(value);
  if (!m) throw new SignatureError('malformed', `signature has no byte sequence for ${label}`);
  return Buffer.from(m[1]!, 'base64');
}

export interface SignedRequest {
  /** Path and query of the upgrade request, as sent. */
  target: string;
  /** The Host header. */
  authority: string;
  /** Request headers, names in lower case. */
  headers: Record<string, string | undefined>;
}

/** The signature base RFC 9421 defines: one line per covered component, then the parameters. */
export function signatureBase(input: Pick<SignatureInput, 'components' | 'raw'>, req: SignedRequest): string {
  const lines = input.components.map((name) => {
    let value: string | undefined;
    if (name === '@request-target') value = req.target;
    else if (name === '@authority') value = req.authority.toLowerCase();
    else if (name === '@method') value = 'GET';
    else if (name.startsWith('@'))
      throw new SignatureError('components', `signature-input covers ${name}, which this server does not derive`);
    else value = req.headers[name];
    if (value === undefined) throw new SignatureError('components', `signature-input covers ${name}, absent from the request`);
    return `"${name}": ${value.trim().replace(/[ \t]*\r\n[ \t]+/g, ' ')}`;
  });
  lines.push(`"@signature-params": ${input.raw}`);
  return lines.join('\n');
}

export function hmacSignature(base: string, key: Buffer): Buffer {
  return createHmac('sha256', key).update(base).digest();
}

export interface VerifiedSignature {
  keyid: string;
  nonce: string;
  expires: number;
}

/**
 * Checks an upgrade's signature against the client secret (base64, as Genesys shows it).
 * `nowS`: Unix seconds. Throws SignatureError naming the first failure; the key id must be
 * the request's X-API-KEY (Genesys sets it so).
 */
export function verifySignature(req: SignedRequest, secretBase64: string, nowS: number): VerifiedSignature {
  const inputHeader = req.headers['signature-input'];
  const sigHeader = req.headers.signature;
  if (!inputHeader || !sigHeader) throw new SignatureError('missing', 'the upgrade is not signed (signature-input and signature headers)');
  const input = parseSignatureInput(inputHeader);
  const missing = REQUIRED_COMPONENTS.filter((c) => !input.components.includes(c));
  if (missing.length > 0) throw new SignatureError('components', `the signature does not cover ${missing.join(', ')}`);
  const { keyid, nonce, alg, created, expires } = input.params;
  if (alg !== undefined && alg !== 'hmac-sha256') throw new SignatureError('algorithm', `signature alg ${String(alg)} is not hmac-sha256`);
  if (
    typeof keyid !== 'string' ||
    typeof nonce !== 'string' ||
    nonce.length === 0 ||
    typeof created !== 'number' ||
    typeof expires !== 'number'
  ) {
    throw new SignatureError('malformed', 'signature-input needs keyid, nonce, created and expires');
  }
  const apiKey = req.headers['x-api-key'] ?? '';
  if (!safeEqual(keyid, apiKey)) throw new SignatureError('keyid', 'the signature keyid is not the X-API-KEY');
  if (expires <= created || expires - created > MAX_SIGNATURE_LIFETIME_S)
    throw new SignatureError(
      'malformed',
      `the signature's validity (created ${created}, expires ${expires}) is not 1..${MAX_SIGNATURE_LIFETIME_S} s`,
    );
  if (created > nowS + CLOCK_SKEW_S) throw new SignatureError('not_yet_valid', 'the signature was created in the future');
  if (expires + CLOCK_SKEW_S < nowS) throw new SignatureError('expired', 'the signature expired');
  const expected = hmacSignature(signatureBase(input, req), Buffer.from(secretBase64, 'base64'));
  const given = parseSignature(sigHeader, input.label);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new SignatureError('mismatch', 'the signature does not match');
  return { keyid, nonce, expires };
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Builds the two headers for a request (what a client does; the tests' client uses it too). */
export function signRequest(
  req: Omit<SignedRequest, 'headers'> & { headers: Record<string, string> },
  secretBase64: string,
  opts: { keyid: string; nonce: string; created: number; expires: number; label?: string; components?: readonly string[] },
): { 'signature-input': string; signature: string } {
  const label = opts.label ?? 'sig1';
  const components = opts.components ?? REQUIRED_COMPONENTS;
  const raw = `(${components.map((c) => `"${c}"`).join(' ')});keyid="${opts.keyid}";nonce="${opts.nonce}";alg="hmac-sha256";created=${opts.created};expires=${opts.expires}`;
  const sig = hmacSignature(signatureBase({ components: [...components], raw }, req), Buffer.from(secretBase64, 'base64'));
  return { 'signature-input': `${label}=${raw}`, signature: `${label}=:${sig.toString('base64')}:` };
}

/** The operator's client secrets file (docs/audiohook.md): a JSON object from Genesys
 * organization id to that organization's client secret (base64, as Genesys shows it). */
export function parseClientSecrets(text: string): ReadonlyMap<string, string> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Error('the AudioHook client secrets file is not JSON');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error('the AudioHook client secrets file must be a JSON object {"<organization id>": "<client secret>"}');
  const out = new Map<string, string>();
  for (const [org, secret] of Object.entries(raw)) {
    if (!/^[0-9a-fA-F-]{36}$/.test(org))
      throw new Error(`AudioHook client secrets: ${JSON.stringify(org.slice(0, 40))} is not an organization id (a UUID)`);
    if (typeof secret !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(secret) || Buffer.from(secret, 'base64').length < 16) {
      throw new Error(`AudioHook client secrets: the secret of ${org} must be base64 of at least 16 bytes`);
    }
    out.set(org.toLowerCase(), secret);
  }
  return out;
}
