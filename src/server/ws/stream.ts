// The stream socket: handshake checks happen before the upgrade (a refused handshake is a
// plain HTTP error in the envelope, no socket), then each message is read at the edge
// (native-wire.ts) and drives the session through its typed commands (session-driver.ts).
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError, toScribedError } from '../../core/errors.js';
import { fail, wsError } from '../../core/envelope.js';
import type { SessionSocket } from '../../session/live-session.js';
import { Backpressure, SessionDriver } from '../../session/session-driver.js';
import { attachLive, openLive, type LiveOpening, type LiveRefusals } from '../live/open-live.js';
import type { AppContext } from '../context.js';
import { servedWithout } from '../openapi/route-schema.js';
import { SOCKET_ROUTES } from '../schemas/sockets.js';
import { identify } from './identify.js';
import { nativeBinary, nativeText } from './native-wire.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The stream handshake's claimed session and account place, until its socket attaches. */
    liveOpening?: LiveOpening;
  }
}

function refuse(reply: FastifyReply, err: ScribedError) {
  const { status, body } = fail(err);
  reply.request.errorCode = err.code;
  return reply.code(status).send(body);
}

const REFUSALS: LiveRefusals = {
  streamLimit: (limit) =>
    new ScribedError(
      'ACCOUNT_STREAM_LIMIT',
      `this account already streams ${limit} sessions on this node, its limit; close one or try later (an operator sets the limit with --max-streams-per-account)`,
    ),
  engineBusy: () =>
    new ScribedError('ENGINE_BUSY', 'every recognizer of this node is in use; another node, or this one later, takes the socket'),
};

export function streamRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { sessionId: string }; Querystring: Record<string, string> }>(
      SOCKET_ROUTES.stream.url,
      {
        schema: servedWithout(SOCKET_ROUTES.stream, 'querystring').schema,
        websocket: true,
        config: { websocket: true },
        // GET without a body: identify() runs here, after the upgrade's form was checked
        // (connections.ts) and before the upgrade.
        preValidation: async (req, reply) => {
          try {
            const { accountId } = await identify(ctx, req);
            req.liveOpening = await openLive(ctx, req, { accountId, target: { sessionId: req.params.sessionId }, refusals: REFUSALS });
          } catch (err) {
            ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'refused' });
            return refuse(reply, toScribedError(err));
          }
        },
      },
      (socket: WebSocket, req) => {
        const opening = req.liveOpening!;
        const session = opening.sessions[0]!;
        const log = req.log.child({ sessionId: session.id });
        const sink: SessionSocket = {
          send: (event) => {
            if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(event));
          },
          close: (code, reason) => socket.close(code, reason),
          canResume: true,
        };
        const driver = new SessionDriver(session, sink, new Backpressure(socket));

        // Handlers are installed before attach() resolves; the session's queue runs the
        // commands after the attach, and drops them if the attach failed.
        socket.on('message', (data, isBinary) => {
          // ws hands out Buffers by default: use them as they are, no per-frame copy.
          const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
          void (isBinary ? nativeBinary(driver, buf) : nativeText(driver, buf.toString('utf8')));
        });
        socket.on('close', () => {
          void driver.detach().catch((err) => log.error({ err }, 'detach failed'));
        });
        void attachLive(ctx, opening, [driver], { socket, log, sendError: (e) => socket.send(JSON.stringify(wsError(e, true))) });
      },
    );
  };
}
