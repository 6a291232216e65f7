// The stream socket: handshake checks happen before the upgrade (a refused handshake is a
// plain HTTP error in the envelope, no socket), then frames are handed to the session.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError, toScribedError } from '../../core/errors.js';
import { fail, wsError } from '../../core/envelope.js';
import type { LiveSession, SessionSocket } from '../../session/live-session.js';
import { CLOSE_CODES } from '../../core/protocol.js';
import { hasFreeDecoder } from '../capacity.js';
import { accountStreamLimit } from '../../core/account-streams.js';
import { accountStreamsOf } from '../account-admission.js';
import { API, type AppContext } from '../context.js';
import { identify } from './identify.js';

/** Pause reading from a socket whose session has this many frames queued, resume below
 * the low mark: backpressure reaches the client through TCP instead of memory growth. */
const QUEUE_HIGH = 64;
const QUEUE_LOW = 16;

declare module 'fastify' {
  interface FastifyRequest {
    liveSession?: LiveSession;
    /** The per-account admission of this handshake, settled once its socket is attached. */
    settleAdmission?: () => void;
  }
}

function refuse(reply: FastifyReply, err: ScribedError) {
  const { status, body } = fail(err);
  reply.request.errorCode = err.code;
  return reply.code(status).send(body);
}

export function streamRoutes(ctx: AppContext): FastifyPluginAsync {
  const accountStreams = accountStreamsOf(ctx);

  /** Take one of the account's places on this node for this handshake, or refuse it. The
   * returned settle() is called once the socket is attached (its session counts it from then
   * on) or refused, or when the connection ends first (an upgrade lost on the way). */
  function admitForAccount(req: FastifyRequest<{ Params: { sessionId: string } }>, accountId: string): () => void {
    const sessionId = req.params.sessionId;
    const limit = accountStreamLimit(ctx.config.maxStreamsPerAccount);
    const streaming = ctx.sessions.all().filter((s) => s.accountId === accountId && s.hasSocket).map((s) => s.id);
    if (!accountStreams.tryAdmit(accountId, sessionId, limit, streaming)) {
      throw new ScribedError('ACCOUNT_STREAM_LIMIT', `this account already streams ${limit} sessions on this node, its limit; close one or try later (an operator sets the limit with --max-streams-per-account)`);
    }
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      accountStreams.settle(accountId, sessionId);
    };
    req.raw.socket.once('close', settle);
    return settle;
  }

  return async (app) => {
    app.get<{ Params: { sessionId: string }; Querystring: Record<string, string> }>(
      `${API}/stt/realtime/sessions/:sessionId/stream`,
      {
        websocket: true,
        config: { websocket: true },
        // GET without a body: identify() runs here, after the upgrade's form was checked
        // (connections.ts) and before the upgrade.
        preValidation: async (req, reply) => {
          let settle = () => {};
          try {
            const { accountId } = await identify(ctx, req);
            // A draining node takes no new socket: the balancer retries another node (503).
            if (ctx.draining?.()) throw new ScribedError('NODE_DRAINING', 'this node is draining before it stops; another node takes the socket');
            // Before the recognizer check: an account at its limit is told so, not ENGINE_BUSY.
            settle = admitForAccount(req, accountId);
            // No recognizer here for a session that needs one, and no room to defer its
            // recognition: refused before the upgrade and before the claim, so the balancer
            // retries another node (docs/scaling.md).
            const served = ctx.sessions.served(req.params.sessionId);
            const canDefer = ctx.sessions.deferral?.budget.hasRoom() ?? false;
            if (!served?.holdsDecoder && !served?.isDeferred && !hasFreeDecoder(ctx) && !canDefer) {
              throw new ScribedError('ENGINE_BUSY', 'every recognizer of this node is in use; another node, or this one later, takes the socket');
            }
            // The socket's node serves the session: it claims it (SESSION_BUSY while another
            // node's socket holds this epoch) and, if it came from elsewhere, restores it.
            const session = await ctx.sessions.take(req.params.sessionId, accountId);
            if (!session) throw new ScribedError('NOT_FOUND', `session ${req.params.sessionId} does not exist`);
            if (session.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
            if (session.state === 'PAUSED') throw new ScribedError('RESUME_REQUIRED');
            if (session.hasSocket) throw new ScribedError('SESSION_BUSY');
            req.liveSession = session;
            req.settleAdmission = settle;
          } catch (err) {
            settle();
            ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'refused' });
            return refuse(reply, toScribedError(err));
          }
        },
      },
      (socket: WebSocket, req) => {
        const session = req.liveSession!;
        const log = req.log.child({ sessionId: session.id });
        const sink: SessionSocket = {
          send: (event) => {
            if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(event));
          },
          close: (code, reason) => socket.close(code, reason),
          canResume: true,
        };
        let queued = 0;
        const settle = () => {
          queued -= 1;
          if (queued <= QUEUE_LOW && socket.isPaused) socket.resume();
        };

        // Handlers are installed before attach() resolves; the session's queue runs the
        // frames after the attach, and drops them if the attach failed.
        socket.on('message', (data, isBinary) => {
          queued += 1;
          if (queued >= QUEUE_HIGH && !socket.isPaused) socket.pause();
          // ws hands out Buffers by default: use them as they are, no per-frame copy.
          const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
          const work = isBinary ? session.onBinary(sink, buf) : session.onText(sink, buf.toString('utf8'));
          void work.finally(settle);
        });
        socket.on('close', () => {
          void session.detach(sink).catch((err) => log.error({ err }, 'detach failed'));
        });

        const attaching = session.attach(sink);
        void attaching.finally(() => req.settleAdmission?.()).catch(() => undefined);
        attaching.then(() => ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'upgraded' }), (err: unknown) => {
          const e = toScribedError(err);
          ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'attach_failed' });
          log.warn({ code: e.code }, 'socket attach refused');
          // Nothing attached: let the claim go, so another node can take the socket at once.
          void ctx.sessions.releaseIfIdle(session).catch((releaseErr: unknown) => log.warn({ err: releaseErr }, 'could not release the claim'));
          if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(wsError(e, true)));
          socket.close(e.code === 'ENGINE_BUSY' ? CLOSE_CODES.tryAgainLater : CLOSE_CODES.internal, e.code);
        });
      },
    );
  };
}
