// The streaming socket's native session, opened and driven as every adapter does
// (docs/architecture.md, "Driving a session from an adapter"): opened through openLive /
// createLiveSession (the create request's validation, redaction default, History row,
// Characters, the account's places and the node's room), attached with attachLive, and driven
// with the session's typed commands (SessionDriver) under the one backpressure rule.
// AssemblyAI reports refusals on the socket (an error frame and a close code the SDK maps), so
// the session is opened right after the upgrade, before `Begin`.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError } from '../../../../core/errors.js';
import type { ServerEvent } from '../../../../core/protocol.js';
import type { LiveSession, SessionSocket } from '../../../../session/live-session.js';
import { UnframedAudio } from '../../../../session/unframed-audio.js';
import { SessionDriver, type Backpressure } from '../../../../session/session-driver.js';
import type { AppContext } from '../../../context.js';
import { attachLive, createLiveSession, openLive } from '../../../live/open-live.js';
import { AAI_CODES } from './messages.js';
import type { StreamingRequest } from './params.js';

/** A refusal said the AssemblyAI way: an error frame, then the socket closed with `code`. */
export class StreamingRefusal extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'StreamingRefusal';
  }
}

export interface StreamingLegOptions {
  req: FastifyRequest;
  socket: WebSocket;
  log: FastifyBaseLogger;
  pressure: Backpressure;
  request: StreamingRequest;
  /** A temporary token's id: the session's idempotency key, so the token opens one session. */
  tokenId: string | null;
  onEvent: (event: ServerEvent) => void;
  /** The session let the socket go (after `closed`, or a refusal or fault with its code). */
  onRelease: (code: number, reason: string) => void;
  /** A refusal of the attach, before the socket closes. */
  sendError: (e: ScribedError) => void;
}

export class StreamingLeg {
  readonly input: UnframedAudio;

  private constructor(
    readonly driver: SessionDriver,
    bytesPerSample: 1 | 2,
  ) {
    this.input = new UnframedAudio(driver, bytesPerSample);
  }

  /** The socket's session, created, claimed and attached; null when the attach was refused
   * (the refusal was sent and the socket closed). Throws a refusal of the open. */
  static async open(ctx: AppContext, accountId: string, o: StreamingLegOptions): Promise<StreamingLeg | null> {
    const opening = await openLive(ctx, o.req, {
      accountId,
      target: {
        count: 1,
        create: async () => {
          const outcome = await createLiveSession(ctx, {
            accountId,
            body: o.request.sessionBody,
            call: null,
            ...(o.tokenId ? { idempotencyKey: `assemblyai-token-${o.tokenId}` } : {}),
          });
          if (outcome.kind !== 'created') {
            if (o.tokenId) throw new StreamingRefusal(AAI_CODES.authFailed, 'Not Authorized: this temporary token was already used');
            throw new ScribedError('INTERNAL', 'a fresh idempotency key conflicted');
          }
          return [outcome.session.id];
        },
      },
      refusals: {
        streamLimit: (limit) =>
          new StreamingRefusal(
            AAI_CODES.concurrencyLimit,
            `Too many concurrent sessions: this account already streams ${limit} sessions on this node, its limit`,
          ),
        engineBusy: () => new ScribedError('ENGINE_BUSY', 'no recognizer is free on this node now; try again later'),
      },
    });
    const session: LiveSession = opening.sessions[0]!;
    let leg: StreamingLeg | null = null;
    const sink: SessionSocket = {
      send: (event) => {
        if (event.type === 'accepting' && leg) leg.input.accepting = event.accepting;
        o.onEvent(event);
      },
      close: (code, reason) => o.onRelease(code, reason),
    };
    leg = new StreamingLeg(new SessionDriver(session, sink, o.pressure), o.request.bytesPerSample);
    const attached = await attachLive(ctx, opening, [leg.driver], { socket: o.socket, log: o.log, sendError: o.sendError });
    return attached ? leg : null;
  }

  get session(): LiveSession {
    return this.driver.session;
  }

  /** Raw audio bytes, numbered for the session (AssemblyAI clients send no epoch or offset).
   * While the session does not accept audio they are dropped without moving the cursor. */
  audio(bytes: Buffer): void {
    this.input.push(bytes);
  }
}
