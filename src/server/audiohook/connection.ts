// One AudioHook connection after its upgrade (docs/audiohook.md): the protocol core
// (src/core/audiohook/session.ts) checks every message; this drives the conversation's legs
// (native-legs.ts) and sends the server's messages. `open` creates the call and a leg per
// channel (`external` the customer, `internal` the agent), or with continuedSessions resumes
// the legs of the session it continues; binary frames are split per channel into the legs;
// `discarded` and `resumed` gaps become silence on each leg; the legs' partials and finals go
// back as `event` messages; `close` ends the legs (reason `end`) or lets them go for the
// session that continues them (`reconnect`). A protocol error is answered with `disconnect`
// and the connection waits for the client's `close`, as the protocol has it.
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { AudiohookProtocolError, type MediaChannel, type OpenParameters, type ServerMessage } from '../../core/audiohook/messages.js';
import { AUDIO_RATE, AudiohookSession, bytesPerSample, type SessionAction } from '../../core/audiohook/session.js';
import { transcriptEntity } from '../../core/audiohook/transcript.js';
import { accountStreamLimit } from '../../core/account-streams.js';
import { toScribedError } from '../../core/errors.js';
import { samplesToMicros } from '../../core/audiohook/duration.js';
import type { ServerEvent } from '../../core/protocol.js';
import { Backpressure } from '../../session/session-driver.js';
import { accountStreamsOf } from '../account-admission.js';
import type { AppContext } from '../context.js';
import type { AudiohookMetrics } from './metrics.js';
import { NativeConversation, NativeLeg, type WireFormat } from './native-legs.js';
import type { AudiohookRegistry, RegisteredConnection } from './registry.js';

/** Speakers of the channels: Genesys' `external` is the customer, `internal` the agent. */
export const CHANNEL_SPEAKERS: Record<MediaChannel, string> = { external: 'customer', internal: 'agent' };
/** Audio held while a continued session's legs are being taken (the old connection may still
 * be letting them go): 30 s of stereo. Past it the connection is refused. */
const MAX_PENDING_BYTES = 30 * AUDIO_RATE * 2;
/** How long a continued session waits for the connection it continues to let its legs go. */
const CONTINUE_WAIT_MS = 5000;
/** How long the client has to answer `disconnect` with `close`, and `closed` with its close. */
const CLOSE_GRACE_MS = 5000;

export interface ConnectionInfo {
  sessionId: string;
  accountId: string;
  organizationId: string;
  correlationId: string;
}

export class AudiohookConnection implements RegisteredConnection {
  readonly protocol: AudiohookSession;
  readonly released: Promise<void>;
  private release!: () => void;
  private legs: NativeLeg[] | null = null;
  private pending: Array<() => void> = [];
  private pendingBytes = 0;
  private origins: number[] = [];
  private language: string | null = null;
  private closeReason: string | null = null;
  private graceTimer: NodeJS.Timeout | undefined;
  private readonly pressure: Backpressure;
  private readonly log: FastifyBaseLogger;

  constructor(
    private readonly ctx: AppContext,
    private readonly socket: WebSocket,
    private readonly info: ConnectionInfo,
    private readonly metrics: AudiohookMetrics,
    private readonly registry: AudiohookRegistry,
    log: FastifyBaseLogger,
  ) {
    this.protocol = new AudiohookSession(info.sessionId);
    this.released = new Promise((resolve) => (this.release = resolve));
    this.pressure = new Backpressure(socket);
    this.log = log.child({ audiohookSessionId: info.sessionId, correlationId: info.correlationId, organizationId: info.organizationId });
  }

  get sessionId(): string {
    return this.info.sessionId;
  }

  start(): void {
    this.registry.add(this);
    this.metrics.connections.inc();
    this.metrics.open.inc();
    this.socket.on('message', (data, isBinary) => {
      const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      if (isBinary) this.onAudio(buf);
      else this.onText(buf.toString('utf8'));
    });
    this.socket.on('close', () => {
      clearTimeout(this.graceTimer);
      this.metrics.open.dec();
      this.registry.remove(this);
      void this.letGo(false).finally(() => this.release());
    });
  }

  private send(messages: ServerMessage[]): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    for (const m of messages) this.socket.send(JSON.stringify(m));
  }

  private onText(text: string): void {
    let outcome;
    try {
      outcome = this.protocol.text(text);
    } catch (err) {
      if (err instanceof AudiohookProtocolError && err.reason === 'media') this.metrics.refused.inc({ reason: 'media' });
      if (err instanceof AudiohookProtocolError) return this.fail(err.reason, err.info);
      throw err;
    }
    this.metrics.messages.inc({ type: outcome.message.type });
    this.send(outcome.replies);
    this.act(outcome.action);
  }

  private act(action: SessionAction): void {
    switch (action.kind) {
      case 'open':
        this.opening = this.open(action.open, action.media.channels).catch((err: unknown) => this.refuseOpen(err));
        return;
      case 'close':
        this.closeReason = action.reason;
        void this.close(action.reason);
        return;
      case 'gap':
        this.metrics.gapSeconds.inc((action.samples * this.protocol.channels.length) / AUDIO_RATE);
        this.whenReady(0, () => this.legs!.forEach((l) => l.silence(action.samples)));
        return;
      case 'paused':
        this.log.info({ positionUs: this.protocol.positionUs }, 'AudioHook client paused its audio');
        return;
      case 'update':
        this.language = action.language ?? this.language;
        this.log.info({ language: action.language }, 'AudioHook update');
        return;
      case 'client_error':
        this.log.warn({ code: action.code, message: action.message }, 'AudioHook client reported an error');
        return;
      case 'none':
        return;
    }
  }

  private onAudio(frame: Buffer): void {
    let parts: Buffer[];
    try {
      parts = this.protocol.audio(frame);
    } catch (err) {
      if (err instanceof AudiohookProtocolError) return this.fail(err.reason, err.info);
      throw err;
    }
    this.metrics.audioSeconds.inc(frame.length / (AUDIO_RATE * bytesPerSample(this.protocol.media!)));
    this.whenReady(frame.length, () => parts.forEach((p, i) => this.legs![i]!.audio(p)));
  }

  /** Runs now when the legs are there, else once they are (in order). */
  private whenReady(bytes: number, fn: () => void): void {
    if (this.legs) return fn();
    this.pendingBytes += bytes;
    if (this.pendingBytes > MAX_PENDING_BYTES) return this.fail('audio', 'Too much audio before the session was ready');
    this.pending.push(fn);
  }

  /** A protocol error: `disconnect` (reason error), then the client's `close` is awaited. */
  private fail(reason: AudiohookProtocolError['reason'], info: string): void {
    this.metrics.invalid.inc({ reason });
    this.log.warn({ reason, info }, 'AudioHook protocol error: disconnecting');
    this.disconnect('error', info);
  }

  private disconnect(reason: 'completed' | 'error', info: string): void {
    const state = this.protocol.state;
    if (state === 'DISCONNECTING' || state === 'CLOSING' || state === 'CLOSED') return;
    this.send([this.protocol.disconnect(reason, info)]);
    this.graceTimer = setTimeout(() => this.socket.close(1000, 'disconnected'), CLOSE_GRACE_MS);
  }

  requestReconnect(info: string): boolean {
    if (this.protocol.state !== 'ACTIVE' && this.protocol.state !== 'PAUSED') return false;
    this.send([this.protocol.build('reconnect', { info })]);
    this.metrics.reconnects.inc();
    this.log.info('asked the AudioHook client to reconnect');
    return true;
  }

  private async open(open: OpenParameters, channels: readonly MediaChannel[]): Promise<void> {
    // The client's position at open: transcript offsets are on the AudioHook session's
    // position, the legs' own time less (their time at this open, less this position).
    const openUs = this.protocol.positionUs;
    const { accountId } = this.info;
    const speakers = channels.map((c) => CHANNEL_SPEAKERS[c]);
    this.language = open.language;
    const p = open.participant;
    const title =
      `Genesys ${[p.ani && `ani ${p.ani}`, p.aniName && `(${p.aniName})`, p.dnis && `dnis ${p.dnis}`].filter(Boolean).join(' ') || open.conversationId}`.slice(
        0,
        180,
      );
    const format = this.protocol.media!.format as WireFormat;
    const spec = { accountId, audiohookSessionId: this.info.sessionId, conversationId: open.conversationId, title, format };
    const conversation = new NativeConversation(this.ctx);
    const continued = open.continuedSessions.map((c) => c.id);
    // Each channel is a stream of the account (a leg counts as a stream everywhere).
    const accountStreams = accountStreamsOf(this.ctx);
    const admissionIds = speakers.map((s) => `audiohook-${this.info.sessionId}-${s}`);
    const limit = accountStreamLimit(this.ctx.config.maxStreamsPerAccount);
    const streaming = this.ctx.sessions
      .all()
      .filter((s) => s.accountId === accountId && s.hasSocket)
      .map((s) => s.id);
    const admitted: string[] = [];
    const settle = () => admitted.splice(0).forEach((id) => accountStreams.settle(accountId, id));
    try {
      for (const id of admissionIds) {
        if (!accountStreams.tryAdmit(accountId, id, limit, streaming))
          throw new AudiohookProtocolError('state', `This account already streams ${limit} legs on this node, its limit`);
        admitted.push(id);
      }
      let opened;
      if (continued.length > 0) {
        this.metrics.continued.inc();
        // The client moves its audio here once `opened` comes; the old connection lets its
        // legs go when the client closes it, so `opened` goes first and audio waits.
        this.send([this.protocol.opened()]);
        await this.registry.releasedOf(continued, CONTINUE_WAIT_MS);
        opened = await conversation.continueFrom(spec, continued[continued.length - 1]!, speakers);
      } else {
        if (!this.ctx.sessions.hasRoomFor(speakers.length))
          throw new AudiohookProtocolError('state', `${speakers.length} recognizers are not free on this node now; try again later`);
        opened = await conversation.open(spec, speakers);
      }
      const legs = opened.sessions.map((session, i) => new NativeLeg(session, speakers[i]!, this.observer(i), this.pressure, format));
      const attached = await Promise.allSettled(legs.map((l) => l.attach()));
      const refused = attached.find((a) => a.status === 'rejected');
      if (refused) {
        for (const [i, a] of attached.entries()) if (a.status === 'fulfilled') await legs[i]!.detach().catch(() => undefined);
        await conversation.release(opened.sessions);
        throw refused.reason;
      }
      this.origins = legs.map((l) => samplesToMicros(Number(l.capturedSamples), AUDIO_RATE) - openUs);
      this.legs = legs;
      this.log.info(
        { callId: opened.callId, conversationId: open.conversationId, sessionIds: legs.map((l) => l.session.id), channels, continued },
        'AudioHook session opened',
      );
      if (this.protocol.state === 'OPENING') this.send([this.protocol.opened()]);
      for (const fn of this.pending.splice(0)) fn();
      this.pendingBytes = 0;
      if (this.socket.readyState !== this.socket.OPEN) await this.letGo(false);
    } finally {
      settle();
    }
  }

  private refuseOpen(err: unknown): void {
    if (err instanceof AudiohookProtocolError) {
      this.metrics.refused.inc({ reason: 'admission' });
      return this.fail(err.reason, err.info);
    }
    const e = toScribedError(err);
    this.metrics.refused.inc({ reason: 'admission' });
    if (e.code === 'INTERNAL') this.log.error({ err }, 'AudioHook open failed');
    else this.log.warn({ code: e.code, message: e.message }, 'AudioHook open refused');
    this.disconnect('error', `${e.code}: ${e.message}`);
  }

  private observer(channel: number) {
    return {
      event: (event: ServerEvent) => {
        if (event.type === 'partial' || event.type === 'final') {
          const ch = this.protocol.channels[channel]!;
          const entity = transcriptEntity(event, {
            legKey: this.legs?.[channel]?.transcriptionId ?? String(channel),
            channel: ch,
            channelId: channel,
            originUs: this.origins[channel] ?? 0,
            language: this.language,
          });
          if (!entity) return;
          const state = this.protocol.state;
          if (state !== 'ACTIVE' && state !== 'PAUSED' && state !== 'CLOSING') return;
          this.metrics.events.inc({ final: String(event.type === 'final') });
          this.send([this.protocol.build('event', { entities: [entity] })]);
        } else if (event.type === 'error') {
          this.log.warn({ code: event.code, message: event.message, channel }, 'a leg reported an error');
        }
      },
      released: (ended: boolean, code: number, reason: string) => {
        if (!ended) this.log.warn({ code, reason, channel }, 'a leg let its socket go');
        this.legsSettled?.();
      },
    };
  }

  private legsSettled: (() => void) | undefined;
  /** The open in progress (a continued session's legs can take seconds to restore). */
  private opening: Promise<void> | null = null;

  /** `close` from the client: `end` closes the legs (their last finals go out first), any
   * other reason lets them go paused, for a session that continues them; then `closed`. */
  private async close(reason: string): Promise<void> {
    if (this.opening) await this.opening;
    await this.letGo(reason === 'end' || reason === 'disconnect');
    this.send([this.protocol.closed()]);
    this.log.info({ reason, audioSeconds: this.protocol.audioSamples / AUDIO_RATE }, 'AudioHook session closed');
    this.graceTimer = setTimeout(() => this.socket.close(1000, 'closed'), CLOSE_GRACE_MS);
    this.release();
  }

  private letting: Promise<void> | null = null;

  /** Closes (`end`) or detaches every leg, once. */
  private letGo(end: boolean): Promise<void> {
    if (this.letting) return this.letting;
    const legs = this.legs;
    if (!legs) return Promise.resolve();
    this.letting = (async () => {
      if (end) {
        const allEnded = new Promise<void>((resolve) => {
          this.legsSettled = () => {
            if (legs.every((l) => l.ended)) resolve();
          };
        });
        for (const leg of legs) leg.close();
        await Promise.race([allEnded, new Promise((r) => setTimeout(r, 30_000))]);
      }
      for (const leg of legs)
        await leg.detach().catch((err: unknown) => this.log.warn({ err, sessionId: leg.session.id }, 'detach failed'));
    })();
    return this.letting;
  }

  /** Close reason the client gave, for logs. */
  get closedWith(): string | null {
    return this.closeReason;
  }
}
