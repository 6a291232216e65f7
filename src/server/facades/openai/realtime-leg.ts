// The one place the OpenAI Realtime facade meets today's session API (so it can be switched
// to the session commands in one place): a native real-time session of the account opened as
// POST .../sessions opens one (same validation, redaction default, History row, Characters),
// claimed for this socket, and driven with the native socket's calls: audio framed here (OpenAI
// clients send no epoch or sampleOffset), commit and close as the native text commands, the
// session's events handed to the facade's translator.
import { randomUUID } from 'node:crypto';
import { encodeAudioFrame } from '../../../core/frame.js';
import { newId } from '../../../core/ids.js';
import { ScribedError } from '../../../core/errors.js';
import { requestHash, validateCreateSession, withRedactionDefault } from '../../../core/session-options.js';
import { applyRecognizerCapabilities } from '../../../core/recognizer-capabilities.js';
import { accountStreamLimit } from '../../../core/account-streams.js';
import type { LiveSession, SessionSocket } from '../../../session/live-session.js';
import type { ServerEvent } from '../../../core/protocol.js';
import { accountStreamsOf } from '../../account-admission.js';
import { nodeCapacity } from '../../capacity.js';
import type { AppContext } from '../../context.js';

export interface SessionBody {
  title: string;
  languageHint?: string;
  options: Record<string, unknown>;
}

/** Admission of one stream of the account on this node, before its session exists: the
 * account's stream limit and a recognizer (free, reclaimable or deferrable). `settle` lets the
 * admission go once the session holds its socket (or never will). */
export function admitStream(ctx: AppContext, accountId: string, pendingId: string): { settle: () => void } | { refused: 'account_limit' | 'busy'; limit: number } {
  const accountStreams = accountStreamsOf(ctx);
  const limit = accountStreamLimit(ctx.config.maxStreamsPerAccount);
  const streaming = ctx.sessions.all().filter((s) => s.accountId === accountId && s.hasSocket).map((s) => s.id);
  if (!accountStreams.tryAdmit(accountId, pendingId, limit, streaming)) return { refused: 'account_limit', limit };
  let settled = false;
  const settle = () => {
    if (settled) return;
    settled = true;
    accountStreams.settle(accountId, pendingId);
  };
  const c = nodeCapacity(ctx);
  const room = c === null || c.decoders - c.busy + c.reclaimable >= 1 || (ctx.sessions.deferral?.budget.hasRoom() ?? false);
  if (!room) {
    settle();
    return { refused: 'busy', limit };
  }
  return { settle };
}

/** A new native session of the account, claimed for a socket. */
export async function openSession(ctx: AppContext, accountId: string, body: SessionBody): Promise<LiveSession> {
  const valid = applyRecognizerCapabilities(validateCreateSession(body), {
    languages: ctx.engine.info.languages,
    detectsLanguage: ctx.engine.info.detectsLanguage ?? false,
  });
  const outcome = await ctx.store.createSession({
    accountId,
    // Each socket is its own session: a fresh key, nothing to replay.
    idempotencyKey: `openai-realtime-${randomUUID()}`,
    requestHash: requestHash(body),
    sampleRateHz: valid.effectiveOptions.sampleRateHz,
    call: null,
    session: {
      id: newId('rts', ctx.now()),
      accountId,
      transcriptionId: newId('stt', ctx.now()),
      title: valid.title,
      languageHint: valid.languageHint,
      options: withRedactionDefault(valid.effectiveOptions, (await ctx.store.getRedactionDefault(accountId))?.policies) as unknown as Record<string, unknown>,
      createdAt: ctx.now().toISOString(),
    },
  });
  if (outcome.kind === 'conflict') throw new ScribedError('INTERNAL', 'a fresh idempotency key conflicted');
  ctx.metrics.sessionsCreated.inc();
  const session = await ctx.sessions.take(outcome.session.id, accountId);
  if (!session) throw new ScribedError('INTERNAL', `session ${outcome.session.id} vanished after its creation`);
  return session;
}

export interface RealtimeLegOptions {
  session: LiveSession;
  bytesPerSample: 1 | 2;
  maxFramePayloadBytes: number;
  /** Every native event, in order. */
  onEvent: (event: ServerEvent) => void;
  /** The session let the socket go (after `closed`, or a refusal or fault with its code). */
  onRelease: (code: number, reason: string) => void;
  /** Counts the session's pending work (the socket is paused while too much is pending). */
  track: (work: Promise<void>) => void;
}

export class RealtimeLeg {
  private readonly sink: SessionSocket;
  private accepting = true;
  private readonly epoch: number;
  private sampleOffset: number;
  private readonly maxPayload: number;
  /** Bytes short of a whole sample, kept for the next append. */
  private carry = Buffer.alloc(0);

  constructor(private readonly o: RealtimeLegOptions) {
    this.epoch = o.session.cursor.epoch;
    this.sampleOffset = o.session.cursor.epochReceived;
    this.maxPayload = o.maxFramePayloadBytes - (o.maxFramePayloadBytes % o.bytesPerSample);
    this.sink = {
      send: (event) => {
        if (event.type === 'accepting') this.accepting = event.accepting;
        o.onEvent(event);
      },
      close: (code, reason) => o.onRelease(code, reason),
    };
  }

  get session(): LiveSession {
    return this.o.session;
  }

  attach(): Promise<void> {
    return this.o.session.attach(this.sink);
  }

  detach(): Promise<void> {
    return this.o.session.detach(this.sink);
  }

  /** Audio bytes; while the session does not accept audio they are dropped without moving the
   * cursor (what was in flight becomes a gap). */
  audio(bytes: Buffer): void {
    let data = this.carry.length > 0 ? Buffer.concat([this.carry, bytes]) : bytes;
    const whole = data.length - (data.length % this.o.bytesPerSample);
    this.carry = Buffer.from(data.subarray(whole));
    data = data.subarray(0, whole);
    if (!this.accepting) return;
    for (let at = 0; at < data.length; at += this.maxPayload) {
      const payload = data.subarray(at, Math.min(data.length, at + this.maxPayload));
      this.o.track(this.o.session.onBinary(this.sink, encodeAudioFrame({ epoch: this.epoch, sampleOffset: this.sampleOffset, payload })));
      this.sampleOffset += payload.length / this.o.bytesPerSample;
    }
  }

  commit(): void {
    this.o.track(this.o.session.onText(this.sink, '{"type":"commit"}'));
  }

  close(): void {
    this.o.track(this.o.session.onText(this.sink, '{"type":"close"}'));
  }
}
