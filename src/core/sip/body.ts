// A SIPREC INVITE's body (RFC 7866 section 6.1): `multipart/mixed` holding `application/sdp` and
// the recording metadata (`application/rs-metadata+xml`, or the older `application/rs-metadata`
// some SBCs still send), usually with `Content-Disposition: recording-session`, in either order;
// or SDP alone (a re-INVITE, Cisco CUBE's header-based recording). Detection is lenient: the
// parts are found by their types, not by `Require: siprec` or the `+sip.src` feature tag, which
// some senders leave out. Pure.
import { SipParseError } from './message.js';

export interface MimePart {
  contentType: string;
  disposition: string | undefined;
  body: Buffer;
}

export interface SiprecBody {
  sdp: string | null;
  metadata: string | null;
}

const METADATA_TYPES = ['application/rs-metadata+xml', 'application/rs-metadata'];
const MAX_PARTS = 16;

function mediaType(contentType: string): string {
  return contentType.split(';')[0]!.trim().toLowerCase();
}

function param(contentType: string, name: string): string | undefined {
  for (const part of contentType.split(';').slice(1)) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim().toLowerCase() === name)
      return part
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
  }
  return undefined;
}

/** The parts of a multipart body (RFC 2046 5.1): CRLF or bare LF line ends, a preamble and an
 * epilogue ignored. */
export function splitMultipart(body: Buffer, contentType: string): MimePart[] {
  const boundary = param(contentType, 'boundary');
  if (!boundary || boundary.length > 70) throw new SipParseError(400, 'multipart body without a usable boundary');
  const text = body.toString('latin1');
  const delimiter = `--${boundary}`;
  const pieces = text.split(delimiter);
  if (pieces.length < 2) throw new SipParseError(400, 'multipart body without its boundary');
  const parts: MimePart[] = [];
  // pieces[0] is the preamble; a piece starting with `--` is the closing delimiter.
  for (const piece of pieces.slice(1)) {
    if (piece.startsWith('--')) break;
    const content = piece.replace(/^[ \t]*\r?\n/, '');
    const split = /\r?\n\r?\n/.exec(content);
    const head = split ? content.slice(0, split.index) : content;
    let partBody = split ? content.slice(split.index + split[0].length) : '';
    // The line break before the next delimiter belongs to the delimiter.
    partBody = partBody.replace(/\r?\n$/, '');
    let type = 'text/plain';
    let disposition: string | undefined;
    for (const line of head.split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-type' || name === 'c') type = value;
      if (name === 'content-disposition') disposition = value.split(';')[0]!.trim().toLowerCase();
    }
    parts.push({ contentType: type, disposition, body: Buffer.from(partBody, 'latin1') });
    if (parts.length > MAX_PARTS) throw new SipParseError(400, `more than ${MAX_PARTS} body parts`);
  }
  return parts;
}

/** The SDP and the metadata of a request body, whichever order and labels they come in. */
export function siprecBody(body: Buffer, contentType: string | undefined): SiprecBody {
  if (body.length === 0) return { sdp: null, metadata: null };
  const type = mediaType(contentType ?? '');
  if (type === 'application/sdp') return { sdp: body.toString('utf8'), metadata: null };
  if (METADATA_TYPES.includes(type)) return { sdp: null, metadata: body.toString('utf8') };
  if (!type.startsWith('multipart/')) throw new SipParseError(400, `unsupported body type ${type || '(none)'}`);
  const parts = splitMultipart(body, contentType!);
  const sdp = parts.find((p) => mediaType(p.contentType) === 'application/sdp');
  // The metadata part by its type; a part marked recording-session in some other XML type too.
  const metadata =
    parts.find((p) => METADATA_TYPES.includes(mediaType(p.contentType))) ??
    parts.find((p) => p.disposition === 'recording-session' && mediaType(p.contentType).includes('xml'));
  return { sdp: sdp ? sdp.body.toString('utf8') : null, metadata: metadata ? metadata.body.toString('utf8') : null };
}
