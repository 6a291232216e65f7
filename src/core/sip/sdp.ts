// The SDP of a recording session (RFC 7866 section 8): each `m=audio` line a stream the
// recording client sends (`a=sendonly`), named by its `a=label`; the answer takes every stream
// `recvonly` (RFC 3264 6.1: the answer to sendonly is recvonly) on a port of ours, with one
// codec we decode, telephone-event kept (and ignored) so DTMF does not break the negotiation.
// Parsed and written with sdp-transform. Pure.
import sdpTransform from 'sdp-transform';
import { SipParseError } from './message.js';

/** The codecs decoded: G.711 both laws, and G.722 (its RTP clock 8000 Hz, RFC 3551 4.5.2). */
export type Codec = 'PCMU' | 'PCMA' | 'G722';

export interface OfferedStream {
  /** Position of the m-line in the offer (answers keep the order). */
  index: number;
  /** The `a=label` value, when given. */
  label: string | null;
  /** 0: the stream is refused or removed. */
  port: number;
  address: string | null;
  direction: 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';
  /** The codec chosen for it and its payload type; null when none offered is supported. */
  codec: { name: Codec; payloadType: number } | null;
  /** The telephone-event payload type offered, if any (its packets are ignored). */
  telephoneEvent: number | null;
  /** Payload types of the offer with their encoding names, for messages. */
  offered: string[];
  /** The media line is RTP over SRTP (`RTP/SAVP`), which this server does not decrypt. */
  secure: boolean;
}

export interface SdpOffer {
  sessionName: string;
  streams: OfferedStream[];
}

const STATIC: Record<number, Codec> = { 0: 'PCMU', 8: 'PCMA', 9: 'G722' };

/** G.711 at 8000 Hz; G.722 is 8000 too (RFC 3551's historical clock), but some senders write
 * its sampling rate, 16000, in the rtpmap: the stream is the same. */
function clockFits(name: Codec, rate: number): boolean {
  return rate === 8000 || (name === 'G722' && rate === 16000);
}

/** Parses an offer's audio streams. Non-audio m-lines are listed as refused (port 0). */
export function parseOffer(sdp: string): SdpOffer {
  let parsed: sdpTransform.SessionDescription;
  try {
    parsed = sdpTransform.parse(sdp);
  } catch {
    throw new SipParseError(400, 'unreadable SDP');
  }
  if (!parsed.media || parsed.media.length === 0) throw new SipParseError(400, 'SDP without media');
  const sessionAddress = parsed.connection?.ip ?? null;
  const sessionDirection = parsed.direction;
  const streams = parsed.media.map((m, index): OfferedStream => {
    const payloads = String(m.payloads ?? '')
      .trim()
      .split(/\s+/)
      .filter((p) => /^\d{1,3}$/.test(p))
      .map(Number);
    const names = new Map<number, { codec: string; rate: number }>();
    for (const r of m.rtp ?? []) names.set(r.payload, { codec: r.codec.toUpperCase(), rate: r.rate ?? 8000 });
    let codec: OfferedStream['codec'] = null;
    let telephoneEvent: number | null = null;
    for (const pt of payloads) {
      const known = names.get(pt);
      const name = known?.codec ?? STATIC[pt];
      if (name === 'TELEPHONE-EVENT') telephoneEvent ??= pt;
      else if (!codec && (name === 'PCMU' || name === 'PCMA' || name === 'G722') && clockFits(name, known?.rate ?? 8000))
        codec = { name, payloadType: pt };
    }
    const audio = m.type === 'audio';
    return {
      index,
      label: m.label !== undefined ? String(m.label).trim() : null,
      port: audio ? m.port : 0,
      address: m.connection?.ip ?? sessionAddress,
      direction: m.direction ?? sessionDirection ?? 'sendrecv',
      codec: audio ? codec : null,
      telephoneEvent,
      offered: payloads.map((pt) => `${pt} ${names.get(pt)?.codec ?? STATIC[pt] ?? '?'}`),
      secure: /SAVP/i.test(m.protocol),
    };
  });
  return { sessionName: parsed.name ?? '-', streams };
}

export interface AnswerStream {
  stream: OfferedStream;
  /** Our port for it; 0 refuses it. */
  port: number;
}

/** The answer: every offered m-line in order, recvonly on our port with the chosen codec (and
 * telephone-event), or port 0 for one refused; sendrecv offers are answered recvonly too (we
 * send nothing), inactive stays inactive. */
export function writeAnswer(o: { address: string; sessionId: string; version: number; streams: AnswerStream[] }): string {
  const ip4 = !o.address.includes(':');
  const media = o.streams.map(({ stream, port }) => {
    const pts = stream.codec && port !== 0 ? [stream.codec.payloadType] : [0];
    const rtp: Array<{ payload: number; codec: string; rate: number }> = [
      { payload: pts[0]!, codec: stream.codec?.name ?? 'PCMU', rate: 8000 },
    ];
    if (stream.telephoneEvent !== null && port !== 0) {
      pts.push(stream.telephoneEvent);
      rtp.push({ payload: stream.telephoneEvent, codec: 'telephone-event', rate: 8000 });
    }
    const m: sdpTransform.MediaDescription = {
      type: 'audio',
      port,
      protocol: stream.secure && port === 0 ? 'RTP/SAVP' : 'RTP/AVP',
      payloads: pts.join(' '),
      rtp,
      fmtp: [],
      direction: stream.direction === 'inactive' || port === 0 ? 'inactive' : 'recvonly',
    };
    if (stream.telephoneEvent !== null && port !== 0) m.fmtp = [{ payload: stream.telephoneEvent, config: '0-15' }];
    if (stream.label !== null) m.label = stream.label;
    return m;
  });
  return sdpTransform.write({
    version: 0,
    origin: {
      username: 'scribed',
      sessionId: o.sessionId,
      sessionVersion: o.version,
      netType: 'IN',
      ipVer: ip4 ? 4 : 6,
      address: o.address,
    },
    name: 'scribed recording',
    connection: { version: ip4 ? 4 : 6, ip: o.address },
    timing: { start: 0, stop: 0 },
    media,
  });
}
