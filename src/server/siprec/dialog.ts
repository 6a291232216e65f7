// A recording session's dialog as the recorder keeps it (src/server/siprec/recorder.ts): its
// SIP identity, its recorded streams and what was answered, its liveness (for the inactivity
// timeout), and the requests and refusals the recorder sends in it.
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { SipParseError, header, nameAddrUri, writeRequest, type SipRequest } from '../../core/sip/message.js';
import type { OfferedStream } from '../../core/sip/sdp.js';
import type { RecordingMetadata } from '../../core/sip/metadata.js';
import { SipRefusal, type BoundStream } from '../../core/sip/binding.js';
import { dialogKey, type DialogState } from '../../core/sip/transactions.js';
import { hostPart } from '../../core/sip/answers.js';
import { sendsNothing, type Liveness } from '../../core/sip/inactivity.js';
import { toScribedError } from '../../core/errors.js';
import type { RtpStreamSocket } from './media.js';
import type { SiprecLeg } from './legs.js';
import type { SessionOutcome } from './metrics.js';
import type { Peer } from './transport.js';

export interface RecordedStream {
  key: string;
  port: number;
  speaker: string;
  leg: SiprecLeg;
  rtp: RtpStreamSocket;
  stream: OfferedStream;
}

export interface Dialog {
  key: string;
  sipCallId: string;
  localTag: string;
  state: DialogState;
  peer: Peer;
  /** The INVITE being answered (for CANCEL). */
  inviteTx: string | null;
  cancelled: boolean;
  okTimer: NodeJS.Timeout | undefined;
  /** The remote party's From (our To in requests we send) and Contact. */
  remoteFrom: string;
  localTo: string;
  remoteContact: string;
  localCSeq: number;
  callId: string | null;
  callTitle: string;
  metadata: RecordingMetadata | null;
  streams: Map<string, RecordedStream>;
  /** Every m-line answered so far, in order, with its port (a re-offer keeps them). */
  answered: Array<{ stream: OfferedStream; port: number }>;
  sdpSessionId: string;
  sdpVersion: number;
  /** The last SIP request in the dialog; the RTP packets counted on its streams when last looked
   * at, and when that count last moved (ms, Date.now()). */
  lastSipMs: number;
  rtpPacketsSeen: number;
  lastRtpMs: number;
  log: FastifyBaseLogger;
}

export const tag = (): string => randomBytes(6).toString('hex');

export function newDialog(req: SipRequest, peer: Peer, txKey: string, log: FastifyBaseLogger): Dialog {
  const sipCallId = header(req, 'call-id')!;
  const localTag = tag();
  return {
    key: dialogKey(sipCallId, localTag),
    sipCallId,
    localTag,
    state: 'answering',
    peer,
    inviteTx: txKey,
    cancelled: false,
    okTimer: undefined,
    remoteFrom: header(req, 'from')!,
    localTo: `${header(req, 'to')!};tag=${localTag}`,
    remoteContact: nameAddrUri(header(req, 'contact') ?? header(req, 'from')!),
    localCSeq: 1,
    callId: null,
    callTitle: '',
    metadata: null,
    streams: new Map(),
    answered: [],
    sdpSessionId: String(Date.now()),
    sdpVersion: 1,
    lastSipMs: Date.now(),
    rtpPacketsSeen: 0,
    lastRtpMs: -Infinity,
    log: log.child({ sipCallId }),
  };
}

/** The dialog's liveness now: RTP counted since the last look moves its time. */
export function livenessOf(d: Dialog, nowMs: number): Liveness {
  let packets = 0;
  for (const s of d.streams.values()) packets += s.rtp.packets;
  if (packets !== d.rtpPacketsSeen) {
    d.rtpPacketsSeen = packets;
    d.lastRtpMs = nowMs;
  }
  const held = [...d.streams.values()].every((s) => sendsNothing(s.stream.direction));
  return { lastSipMs: d.lastSipMs, lastRtpMs: d.lastRtpMs, held };
}

/** A BYE from our side in the dialog (its CSeq taken). */
export function byeRequest(d: Dialog, viaHost: string, viaPort: number | null): Buffer {
  const p = d.peer;
  return writeRequest('BYE', d.remoteContact, {
    headers: [
      ['via', `SIP/2.0/${p.transport.toUpperCase()} ${hostPart(viaHost)}:${viaPort};branch=z9hG4bK${tag()}`],
      ['max-forwards', '70'],
      ['from', d.localTo],
      ['to', d.remoteFrom],
      ['call-id', d.sipCallId],
      ['cseq', `${d.localCSeq++} BYE`],
    ],
  });
}

/** Too few recognizers, ports or account places, or a draining node: 503, try again later. */
export class Busy extends Error {}
export class Cancelled extends Error {}

export interface Refusal {
  status: number;
  reason: string | undefined;
  headers: Array<[string, string]>;
  /** The outcome counted when the refused request is an initial INVITE. */
  outcome: SessionOutcome;
  /** Busy and malformed offers are the sender's business (warn); anything else ours (error). */
  ours: boolean;
  message: string;
}

/** The SIP answer to an offer that failed with `err`. */
export function refusalFor(err: unknown): Refusal {
  if (err instanceof SipParseError || err instanceof SipRefusal) {
    const [words, outcome]: [string, SessionOutcome] =
      err.status === 488
        ? ['Not Acceptable Here', 'not_acceptable']
        : err.status === 413
          ? ['Request Entity Too Large', 'too_large']
          : ['Bad Request', 'bad_request'];
    return { status: err.status, reason: `${words} (${err.message})`, headers: [], outcome, ours: false, message: err.message };
  }
  const busy = err instanceof Busy || toScribedError(err).code === 'ENGINE_BUSY';
  return {
    status: busy ? 503 : 500,
    reason: undefined,
    headers: busy ? [['retry-after', '5']] : [],
    outcome: busy ? 'busy' : 'failed',
    ours: !busy,
    message: (err as Error).message,
  };
}

export function keyOf(bound: readonly BoundStream[], stream: OfferedStream): string {
  return bound.find((b) => b.stream.index === stream.index)?.key ?? '';
}
