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
// - A session with no RTP and no SIP for the inactivity timeout (the hold timeout while every
//   stream is on hold) ends as a BYE would, with a BYE sent to the SBC (core/sip/inactivity.ts).
// - Streams a re-offer adds pass the checks a new INVITE's pass (recognizers, the account's
//   stream limit, ports) before anything changes: a refused re-offer leaves the session as it was.
import type { FastifyBaseLogger } from 'fastify';
import { SipParseError, header, headers, writeResponse, type SipMessage, type SipRequest } from '../../core/sip/message.js';
import { siprecBody } from '../../core/sip/body.js';
import { parseOffer, writeAnswer } from '../../core/sip/sdp.js';
import { parseMetadata, readCiscoParticipants } from '../../core/sip/metadata.js';
import { SipRefusal, agentRuleFrom, bindStreams, checkCodecs, type AgentRule, type BoundStream } from '../../core/sip/binding.js';
import { ResponseCache, dialogKey, inDialogAnswer, okRetransmitDelays, toTagOf, transactionKey } from '../../core/sip/transactions.js';
import { DEFAULT_HOLD_TIMEOUT_MS, DEFAULT_INACTIVITY_TIMEOUT_MS, type SiprecSettings } from '../../core/sip/settings.js';
import { inactivityCheckEveryMs, inactivityVerdict, type InactivityLimits } from '../../core/sip/inactivity.js';
import { ALLOW, callTitle, capabilityHeaders, hostPart, methodLabel } from '../../core/sip/answers.js';
import { MAX_CALL_LEGS } from '../../core/calls.js';
import type { AppContext } from '../context.js';
import { PortPool, RtpStreamSocket } from './media.js';
import { SiprecCalls } from './legs.js';
import type { SiprecMetrics, SessionOutcome } from './metrics.js';
import { SipTransport, SourceAllowList, type Peer, type SipHandler } from './transport.js';
import { Busy, Cancelled, byeRequest, keyOf, livenessOf, newDialog, refusalFor, type Dialog, type RecordedStream } from './dialog.js';
import { SdesStreams } from './srtp.js';
import { contactUri } from './tls.js';

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
  private readonly watcher: NodeJS.Timeout;
  private readonly limits: InactivityLimits;
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
    this.limits = {
      inactivityMs: settings.inactivityTimeoutMs ?? DEFAULT_INACTIVITY_TIMEOUT_MS,
      holdMs: settings.holdTimeoutMs ?? DEFAULT_HOLD_TIMEOUT_MS,
    };
    this.watcher = setInterval(() => this.watch(Date.now()), inactivityCheckEveryMs(this.limits));
    this.watcher.unref();
    this.sdes = new SdesStreams(settings.allowSdesWithoutTls ?? false);
  }

  /** Ends the sessions whose SBC has sent nothing for too long. */
  private watch(nowMs: number): void {
    for (const d of this.dialogs.values()) {
      if (d.state !== 'confirmed') continue;
      const verdict = inactivityVerdict(livenessOf(d, nowMs), nowMs, this.limits);
      if (verdict === null) continue;
      d.log.warn(
        { why: verdict, quietMs: nowMs - Math.max(d.lastSipMs, d.lastRtpMs) },
        verdict === 'hold'
          ? 'no SIP from the SBC for the hold timeout: ending the recording session'
          : 'no RTP and no SIP for the inactivity timeout: ending the recording session',
      );
      void this.bye(d, verdict);
    }
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
    d.lastSipMs = Date.now();
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
    const txKey = transactionKey(req);
    // Retransmissions of this INVITE get 100 until the final answer is cached.
    this.respond(req, peer, 100);
    const d = newDialog(req, peer, txKey, this.log);
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
    const r = refusalFor(err);
    if (r.ours) d.log.error({ err }, 'SIPREC offer failed');
    else d.log.warn({ status: r.status, reason: r.message }, r.status === 503 ? 'SIPREC offer refused: busy' : 'SIPREC offer refused');
    this.respond(req, peer, r.status, { toTag: d.localTag, reason: r.reason, headers: r.headers });
    if (toTagOf(req) === undefined) this.count(r.outcome);
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
        void this.bye(d, 'no_ack');
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

  /** A new offer in the dialog (re-INVITE or UPDATE): hold, codec change, streams added or
   * removed. Every check comes before the first change, so a refusal changes nothing (RFC 3261
   * 14.1: the session stays as it was). */
  private async reoffer(d: Dialog, req: SipRequest, peer: Peer): Promise<void> {
    const isInvite = req.method === 'INVITE';
    if (isInvite) d.state = 'answering';
    let settle: (() => void) | null = null;
    let ports: number[] = [];
    try {
      const known = new Map([...d.streams.values()].map((s) => [s.key, s.speaker]));
      const call = d.callId ? await this.ctx.store.getCall(d.callId, this.settings.accountId) : null;
      const taken = new Set(call?.legs.map((l) => l.speaker) ?? []);
      const read = this.readOffer(req, known, taken, d);
      if (read) {
        const fresh = read.bound.filter((b) => !d.streams.has(b.key));
        if ((call?.legs.length ?? 0) + fresh.length > MAX_CALL_LEGS)
          throw new SipRefusal(488, `more than ${MAX_CALL_LEGS} streams in the call`);
        if (fresh.length > 0) {
          // The rules of a new INVITE: recognizers, the account's stream limit, ports.
          if (!this.ctx.sessions.hasRoomFor(fresh.length)) throw new Busy('no recognizer free for the new streams');
          settle = this.calls.admit(this.settings.accountId, `${d.key}|${header(req, 'cseq')}`, fresh.length);
          if (!settle) throw new Busy('the account already streams its limit of legs on this node');
          while (ports.length < fresh.length) {
            const [p] = this.ports.take(1) ?? [];
            if (p === undefined) throw new Busy('no RTP port free in the configured range');
            ports.push(p);
          }
        }
        // The offer is taken from here on.
        d.metadata = read.metadata;
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
          const given = ports;
          ports = [];
          await this.record(d, fresh, given);
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
      for (const p of ports) this.ports.give(p);
      settle?.();
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
  private async end(d: Dialog, why: 'bye' | 'cancel' | 'refused' | 'shutdown' | 'no_ack' | 'inactivity' | 'hold'): Promise<void> {
    clearTimeout(d.okTimer);
    const wasOpen = this.dialogs.has(d.key) && d.state !== 'terminated';
    d.state = 'terminated';
    await Promise.all([...d.streams.values()].map((s) => this.endStream(d, s)));
    this.sdes.forget(d.key);
    // The dialog is remembered a while so late retransmissions find it terminated (481).
    setTimeout(() => this.dialogs.delete(d.key), 32_000).unref();
    this.metrics.active.set(this.openDialogs);
    if (wasOpen) {
      d.log.info({ why }, 'SIPREC session ended');
      if (why !== 'cancel' && why !== 'refused') this.metrics.ended.inc({ reason: why });
    }
  }

  /** BYE from our side (no ACK came, the SBC went quiet, or this node stops): the SBC can record
   * elsewhere. */
  private async bye(d: Dialog, why: 'no_ack' | 'inactivity' | 'hold' | 'shutdown'): Promise<void> {
    if (d.state === 'terminated') return;
    d.peer.send(byeRequest(d, this.settings.mediaAddress, this.transport.portOf(d.peer.transport)));
    await this.end(d, why);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    clearInterval(this.watcher);
    await Promise.all([...this.dialogs.values()].map((d) => this.bye(d, 'shutdown').catch(() => undefined)));
    await this.transport.close();
  }
}
