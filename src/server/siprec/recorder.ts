// The SIPREC recording server (RFC 7866; docs/siprec.md): SIP dialogs from session border
// controllers, each a recording session whose streams become legs of one scribed call. The
// pure cores read the messages (core/sip/message.ts), the body (body.ts), the SDP (sdp.ts) and
// the metadata (metadata.ts), bind streams to participants by label (binding.ts) and keep the
// transaction rules (transactions.ts); this file holds the dialogs and their timers, and drives
// the legs (legs.ts) and the RTP sockets (media.ts).
//
// - INVITE: 100 Trying, then 200 OK with a recvonly answer once the call, its legs and their
//   RTP sockets exist; refused before anything is created (nothing charged): 400 malformed,
//   413 too large, 488 no codec / SRTP / metadata naming streams the SDP lacks, 503 no
//   recognizer, port or a draining node, 403 a source outside the allow list.
// - The 2xx is resent over UDP until its ACK (T1 doubling to T2, for 32 s).
// - re-INVITE and UPDATE: hold (inactive, sendonly, port unchanged), a codec change, new
//   streams (new legs of the same call), streams removed (their legs end). Hold is no end: a
//   leg ends with the dialog's BYE, or the stream's removal.
// - CANCEL before the answer: 200 to it, 487 to the INVITE, nothing left behind.
// - OPTIONS (in or out of a dialog): 200. Retransmitted requests get the response sent before.
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import {
  SipParseError,
  header,
  headers,
  nameAddrUri,
  writeRequest,
  writeResponse,
  type SipMessage,
  type SipRequest,
} from '../../core/sip/message.js';
import { siprecBody } from '../../core/sip/body.js';
import { parseOffer, writeAnswer, type OfferedStream } from '../../core/sip/sdp.js';
import { parseMetadata, readCiscoParticipants, type RecordingMetadata } from '../../core/sip/metadata.js';
import { SipRefusal, agentRuleFrom, bindStreams, checkCodecs, type AgentRule, type BoundStream } from '../../core/sip/binding.js';
import {
  ResponseCache,
  dialogKey,
  inDialogAnswer,
  okRetransmitDelays,
  toTagOf,
  transactionKey,
  type DialogState,
} from '../../core/sip/transactions.js';
import type { SiprecSettings } from '../../core/sip/settings.js';
import { ALLOW, callTitle, capabilityHeaders, hostPart, methodLabel } from '../../core/sip/answers.js';
import { MAX_CALL_LEGS } from '../../core/calls.js';
import { toScribedError } from '../../core/errors.js';
import type { AppContext } from '../context.js';
import { PortPool, RtpStreamSocket } from './media.js';
import { SiprecCalls, SiprecLeg } from './legs.js';
import type { SiprecMetrics, SessionOutcome } from './metrics.js';
import { SipTransport, SourceAllowList, type Peer, type SipHandler } from './transport.js';
import { SdesStreams } from './srtp.js';
import { contactUri } from './tls.js';

interface RecordedStream {
  key: string;
  port: number;
  speaker: string;
  leg: SiprecLeg;
  rtp: RtpStreamSocket;
  stream: OfferedStream;
}

interface Dialog {
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
  log: FastifyBaseLogger;
}

const tag = () => randomBytes(6).toString('hex');

export class SiprecRecorder implements SipHandler {
  /** The SIP sockets (also for their ports, and a SIGHUP's TLS certificate reload). */
  readonly transport: SipTransport;
  private readonly dialogs = new Map<string, Dialog>();
  private readonly byInvite = new Map<string, Dialog>();
  private readonly responses = new ResponseCache();
  private readonly ports: PortPool;
  private readonly calls: SiprecCalls;
  private readonly rule: AgentRule | null;
  private readonly allow: SourceAllowList | null;
  private readonly sweeper: NodeJS.Timeout;
  private readonly sdes: SdesStreams;

  constructor(
    private readonly ctx: AppContext,
    private readonly settings: SiprecSettings,
    private readonly metrics: SiprecMetrics,
    private readonly log: FastifyBaseLogger,
  ) {
    this.transport = new SipTransport(this, settings.maxBodyBytes, log);
    this.ports = new PortPool(settings.rtpPortMin, settings.rtpPortMax, metrics);
    this.calls = new SiprecCalls(ctx);
    this.rule = agentRuleFrom(settings.agentPattern);
    this.allow = settings.allowCidrs.length > 0 ? new SourceAllowList(settings.allowCidrs) : null;
    this.sweeper = setInterval(() => this.responses.sweep(Date.now()), 10_000);
    this.sweeper.unref();
    this.sdes = new SdesStreams(settings.allowSdesWithoutTls ?? false);
  }

  get port(): number | null {
    return this.transport.udpPort;
  }

  listen(): Promise<void> {
    return this.transport.listen(this.settings.host, this.settings.port, this.settings.tls);
  }

  /** The number of recording sessions open now. */
  get openDialogs(): number {
    return [...this.dialogs.values()].filter((d) => d.state !== 'terminated').length;
  }

  refused(err: SipParseError, peer: Peer): void {
    if (err.partial?.method === 'INVITE' && toTagOf(err.partial) === undefined)
      this.count(err.status === 413 ? 'too_large' : 'bad_request');
    this.log.warn({ status: err.status, reason: err.message, source: `${peer.address}:${peer.port}` }, 'SIP message refused');
  }

  private count(outcome: SessionOutcome): void {
    this.metrics.sessions.inc({ outcome });
  }

  private respond(req: SipRequest, peer: Peer, status: number, o: Parameters<typeof writeResponse>[2] = {}): Buffer {
    const bytes = writeResponse(req, status, o);
    peer.send(bytes);
    if (req.method !== 'ACK') this.responses.set(transactionKey(req), bytes, Date.now());
    return bytes;
  }

  message(m: SipMessage, peer: Peer): void {
    if (m.kind === 'response') return; // answers to our BYEs: nothing to do
    const method = m.method;
    if (this.allow && !this.allow.allows(peer.address)) {
      if (method !== 'ACK') this.respond(m, peer, 403, { reason: 'Forbidden (source not allowed)' });
      if (method === 'INVITE' && toTagOf(m) === undefined) this.count('forbidden');
      return;
    }
    if (method !== 'ACK') {
      const cached = this.responses.get(transactionKey(m), Date.now());
      if (cached) {
        this.metrics.retransmissions.inc({ kind: 'request' });
        peer.send(cached);
        return;
      }
    }
    const toTag = toTagOf(m);
    const callId = header(m, 'call-id')!;
    const inDialog = toTag !== undefined && method !== 'CANCEL';
    this.metrics.requests.inc({ method: inDialog && method === 'INVITE' ? 'REINVITE' : methodLabel(method), transport: peer.transport });
    if (method === 'CANCEL') return this.cancel(m, peer);
    if (!inDialog) {
      if (method === 'INVITE') return void this.invite(m, peer);
      if (method === 'OPTIONS') return void this.respond(m, peer, 200, { headers: capabilityHeaders() });
      if (method === 'ACK') return; // ACK of a refused INVITE (same transaction)
      return void this.respond(m, peer, method === 'BYE' ? 481 : 405, { headers: [['allow', ALLOW]] });
    }
    const dialog = this.dialogs.get(dialogKey(callId, toTag));
    const answer = inDialogAnswer(dialog?.state, method);
    if (answer !== 'handle') {
      if (method !== 'ACK') this.respond(m, peer, answer, answer === 405 ? { headers: [['allow', ALLOW]] } : {});
      return;
    }
    const d = dialog!;
    switch (method) {
      case 'ACK':
        clearTimeout(d.okTimer);
        d.okTimer = undefined;
        if (d.state === 'answering') d.state = 'confirmed';
        return;
      case 'BYE':
        this.respond(m, peer, 200);
        void this.end(d, 'bye');
        return;
      case 'INVITE':
      case 'UPDATE':
        void this.reoffer(d, m, peer);
        return;
      default:
        this.respond(m, peer, 200);
    }
  }

  private cancel(req: SipRequest, peer: Peer): void {
    const d = this.byInvite.get(transactionKey(req, 'INVITE'));
    if (!d) return void this.respond(req, peer, 481);
    this.respond(req, peer, 200);
    if (d.state === 'answering' && d.okTimer === undefined && d.inviteTx !== null) d.cancelled = true;
  }

  /** Reads an offer: the SDP, the metadata (XML part, else Cisco's headers), the streams bound. */
  private readOffer(req: SipRequest, known: ReadonlyMap<string, string>, taken: Set<string>, d: Dialog) {
    const body = siprecBody(req.body, header(req, 'content-type'));
    if (body.sdp === null) return null;
    const offer = parseOffer(body.sdp);
    this.sdes.offer(d.key, body.sdp, offer.streams, d.peer.transport);
    checkCodecs(offer.streams, true);
    const metadata =
      body.metadata !== null
        ? parseMetadata(body.metadata)
        : (readCiscoParticipants(headers(req, 'x-cisco-recording-participant'), header(req, 'call-id')!) ?? d.metadata);
    const bound = bindStreams(offer.streams, metadata, this.rule, known, taken);
    return { offer, metadata, bound };
  }

  private async invite(req: SipRequest, peer: Peer): Promise<void> {
    const sipCallId = header(req, 'call-id')!;
    const localTag = tag();
    const txKey = transactionKey(req);
    // Retransmissions of this INVITE get 100 until the final answer is cached.
    this.respond(req, peer, 100);
    const d: Dialog = {
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
      log: this.log.child({ sipCallId }),
    };
    this.byInvite.set(txKey, d);
    let settle: (() => void) | null = null;
    try {
      let read = this.readOffer(req, new Map(), new Set(), d);
      if (!read) throw new SipRefusal(488, 'an SDP offer is required in the INVITE');
      if (read.bound.length === 0) throw new SipRefusal(488, 'no stream to record in the offer');
      if (this.ctx.draining?.()) throw new Busy('this node is draining');
      if (!this.ctx.sessions.hasRoomFor(read.bound.length)) throw new Busy('no recognizer free for the streams');
      settle = this.calls.admit(this.settings.accountId, d.key, read.bound.length);
      if (!settle) throw new Busy('the account already streams its limit of legs on this node');
      d.metadata = read.metadata;
      const externalId = (read.metadata?.sessionId ?? header(req, 'session-id')?.split(';')[0]?.trim() ?? sipCallId).slice(0, 128);
      d.callTitle = callTitle(read.metadata, sipCallId);
      const agent = this.rule ? read.metadata?.participants.find((p) => this.rule!.test(p)) : undefined;
      d.log = d.log.child({ siprecSessionId: externalId });
      d.callId = await this.calls.callFor({
        accountId: this.settings.accountId,
        externalId,
        title: d.callTitle,
        agentId: agent ? ((agent.aor ?? agent.name)?.slice(0, 128) ?? null) : null,
      });
      d.log = d.log.child({ callId: d.callId });
      if (d.cancelled) throw new Cancelled();
      // Another dialog of this call (a stream per INVITE) may hold legs already: speakers
      // stay unique within the call.
      const existing = (await this.ctx.store.getCall(d.callId, this.settings.accountId))?.legs ?? [];
      if (existing.length > 0)
        read = {
          ...read,
          bound: bindStreams(read.offer.streams, read.metadata, this.rule, new Map(), new Set(existing.map((l) => l.speaker))),
        };
      if (existing.length + read.bound.length > MAX_CALL_LEGS) throw new SipRefusal(488, `more than ${MAX_CALL_LEGS} streams in the call`);
      const ports = this.ports.take(read.bound.length);
      if (!ports) throw new Busy('no RTP port free in the configured range');
      await this.record(d, read.bound, ports);
      d.answered = read.offer.streams.map((stream) => ({ stream, port: d.streams.get(keyOf(read.bound, stream))?.port ?? 0 }));
      if (d.cancelled) throw new Cancelled();
      this.dialogs.set(d.key, d);
      this.metrics.active.set(this.openDialogs);
      this.answer(d, req, peer);
      this.count('answered');
      d.log.info(
        {
          dialect: read.metadata?.dialect ?? 'none',
          legs: [...d.streams.values()].map((s) => ({ label: s.key, speaker: s.speaker, port: s.port, sessionId: s.leg.session.id })),
        },
        'SIPREC session answered',
      );
    } catch (err) {
      await this.end(d, err instanceof Cancelled ? 'cancel' : 'refused');
      if (err instanceof Cancelled) {
        this.respond(req, peer, 487, { toTag: d.localTag });
        this.count('cancelled');
      } else this.refuse(d, req, peer, err);
    } finally {
      settle?.();
      this.byInvite.delete(txKey);
      d.inviteTx = null;
    }
  }

  private refuse(d: Dialog, req: SipRequest, peer: Peer, err: unknown): void {
    const initial = toTagOf(req) === undefined;
    if (err instanceof SipParseError || err instanceof SipRefusal) {
      d.log.warn({ status: err.status, reason: err.message }, 'SIPREC offer refused');
      this.respond(req, peer, err.status, {
        toTag: d.localTag,
        reason: `${err.status === 488 ? 'Not Acceptable Here' : err.status === 413 ? 'Request Entity Too Large' : 'Bad Request'} (${err.message})`,
      });
      if (initial) this.count(err.status === 488 ? 'not_acceptable' : err.status === 413 ? 'too_large' : 'bad_request');
      return;
    }
    const busy = err instanceof Busy || toScribedError(err).code === 'ENGINE_BUSY';
    if (busy) d.log.warn({ reason: (err as Error).message }, 'SIPREC offer refused: busy');
    else d.log.error({ err }, 'SIPREC offer failed');
    this.respond(req, peer, busy ? 503 : 500, { toTag: d.localTag, headers: busy ? [['retry-after', '5']] : [] });
    if (initial) this.count(busy ? 'busy' : 'failed');
  }

  /** Opens a leg and an RTP socket for each bound stream, on the given ports. */
  private async record(d: Dialog, bound: readonly BoundStream[], ports: readonly number[]): Promise<void> {
    const taken = [...ports];
    try {
      for (const [i, b] of bound.entries()) {
        // A CANCEL that came meanwhile: no further leg (those made end with the refusal).
        if (d.cancelled) throw new Cancelled();
        const port = ports[i]!;
        const leg = await this.calls.openLeg(this.settings.accountId, d.callId!, d.callTitle, b.speaker, (code, message) =>
          d.log.warn({ code, message, speaker: b.speaker }, 'a SIPREC leg reported an error'),
        );
        const format = { codec: b.stream.codec!.name, payloadType: b.stream.codec!.payloadType, telephoneEvent: b.stream.telephoneEvent };
        const rtp = new RtpStreamSocket(port, format, this.metrics, (pcm) => leg.audio(pcm));
        this.sdes.attach(d.key, b.stream, rtp);
        d.streams.set(b.key, { key: b.key, port, speaker: b.speaker, leg, rtp, stream: b.stream });
        taken.splice(taken.indexOf(port), 1);
        this.metrics.legs.inc();
        await rtp.bind(this.settings.host);
      }
    } finally {
      for (const p of taken) this.ports.give(p);
    }
  }

  private answer(d: Dialog, req: SipRequest, peer: Peer): void {
    const plain = { address: this.settings.mediaAddress, sessionId: d.sdpSessionId, version: d.sdpVersion++, streams: d.answered };
    const sdp = this.sdes.answer(d.key, writeAnswer(plain), d.answered);
    const bytes = this.respond(req, peer, 200, {
      toTag: d.localTag,
      headers: [
        ['contact', contactUri(hostPart(this.settings.mediaAddress), this.transport.portOf(peer.transport), peer.transport, req.uri)],
        ...capabilityHeaders(),
        ['content-type', 'application/sdp'],
      ],
      body: sdp,
    });
    if (req.method !== 'INVITE' || peer.transport !== 'udp') return;
    // Resend the 2xx until the ACK comes (UDP: it may be lost).
    const delays = okRetransmitDelays();
    const next = (i: number) => {
      if (i >= delays.length) {
        d.okTimer = undefined;
        d.log.warn('no ACK for the 2xx: ending the recording session');
        void this.bye(d);
        return;
      }
      d.okTimer = setTimeout(() => {
        this.metrics.retransmissions.inc({ kind: 'ok_resent' });
        peer.send(bytes);
        next(i + 1);
      }, delays[i]);
    };
    next(0);
  }

  /** A new offer in the dialog (re-INVITE or UPDATE): hold, codec change, streams added or removed. */
  private async reoffer(d: Dialog, req: SipRequest, peer: Peer): Promise<void> {
    const isInvite = req.method === 'INVITE';
    if (isInvite) d.state = 'answering';
    try {
      const known = new Map([...d.streams.values()].map((s) => [s.key, s.speaker]));
      const call = d.callId ? await this.ctx.store.getCall(d.callId, this.settings.accountId) : null;
      const taken = new Set(call?.legs.map((l) => l.speaker) ?? []);
      const read = this.readOffer(req, known, taken, d);
      if (read) {
        d.metadata = read.metadata;
        const fresh = read.bound.filter((b) => !d.streams.has(b.key));
        if ((call?.legs.length ?? 0) + fresh.length > MAX_CALL_LEGS)
          throw new SipRefusal(488, `more than ${MAX_CALL_LEGS} streams in the call`);
        // Streams gone from the offer (port 0, or no m-line) end their legs.
        const live = new Set(read.bound.map((b) => b.key));
        for (const s of [...d.streams.values()]) if (!live.has(s.key)) await this.endStream(d, s);
        for (const b of read.bound) {
          const s = d.streams.get(b.key);
          if (s) {
            s.stream = b.stream;
            s.rtp.setFormat({
              codec: b.stream.codec!.name,
              payloadType: b.stream.codec!.payloadType,
              telephoneEvent: b.stream.telephoneEvent,
            });
            this.sdes.attach(d.key, b.stream, s.rtp);
          }
        }
        if (fresh.length > 0) {
          if (!this.ctx.sessions.hasRoomFor(fresh.length)) throw new Busy('no recognizer free for the new streams');
          const ports = fresh.map(() => this.ports.take(1)?.[0]);
          if (ports.some((p) => p === undefined)) {
            for (const p of ports) if (p !== undefined) this.ports.give(p);
            throw new Busy('no RTP port free in the configured range');
          }
          await this.record(d, fresh, ports as number[]);
        }
        d.answered = read.offer.streams.map((stream) => ({ stream, port: d.streams.get(keyOf(read.bound, stream))?.port ?? 0 }));
        d.log.info(
          {
            method: req.method,
            streams: read.bound.map((b) => ({
              label: b.key,
              speaker: b.speaker,
              direction: b.stream.direction,
              codec: b.stream.codec?.name,
            })),
          },
          'SIPREC session updated',
        );
      }
      this.answer(d, req, peer);
    } catch (err) {
      this.refuse(d, req, peer, err);
    } finally {
      if (isInvite && d.okTimer === undefined && d.state === 'answering') d.state = 'confirmed';
    }
  }

  private async endStream(d: Dialog, s: RecordedStream): Promise<void> {
    d.streams.delete(s.key);
    s.rtp.close();
    this.ports.give(s.port);
    this.metrics.legs.dec();
    await s.leg.end().catch((err: unknown) => d.log.warn({ err, speaker: s.speaker }, 'a SIPREC leg did not end cleanly'));
  }

  /** Ends the recording session: every leg's last final, the RTP sockets and ports freed. */
  private async end(d: Dialog, why: 'bye' | 'cancel' | 'refused' | 'shutdown'): Promise<void> {
    clearTimeout(d.okTimer);
    const wasOpen = this.dialogs.has(d.key) && d.state !== 'terminated';
    d.state = 'terminated';
    await Promise.all([...d.streams.values()].map((s) => this.endStream(d, s)));
    this.sdes.forget(d.key);
    // The dialog is remembered a while so late retransmissions find it terminated (481).
    setTimeout(() => this.dialogs.delete(d.key), 32_000).unref();
    this.metrics.active.set(this.openDialogs);
    if (wasOpen) d.log.info({ why }, 'SIPREC session ended');
  }

  /** BYE from our side (no ACK came, or this node stops): the SBC can record elsewhere. */
  private async bye(d: Dialog): Promise<void> {
    if (d.state === 'terminated') return;
    const p = d.peer;
    const via = `${hostPart(this.settings.mediaAddress)}:${this.transport.portOf(p.transport)}`;
    const bytes = writeRequest('BYE', d.remoteContact, {
      headers: [
        ['via', `SIP/2.0/${p.transport.toUpperCase()} ${via};branch=z9hG4bK${tag()}`],
        ['max-forwards', '70'],
        ['from', d.localTo],
        ['to', d.remoteFrom],
        ['call-id', d.sipCallId],
        ['cseq', `${d.localCSeq++} BYE`],
      ],
    });
    p.send(bytes);
    await this.end(d, 'shutdown');
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.dialogs.values()].map((d) => this.bye(d).catch(() => undefined)));
    await this.transport.close();
  }
}

class Busy extends Error {}
class Cancelled extends Error {}

function keyOf(bound: readonly BoundStream[], stream: OfferedStream): string {
  return bound.find((b) => b.stream.index === stream.index)?.key ?? '';
}
