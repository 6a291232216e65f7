// SIP messages (RFC 3261 section 7): requests and responses parsed from bytes and written back,
// headers in their compact forms too, Content-Length, folded lines, and sizes bounded. Pure: the
// transport (UDP datagram or TCP stream, src/server/siprec) hands bytes in and sends what comes
// out. Written here rather than taken from a SIP stack: the recording server needs a few dozen
// lines of the grammar, and the Node SIP stacks (drachtio, sip.js) bring a server or a browser
// UA with them.

/** Largest header section accepted (start line and headers). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Largest body accepted by default (an INVITE's SDP and metadata fit in a few KB). */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
const MAX_HEADERS = 128;

export interface SipHeader {
  /** Lower-case full name (compact forms expanded). */
  name: string;
  value: string;
}

interface SipCommon {
  headers: SipHeader[];
  body: Buffer;
}

export interface SipRequest extends SipCommon {
  kind: 'request';
  method: string;
  uri: string;
}

export interface SipResponse extends SipCommon {
  kind: 'response';
  status: number;
  reason: string;
}

export type SipMessage = SipRequest | SipResponse;

/** A message refused: the status to answer (400, 413), and its headers when they were read
 * (without them no answer can be addressed). */
export class SipParseError extends Error {
  constructor(
    readonly status: 400 | 413,
    message: string,
    readonly partial: SipRequest | null = null,
  ) {
    super(message);
  }
}

const COMPACT: Record<string, string> = {
  i: 'call-id',
  m: 'contact',
  e: 'content-encoding',
  l: 'content-length',
  c: 'content-type',
  f: 'from',
  s: 'subject',
  k: 'supported',
  t: 'to',
  v: 'via',
  r: 'refer-to',
  b: 'referred-by',
  x: 'session-expires',
  o: 'event',
  u: 'allow-events',
  a: 'accept-contact',
  j: 'reject-contact',
  d: 'request-disposition',
  y: 'identity',
};

/** Header names written in their usual case. */
const CANONICAL: Record<string, string> = {
  'call-id': 'Call-ID',
  cseq: 'CSeq',
  via: 'Via',
  www: 'WWW',
  'content-length': 'Content-Length',
  'content-type': 'Content-Type',
  'max-forwards': 'Max-Forwards',
  'user-agent': 'User-Agent',
};

export function canonicalName(name: string): string {
  return CANONICAL[name] ?? name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

const TOKEN = /^[A-Za-z0-9.!%*_+`'~-]+$/;

function headerEnd(bytes: Buffer): { at: number; sep: number } | null {
  const crlf = bytes.indexOf('\r\n\r\n');
  const lf = bytes.indexOf('\n\n');
  if (crlf === -1 && lf === -1) return null;
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { at: crlf, sep: 4 };
  return { at: lf, sep: 2 };
}

function parseHead(head: string): { start: string; headers: SipHeader[] } {
  const lines = head.split(/\r?\n/);
  const start = lines.shift() ?? '';
  const headers: SipHeader[] = [];
  for (const line of lines) {
    if (line === '') continue;
    if (/^[ \t]/.test(line)) {
      // A folded line continues the previous header.
      const last = headers[headers.length - 1];
      if (!last) throw new SipParseError(400, 'a header line starts with white space');
      last.value = `${last.value} ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw new SipParseError(400, `not a header: ${line.slice(0, 40)}`);
    const raw = line.slice(0, colon).trim().toLowerCase();
    if (!TOKEN.test(raw)) throw new SipParseError(400, 'a header name holds characters a token may not');
    headers.push({ name: COMPACT[raw] ?? raw, value: line.slice(colon + 1).trim() });
    if (headers.length > MAX_HEADERS) throw new SipParseError(400, `more than ${MAX_HEADERS} headers`);
  }
  return { start, headers };
}

export function header(m: { headers: SipHeader[] }, name: string): string | undefined {
  return m.headers.find((h) => h.name === name)?.value;
}

export function headers(m: { headers: SipHeader[] }, name: string): string[] {
  return m.headers.filter((h) => h.name === name).map((h) => h.value);
}

function contentLength(hs: SipHeader[]): number | undefined {
  const v = hs.find((h) => h.name === 'content-length')?.value;
  if (v === undefined) return undefined;
  if (!/^\d{1,10}$/.test(v)) throw new SipParseError(400, 'Content-Length is not a number');
  return Number(v);
}

const REQUIRED = ['via', 'from', 'to', 'call-id', 'cseq'];

/** A datagram (or one message cut from a stream) parsed. On UDP the body runs to the end of
 * the datagram unless Content-Length says less (RFC 3261 18.3); more is a 400. */
export function parseSipMessage(bytes: Buffer, maxBodyBytes = DEFAULT_MAX_BODY_BYTES): SipMessage {
  const end = headerEnd(bytes);
  if (!end) {
    if (bytes.length > MAX_HEADER_BYTES) throw new SipParseError(413, 'header section too large');
    // A message with no body may end after its last header line.
    return parseSipMessage(Buffer.concat([bytes, Buffer.from(bytes.includes('\r\n') ? '\r\n\r\n' : '\n\n')]), maxBodyBytes);
  }
  if (end.at > MAX_HEADER_BYTES) throw new SipParseError(413, 'header section too large');
  const { start, headers: hs } = parseHead(bytes.subarray(0, end.at).toString('utf8'));
  let body = bytes.subarray(end.at + end.sep);
  const declared = contentLength(hs);
  const message = startLine(start, hs, body);
  if (declared !== undefined) {
    if (declared > body.length) throw new SipParseError(400, 'Content-Length is larger than the body', asPartial(message));
    body = body.subarray(0, declared);
    message.body = body;
  }
  if (body.length > maxBodyBytes) throw new SipParseError(413, `body over ${maxBodyBytes} bytes`, asPartial(message));
  for (const name of REQUIRED)
    if (!hs.some((h) => h.name === name)) throw new SipParseError(400, `missing ${canonicalName(name)}`, asPartial(message));
  if (message.kind === 'request') {
    const cseq = parseCSeq(header(message, 'cseq')!);
    if (!cseq || cseq.method !== message.method) throw new SipParseError(400, 'CSeq does not match the request', message);
  }
  return message;
}

function asPartial(m: SipMessage): SipRequest | null {
  return m.kind === 'request' && m.headers.some((h) => h.name === 'via') ? m : null;
}

function startLine(start: string, hs: SipHeader[], body: Buffer): SipMessage {
  const res = /^SIP\/2\.0 (\d{3}) ?(.*)$/.exec(start);
  if (res) return { kind: 'response', status: Number(res[1]), reason: res[2] ?? '', headers: hs, body };
  const req = /^([A-Za-z]+) (\S+) SIP\/2\.0$/.exec(start);
  if (!req) throw new SipParseError(400, 'not a SIP start line');
  return { kind: 'request', method: req[1]!.toUpperCase(), uri: req[2]!, headers: hs, body };
}

export function parseCSeq(value: string): { seq: number; method: string } | null {
  const m = /^(\d{1,10})\s+([A-Za-z]+)$/.exec(value.trim());
  return m ? { seq: Number(m[1]), method: m[2]!.toUpperCase() } : null;
}

/** A header parameter (`;tag=abc`) of a name-addr or Via value. */
export function headerParam(value: string, name: string): string | undefined {
  // Parameters after the closing `>` of a name-addr, or after the value itself.
  const tail = value.includes('>') ? value.slice(value.lastIndexOf('>') + 1) : value;
  for (const part of tail.split(';').slice(1)) {
    const [k, v] = part.split('=');
    if (k?.trim().toLowerCase() === name) return (v ?? '').trim().replace(/^"(.*)"$/, '$1');
  }
  return undefined;
}

/** The URI of a name-addr (`"Alice" <sip:alice@a.example>;tag=1`) or addr-spec. */
export function nameAddrUri(value: string): string {
  const m = /<([^>]*)>/.exec(value);
  return (m ? m[1]! : value.split(';')[0]!).trim();
}

/** The display name of a name-addr, if any. */
export function displayName(value: string): string | undefined {
  const m = /^\s*(?:"((?:[^"\\]|\\.)*)"|([^<"]*?))\s*</.exec(value);
  const name = (m?.[1] ?? m?.[2])?.trim();
  return name ? name : undefined;
}

export interface Outgoing {
  headers: Array<[string, string]>;
  body?: Buffer | string;
}

function serialize(start: string, hs: Array<[string, string]>, body: Buffer): Buffer {
  const lines = [start, ...hs.map(([n, v]) => `${canonicalName(n.toLowerCase())}: ${v}`), `Content-Length: ${body.length}`, '', ''];
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'utf8'), body]);
}

export function writeRequest(method: string, uri: string, o: Outgoing): Buffer {
  const body = typeof o.body === 'string' ? Buffer.from(o.body, 'utf8') : (o.body ?? Buffer.alloc(0));
  return serialize(
    `${method} ${uri} SIP/2.0`,
    o.headers.filter(([n]) => n.toLowerCase() !== 'content-length'),
    body,
  );
}

export const REASONS: Record<number, string> = {
  100: 'Trying',
  200: 'OK',
  400: 'Bad Request',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Request Entity Too Large',
  415: 'Unsupported Media Type',
  481: 'Call/Transaction Does Not Exist',
  486: 'Busy Here',
  487: 'Request Terminated',
  488: 'Not Acceptable Here',
  491: 'Request Pending',
  500: 'Server Internal Error',
  503: 'Service Unavailable',
};

/** A response to `req` (RFC 3261 8.2.6): its Via, From, Call-ID and CSeq copied, its To with
 * our tag added when it has none. `reason` may carry a phrase of ours; `extra` more headers. */
export function writeResponse(
  req: SipRequest,
  status: number,
  o: { toTag?: string; reason?: string; headers?: Array<[string, string]>; body?: Buffer | string } = {},
): Buffer {
  const hs: Array<[string, string]> = [];
  for (const v of headers(req, 'via')) hs.push(['via', v]);
  const from = header(req, 'from');
  if (from !== undefined) hs.push(['from', from]);
  let to = header(req, 'to');
  if (to !== undefined && o.toTag && status > 100 && headerParam(to, 'tag') === undefined) to = `${to};tag=${o.toTag}`;
  if (to !== undefined) hs.push(['to', to]);
  for (const name of ['call-id', 'cseq']) {
    const v = header(req, name);
    if (v !== undefined) hs.push([name, v]);
  }
  hs.push(...(o.headers ?? []));
  const body = typeof o.body === 'string' ? Buffer.from(o.body, 'utf8') : (o.body ?? Buffer.alloc(0));
  const phrase = (o.reason ?? REASONS[status] ?? 'Unknown').replace(/[\r\n]+/g, ' ');
  return serialize(`SIP/2.0 ${status} ${phrase}`, hs, body);
}

/** Cuts whole messages out of a TCP byte stream (RFC 3261 18.3: Content-Length frames them;
 * CRLF keep-alives between messages are skipped). */
export class SipStreamFramer {
  private buf: Buffer = Buffer.alloc(0);

  constructor(private readonly maxBodyBytes = DEFAULT_MAX_BODY_BYTES) {}

  /** Whole messages now available, as bytes for parseSipMessage. Throws SipParseError when the
   * stream cannot be framed (no Content-Length, sizes over the bounds): the connection is to
   * be answered if possible and closed. */
  push(chunk: Buffer): Buffer[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Buffer[] = [];
    for (;;) {
      let skip = 0;
      while (skip < this.buf.length && (this.buf[skip] === 0x0d || this.buf[skip] === 0x0a)) skip++;
      if (skip > 0) this.buf = this.buf.subarray(skip);
      const end = headerEnd(this.buf);
      if (!end) {
        if (this.buf.length > MAX_HEADER_BYTES) throw new SipParseError(413, 'header section too large');
        return out;
      }
      if (end.at > MAX_HEADER_BYTES) throw new SipParseError(413, 'header section too large');
      const head = this.buf.subarray(0, end.at).toString('utf8');
      const lengthLine = /^(?:content-length|l)[ \t]*:[ \t]*(\S*)/im.exec(head);
      if (!lengthLine) throw new SipParseError(400, 'Content-Length is required on a stream transport');
      if (!/^\d{1,10}$/.test(lengthLine[1]!)) throw new SipParseError(400, 'Content-Length is not a number');
      const length = Number(lengthLine[1]);
      if (length > this.maxBodyBytes) {
        let partial: SipRequest | null = null;
        try {
          const { start, headers: hs } = parseHead(head);
          const m = startLine(start, hs, Buffer.alloc(0));
          partial = asPartial(m);
        } catch {
          partial = null;
        }
        throw new SipParseError(413, `body over ${this.maxBodyBytes} bytes`, partial);
      }
      const total = end.at + end.sep + length;
      if (this.buf.length < total) return out;
      out.push(this.buf.subarray(0, total));
      this.buf = this.buf.subarray(total);
    }
  }
}
