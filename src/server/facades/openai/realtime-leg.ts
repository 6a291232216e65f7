// The OpenAI Realtime socket's native session, opened and driven as every adapter does
// (docs/architecture.md, "Driving a session from an adapter"): opened through openLive /
// createLiveSession (the create request's validation, redaction default, History row,
// Characters, the account's places and the node's room), attached with attachLive, and driven
// with the session's typed commands (SessionDriver) under the one backpressure rule. Unlike
// Deepgram's socket, OpenAI's client configures the session after the upgrade, so the session
// is opened at its first audio; the handshake only checks there is room (precheck), so a full
// node still refuses before the upgrade and a balancer retries another.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError } from '../../../core/errors.js';
import { accountStreamLimit } from '../../../core/account-streams.js';
import type { ServerEvent } from '../../../core/protocol.js';
import type { LiveSession, SessionSocket } from '../../../session/live-session.js';
import { UnframedAudio } from '../../../session/unframed-audio.js';
import { SessionDriver, type Backpressure } from '../../../session/session-driver.js';
import { accountStreamsOf } from '../../account-admission.js';
import type { AppContext } from '../../context.js';
import { attachLive, createLiveSession, openLive, type LiveRefusals } from '../../live/open-live.js';
import { OpenAiError } from './errors.js';

export interface SessionBody {
  title: string;
  languageHint?: string;
  options: Record<string, unknown>;
}

const refusals: LiveRefusals = {
  streamLimit: (limit) =>
    new OpenAiError(
      429,
      'invalid_request_error',
      `this account already streams ${limit} sessions on this node, its limit`,
      null,
      'rate_limit_exceeded',
    ),
  engineBusy: () => new ScribedError('ENGINE_BUSY', 'no recognizer is free on this node now; try again later'),
};

/** Before the upgrade: the refusal openLive would give now (the account at its limit, no room
 * on the node), or null. Nothing is held: the session is opened at the first audio. */
export function precheck(ctx: AppContext, accountId: string): Error | null {
  const limit = accountStreamLimit(ctx.config.maxStreamsPerAccount);
  const streaming = ctx.sessions.all().filter((s) => s.accountId === accountId && s.hasSocket).length;
  if (streaming + accountStreamsOf(ctx).inFlight(accountId) >= limit) return refusals.streamLimit(limit);
  if (!ctx.sessions.hasRoomFor(1)) return refusals.engineBusy();
  return null;
}

export interface RealtimeLegOptions {
  req: FastifyRequest;
  socket: WebSocket;
  log: FastifyBaseLogger;
  pressure: Backpressure;
  bytesPerSample: 1 | 2;
  /** Every native event, in order. */
  onEvent: (event: ServerEvent) => void;
  /** The session let the socket go (after `closed`, or a refusal or fault with its code). */
  onRelease: (code: number, reason: string) => void;
  /** A refusal of the open or the attach, in the facade's shape, before the socket closes. */
  sendError: (e: ScribedError) => void;
}

export class RealtimeLeg {
  readonly input: UnframedAudio;

  private constructor(
    readonly driver: SessionDriver,
    bytesPerSample: 1 | 2,
  ) {
    this.input = new UnframedAudio(driver, bytesPerSample);
  }

  /** The socket's session, created with `body`, claimed and attached; null when refused (the
   * refusal was sent and the socket closed). */
  static async open(ctx: AppContext, accountId: string, body: SessionBody, o: RealtimeLegOptions): Promise<RealtimeLeg | null> {
    const opening = await openLive(ctx, o.req, {
      accountId,
      target: {
        count: 1,
        create: async () => {
          const outcome = await createLiveSession(ctx, { accountId, body, call: null });
          if (outcome.kind === 'conflict') throw new ScribedError('INTERNAL', 'a fresh idempotency key conflicted');
          return [outcome.session.id];
        },
      },
      refusals,
    });
    const session: LiveSession = opening.sessions[0]!;
    let leg: RealtimeLeg | null = null;
    const sink: SessionSocket = {
      send: (event) => {
        if (event.type === 'accepting' && leg) leg.input.accepting = event.accepting;
        o.onEvent(event);
      },
      close: (code, reason) => o.onRelease(code, reason),
    };
    leg = new RealtimeLeg(new SessionDriver(session, sink, o.pressure), o.bytesPerSample);
    const attached = await attachLive(ctx, opening, [leg.driver], { socket: o.socket, log: o.log, sendError: o.sendError });
    return attached ? leg : null;
  }

  get session(): LiveSession {
    return this.driver.session;
  }

  /** Audio bytes, numbered for the session (OpenAI clients send no epoch or sampleOffset). While
   * the session does not accept audio they are dropped without moving the cursor (what was in
   * flight becomes a gap). */
  audio(bytes: Buffer): void {
    this.input.push(bytes);
  }

  commit(): void {
    void this.driver.commit();
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}
