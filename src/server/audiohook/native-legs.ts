// The one file where an AudioHook connection meets scribed's native real-time sessions (as
// the Deepgram live facade's live-leg.ts does): a conversation's call and one session per
// channel created as every adapter creates them (server/live/open-live.ts), a continued
// conversation's sessions resumed and taken, and each leg driven through the session's typed
// commands (session/session-driver.ts). Everything else in src/server/audiohook speaks
// AudioHook only.
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { CLOSE_CODES, type ServerEvent } from '../../core/protocol.js';
import { callRequestHash } from '../../core/calls.js';
import { legTitle } from '../../core/channels.js';
import type { LiveSession, SessionSocket } from '../../session/live-session.js';
import { SessionDriver, type Backpressure } from '../../session/session-driver.js';
import type { AppContext } from '../context.js';
import { createLiveSession } from '../live/open-live.js';
import { decodeMulaw, encodeMulaw, encodePcm16le, silenceByteOf } from '../../core/audio/encodings.js';

/** What AudioHook sends (src/core/audiohook/session.ts): PCMU or L16 (little-endian) at 8 kHz. */
export type WireFormat = 'PCMU' | 'L16';

/** A new leg's input encoding: the wire's own, so the recognizer gets the samples as sent. A
 * continued conversation keeps its legs' encoding, whatever the new connection negotiated: the
 * leg converts (NativeLeg.audio). */
export function legEncoding(format: WireFormat): 'mulaw_8000' | 'pcm_s16le_8000' {
  return format === 'L16' ? 'pcm_s16le_8000' : 'mulaw_8000';
}

export interface LegSpec {
  speaker: string;
}

export interface ConversationSpec {
  accountId: string;
  /** Stable per AudioHook session: the call's and the legs' idempotency keys derive from it,
   * so a continued session finds them again. */
  audiohookSessionId: string;
  conversationId: string;
  title: string;
  /** The media format negotiated: a new leg's input encoding (legEncoding). */
  format: WireFormat;
}

/** A leg's events (the native session's), and its release: `ended` after its `closed`. */
export interface LegObserver {
  event(event: ServerEvent): void;
  released(ended: boolean, code: number, reason: string): void;
}

export class NativeLeg {
  private readonly sink: SessionSocket;
  private readonly driver: SessionDriver;
  ended = false;
  private accepting = true;
  private epoch: number;
  private sampleOffset: number;
  private readonly maxPayload: number;
  private readonly width: number;

  constructor(
    readonly session: LiveSession,
    readonly speaker: string,
    private readonly observer: LegObserver,
    pressure: Backpressure,
    private readonly wire: WireFormat = 'PCMU',
  ) {
    this.epoch = session.cursor.epoch;
    this.sampleOffset = session.cursor.epochReceived;
    this.width = session.encoding.bytesPerSample;
    const max = session.maxFramePayloadBytes;
    this.maxPayload = max - (max % this.width);
    this.sink = {
      send: (event) => {
        if (event.type === 'accepting') this.accepting = event.accepting;
        if (event.type === 'closed') this.ended = true;
        observer.event(event);
      },
      close: (code, reason) => observer.released(this.ended && code === CLOSE_CODES.normal, code, reason),
    };
    this.driver = new SessionDriver(session, this.sink, pressure);
  }

  get transcriptionId(): string {
    return this.session.transcriptionId;
  }

  /** The leg's own time so far, in samples (its session-wide capture cursor). */
  get capturedSamples(): bigint {
    return this.session.cursor.capturedSamples;
  }

  /** Samples of this channel as the wire carries them, converted when the leg's encoding is
   * the other one (a conversation continued with another format). */
  audio(wire: Buffer): void {
    const mulawLeg = this.session.encoding.name === 'mulaw_8000';
    if (this.wire === 'L16' && mulawLeg) {
      const samples = new Int16Array(wire.length / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = wire.readInt16LE(2 * i);
      return this.push(Buffer.from(encodeMulaw(samples)));
    }
    if (this.wire === 'PCMU' && !mulawLeg) {
      const pcm = encodePcm16le(decodeMulaw(wire));
      return this.push(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
    }
    this.push(wire);
  }

  /** Bytes in the leg's encoding. While the session does not accept audio (spent balance,
   * recognition backlog) they are dropped without moving the cursor. */
  private push(bytes: Buffer): void {
    if (!this.accepting) return;
    for (let at = 0; at < bytes.length; at += this.maxPayload) {
      const payload = bytes.subarray(at, Math.min(bytes.length, at + this.maxPayload));
      void this.driver.audio({ epoch: this.epoch, sampleOffset: this.sampleOffset, payload });
      this.sampleOffset += payload.length / this.width;
    }
  }

  /** Audio the client did not send (discarded, or paused): silence, so the leg's time line
   * stays the conversation's. Sent as audio rather than as a cursor jump: a gap longer than
   * the server's largest gap fill would be refused, and the cursor moves at once. */
  silence(samples: number): void {
    const per = Math.floor(this.maxPayload / this.width);
    const chunk = Buffer.alloc(Math.min(samples, per) * this.width, silenceByteOf(this.session.encoding.name));
    for (let left = samples; left > 0; left -= per) this.push(left >= per ? chunk : chunk.subarray(0, Math.min(left, per) * this.width));
  }

  close(): void {
    void this.driver.close();
  }

  attach(): Promise<void> {
    return this.session.attach(this.sink);
  }

  detach(): Promise<void> {
    return this.driver.detach();
  }
}

/** One native session per speaker, in the speakers' order, under one call. */
export class NativeConversation {
  constructor(private readonly ctx: AppContext) {}

  private async createCall(spec: ConversationSpec): Promise<string> {
    const body = { title: spec.title, externalId: spec.conversationId };
    const outcome = await this.ctx.store.createCall({
      call: {
        id: newId('call', this.ctx.now()),
        accountId: spec.accountId,
        externalId: spec.conversationId,
        title: spec.title,
        createdAt: this.ctx.now().toISOString(),
      },
      idempotency: { key: `audiohook:${spec.audiohookSessionId}`, requestHash: callRequestHash(body) },
    });
    if (outcome.kind === 'conflict')
      throw new ScribedError('IDEMPOTENCY_CONFLICT', 'this AudioHook session id was used for another conversation');
    if (outcome.kind === 'created') this.ctx.metrics.callsCreated.inc();
    return outcome.call.id;
  }

  private async createSession(spec: ConversationSpec, callId: string, speaker: string): Promise<string> {
    const body = { title: legTitle(spec.title, speaker), options: { inputEncoding: legEncoding(spec.format), segmentCommitMode: 'vad' } };
    const outcome = await createLiveSession(this.ctx, {
      accountId: spec.accountId,
      body,
      call: { callId, speaker },
      idempotencyKey: `audiohook:${spec.audiohookSessionId}:${speaker}`,
    });
    if (outcome.kind === 'conflict') throw new ScribedError('IDEMPOTENCY_CONFLICT', 'this AudioHook session id was used for another leg');
    return outcome.session.id;
  }

  /** A new conversation: its call and one session per speaker, claimed on this node. */
  async open(spec: ConversationSpec, speakers: readonly string[]): Promise<{ callId: string; sessions: LiveSession[] }> {
    const callId = await this.createCall(spec);
    const sessions: LiveSession[] = [];
    try {
      for (const speaker of speakers) {
        const id = await this.createSession(spec, callId, speaker);
        const session = await this.ctx.sessions.take(id, spec.accountId);
        if (!session) throw new ScribedError('INTERNAL', `session ${id} vanished after its creation`);
        sessions.push(session);
      }
    } catch (err) {
      await this.release(sessions);
      throw err;
    }
    return { callId, sessions };
  }

  /** A continued conversation: the account's latest call of the conversation (a chain of
   * reconnects keeps one call; without one, the call of the session it continues is created
   * under that session's key), and its legs resumed onto this node (a new epoch: whichever
   * node served the old connection lets go), a leg the earlier session lacked created. */
  async continueFrom(
    spec: ConversationSpec,
    previousSessionId: string,
    speakers: readonly string[],
  ): Promise<{ callId: string; sessions: LiveSession[] }> {
    const [latest] = await this.ctx.store.listCalls(spec.accountId, 1, { externalId: spec.conversationId });
    const callId = latest?.id ?? (await this.createCall({ ...spec, audiohookSessionId: previousSessionId }));
    const call = latest ?? (await this.ctx.store.getCall(callId, spec.accountId));
    const sessions: LiveSession[] = [];
    try {
      for (const speaker of speakers) {
        const leg = call?.legs.find((l) => l.speaker === speaker && l.sessionId !== null);
        const id = leg?.sessionId ?? (await this.createSession(spec, callId, speaker));
        // A paused leg takes a socket after a resume (a new epoch: the node that served the
        // old connection, if another, lets go).
        if (leg) await this.ctx.sessions.resume(id, spec.accountId, undefined);
        const session = await this.ctx.sessions.take(id, spec.accountId);
        if (!session) throw new ScribedError('NOT_FOUND', `session ${id} does not exist`);
        sessions.push(session);
      }
    } catch (err) {
      await this.release(sessions);
      throw err;
    }
    return { callId, sessions };
  }

  /** Claims that got no socket are let go (another node may take them at once). */
  async release(sessions: readonly LiveSession[]): Promise<void> {
    for (const s of sessions) await this.ctx.sessions.releaseIfIdle(s).catch(() => undefined);
  }
}
