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

/** What a leg's audio is: G.711 mu-law at 8 kHz, one byte a sample (AudioHook's PCMU). */
const INPUT_ENCODING = 'mulaw_8000';
const MULAW_SILENCE = 0xff;
const BYTES_PER_SAMPLE = 1;

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

  constructor(
    readonly session: LiveSession,
    readonly speaker: string,
    private readonly observer: LegObserver,
    pressure: Backpressure,
  ) {
    this.epoch = session.cursor.epoch;
    this.sampleOffset = session.cursor.epochReceived;
    const max = session.maxFramePayloadBytes;
    this.maxPayload = max - (max % BYTES_PER_SAMPLE);
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

  /** Samples of this channel. While the session does not accept audio (spent balance,
   * recognition backlog) they are dropped without moving the cursor. */
  audio(bytes: Buffer): void {
    if (!this.accepting) return;
    for (let at = 0; at < bytes.length; at += this.maxPayload) {
      const payload = bytes.subarray(at, Math.min(bytes.length, at + this.maxPayload));
      void this.driver.audio({ epoch: this.epoch, sampleOffset: this.sampleOffset, payload });
      this.sampleOffset += payload.length / BYTES_PER_SAMPLE;
    }
  }

  /** Audio the client did not send (discarded, or paused): silence, so the leg's time line
   * stays the conversation's. Sent as audio rather than as a cursor jump: a gap longer than
   * the server's largest gap fill would be refused, and the cursor moves at once. */
  silence(samples: number): void {
    const chunk = Buffer.alloc(Math.min(samples, this.maxPayload) * BYTES_PER_SAMPLE, MULAW_SILENCE);
    for (let left = samples; left > 0; left -= chunk.length) this.audio(left >= chunk.length ? chunk : chunk.subarray(0, left));
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
    const body = { title: legTitle(spec.title, speaker), options: { inputEncoding: INPUT_ENCODING, segmentCommitMode: 'vad' } };
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
