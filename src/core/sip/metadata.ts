// Recording metadata (RFC 7865) read into one shape, whichever dialect sent it:
// - RFC 7865, `urn:ietf:params:xml:ns:recording:1`: `participant_id`/`stream_id`/`session_id`
//   attributes, streams tied to participants by `participantstreamassoc` (send/recv);
// - the draft namespace `urn:ietf:params:xml:ns:recording` (Oracle/Acme Packet, Metaswitch):
//   `id` attributes, `send`/`recv` inside each `participant`;
// - BroadWorks/Webex, `urn:ietf:params:xml:ns:siprec`: the RFC's elements with vendor
//   `extensiondata` (ignored);
// - Cisco CUBE: no XML, `X-Cisco-Recording-Participant` headers naming each participant and
//   the m-lines it sends (readCiscoParticipants).
// Tag and attribute names are matched case-insensitively and both id spellings are read in every
// dialect: senders mix them. Parsed with fast-xml-parser, entities not expanded. Pure.
import { XMLParser } from 'fast-xml-parser';
import { SipParseError, nameAddrUri, displayName, headerParam } from './message.js';

export type Dialect = 'rfc7865' | 'draft' | 'broadworks' | 'cisco' | 'none';

export interface MetaParticipant {
  id: string;
  aor: string | null;
  name: string | null;
  /** Ids of the streams this participant sends. */
  sends: string[];
}

export interface MetaStream {
  id: string;
  label: string | null;
}

export interface RecordingMetadata {
  dialect: Dialect;
  /** The communication session's id (RFC 7865 `session_id`): the same in every recording
   * session of one call, so a stream per INVITE lands in one scribed call. */
  sessionId: string | null;
  /** The recorded call's SIP Session-ID / Call-ID, when the metadata gives it. */
  sipSessionId: string | null;
  participants: MetaParticipant[];
  streams: MetaStream[];
}

const NAMESPACES: Array<[string, Dialect]> = [
  ['urn:ietf:params:xml:ns:recording:1', 'rfc7865'],
  ['urn:ietf:params:xml:ns:recording', 'draft'],
  ['urn:ietf:params:xml:ns:siprec', 'broadworks'],
];
const MAX_ITEMS = 64;
const ID_CHARS = 256;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  removeNSPrefix: true,
  processEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  transformTagName: (n) => n.toLowerCase(),
  transformAttributeName: (n) => n.toLowerCase(),
  isArray: (name) => ['participant', 'stream', 'session', 'send', 'recv', 'participantstreamassoc', 'nameid', 'name', 'aor'].includes(name),
});

type Node = Record<string, unknown>;

function list(v: unknown): Node[] {
  if (v === undefined || v === null) return [];
  return (Array.isArray(v) ? v : [v]).map((x) => (typeof x === 'object' && x !== null ? (x as Node) : { '#text': String(x) }));
}

function text(v: unknown): string | null {
  const first = Array.isArray(v) ? v[0] : v;
  if (first === undefined || first === null) return null;
  const s = typeof first === 'object' ? (first as Node)['#text'] : first;
  if (s === undefined || s === null) return null;
  const t = String(s).trim();
  return t === '' ? null : t.slice(0, ID_CHARS);
}

function attr(n: Node, ...names: string[]): string | null {
  for (const name of names) {
    const v = n[`@${name}`];
    if (typeof v === 'string' && v.trim() !== '') return v.trim().slice(0, ID_CHARS);
  }
  return null;
}

function dialectOf(xml: string): Dialect {
  const declared = [...xml.matchAll(/xmlns(?::[\w.-]+)?\s*=\s*["']([^"']+)["']/g)].map((m) => m[1]!.trim().toLowerCase());
  for (const [ns, dialect] of NAMESPACES) if (declared.includes(ns)) return dialect;
  throw new SipParseError(400, 'recording metadata in no known namespace');
}

/** The recording metadata of an INVITE or re-INVITE. Throws SipParseError (400) on XML it
 * cannot read. */
export function parseMetadata(xml: string): RecordingMetadata {
  const dialect = dialectOf(xml);
  let doc: Node;
  try {
    doc = parser.parse(xml, true) as Node;
  } catch (err) {
    throw new SipParseError(400, `unreadable recording metadata: ${(err as Error).message.split('\n')[0]}`);
  }
  const root = doc['recording'];
  if (!root || typeof root !== 'object') throw new SipParseError(400, 'recording metadata without its <recording> element');
  const r = root as Node;
  const sessions = list(r['session']);
  const session = sessions[0];
  const participantsRaw = list(r['participant']);
  const streamsRaw = list(r['stream']);
  if (participantsRaw.length > MAX_ITEMS || streamsRaw.length > MAX_ITEMS)
    throw new SipParseError(400, `recording metadata with more than ${MAX_ITEMS} participants or streams`);
  const participants = participantsRaw.flatMap((p): MetaParticipant[] => {
    const id = attr(p, 'participant_id', 'id');
    if (!id) return [];
    const nameIds = list(p['nameid']);
    const nameId = nameIds[0] ?? {};
    const aor = attr(nameId, 'aor') ?? text(nameId['aor']) ?? text(p['aor']);
    const name = text(nameId['name']) ?? text(p['name']);
    const sends = list(p['send'])
      .map((s) => text(s))
      .filter((s): s is string => s !== null);
    return [{ id, aor, name, sends }];
  });
  for (const assoc of list(r['participantstreamassoc'])) {
    const pid = attr(assoc, 'participant_id', 'id');
    const p = participants.find((x) => x.id === pid);
    if (!p) continue;
    for (const s of list(assoc['send'])) {
      const sid = text(s);
      if (sid && !p.sends.includes(sid)) p.sends.push(sid);
    }
  }
  const streams = streamsRaw.flatMap((s): MetaStream[] => {
    const id = attr(s, 'stream_id', 'id');
    return id ? [{ id, label: text(s['label']) }] : [];
  });
  return {
    dialect,
    sessionId: session ? attr(session, 'session_id', 'id') : null,
    sipSessionId: session ? text(session['sipsessionid']) : null,
    participants,
    streams,
  };
}

/** Cisco CUBE's header-based metadata: one `X-Cisco-Recording-Participant` header per party,
 * a name-addr whose `media-index` parameter lists the m-line indexes (0-based, space or comma
 * separated) it sends. Streams are named by m-line index here (`m0`, `m1`) and labelled by it,
 * so binding by label (sdp `a=label`, or the index when CUBE leaves the label out) applies. */
export function readCiscoParticipants(values: readonly string[], callId: string): RecordingMetadata | null {
  if (values.length === 0) return null;
  const participants: MetaParticipant[] = [];
  const streams: MetaStream[] = [];
  for (const [i, value] of values.slice(0, MAX_ITEMS).entries()) {
    const indexes = (headerParam(value, 'media-index') ?? '').split(/[\s,]+/).filter((x) => /^\d{1,2}$/.test(x));
    const sends = indexes.map((x) => `m${x}`);
    for (const id of sends) if (!streams.some((s) => s.id === id)) streams.push({ id, label: `#${id.slice(1)}` });
    participants.push({ id: `p${i}`, aor: nameAddrUri(value) || null, name: displayName(value) ?? null, sends });
  }
  return { dialect: 'cisco', sessionId: null, sipSessionId: callId, participants, streams };
}
