// The watch socket: a read-only subscriber to one session's events, for a supervisor's screen
// while a PBX, `scribed rtp` or `scribed stream` feeds the call (docs/protocol.md, "Watching a
// session"). It takes the stream socket's credentials (identify), no recognizer and no place
// in the account's stream limit; it receives what the stream socket receives but acks, pongs
// and errors, after a `watching` snapshot; it may send only `ping`.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError, toScribedError } from '../../core/errors.js';
import { fail, wsError } from '../../core/envelope.js';
import { parseControlMessage } from '../../core/frame.js';
import { CLOSE_CODES, serverEvent, type ServerEvent } from '../../core/protocol.js';
import type { LiveSession, SessionSocket } from '../../session/live-session.js';
import { API, type AppContext } from '../context.js';
import { deskWatchers } from './desk-watchers.js';
import { servedWithout } from '../openapi/route-schema.js';
import { SOCKET_ROUTES } from '../schemas/sockets.js';
import { identify, type SocketRequest } from './identify.js';

/** Watchers one session takes at once: a call has a supervisor or two, and each watcher costs
 * the session a send per event, so the bound keeps one call's fan-out small. */
export const WATCHERS_PER_SESSION = 8;

/** A watcher whose socket holds more than this unsent is let go (close 4002): the session
 * never waits for a watcher, so a reader that stalls must not grow the server's memory either.
 * 1 MiB is minutes of partials and finals of one call: only a stalled or starved reader gets
 * there, not a slow network. */
export const WATCHER_MAX_BUFFERED_BYTES = 1024 * 1024;

export function watchPath(sessionId: string): string {
  return `${API}/stt/realtime/sessions/${sessionId}/events`;
}

declare module 'fastify' {
  interface FastifyRequest {
    watchedSession?: LiveSession;
    /** The desk session whose ticket opened this watch socket, if any. */
    watchingDeskSession?: string | null;
  }
}

/** An event is serialized once, however many watchers it goes to. */
const texts = new WeakMap<ServerEvent, string>();
function wire(event: ServerEvent): string {
  let text = texts.get(event);
  if (text === undefined) {
    text = JSON.stringify(event);
    texts.set(event, text);
  }
  return text;
}

function refuse(reply: FastifyReply, err: ScribedError) {
  const { status, body } = fail(err);
  reply.request.errorCode = err.code;
  return reply.code(status).send(body);
}

export interface WatchLimits {
  perSession: number;
  maxBufferedBytes: number;
}

export function watchRoutes(
  ctx: AppContext,
  limits: WatchLimits = { perSession: WATCHERS_PER_SESSION, maxBufferedBytes: WATCHER_MAX_BUFFERED_BYTES },
): FastifyPluginAsync {
  const shared = ctx.config.sharedStore;

  /** The live session a watcher of this account may watch on this node. Watching never
   * claims a session away from another node: on a shared store only the node that serves the
   * session (holds its stream socket, or its paused state) can fan its events out, and any
   * other answers SESSION_ELSEWHERE. On one node, a session not in memory yet (created, no
   * socket so far) is loaded, so a supervisor may open the watch before the call streams. */
  async function watchable(sessionId: string, accountId: string): Promise<LiveSession> {
    const served = ctx.sessions.served(sessionId);
    if (served && !served.hasMoved) {
      if (served.accountId !== accountId) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
      return served;
    }
    if (shared) {
      const record = await ctx.store.getSession(sessionId, accountId);
      if (!record) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
      if (record.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
      throw new ScribedError(
        'SESSION_ELSEWHERE',
        `this node does not serve session ${sessionId}; watch it through the node that holds its stream socket (the reference HAProxy routes it there), or retry once one does`,
      );
    }
    const session = await ctx.sessions.take(sessionId, accountId);
    if (!session) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
    return session;
  }

  return async (app) => {
    app.get<{ Params: { sessionId: string }; Querystring: Record<string, string> }>(
      SOCKET_ROUTES.watch.url,
      {
        schema: servedWithout(SOCKET_ROUTES.watch, 'querystring').schema,
        websocket: true,
        config: { websocket: true },
        // Every refusal that can be known before the upgrade is a plain HTTP answer.
        preValidation: async (req, reply) => {
          try {
            const { accountId, deskSessionId } = await identify(ctx, req as SocketRequest, 'watch');
            const session = await watchable(req.params.sessionId, accountId);
            if (session.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
            if (session.watcherCount >= limits.perSession) {
              throw new ScribedError(
                'WATCHER_LIMIT',
                `session ${session.id} already has ${limits.perSession} watchers, its limit; close one or try later`,
              );
            }
            req.watchedSession = session;
            req.watchingDeskSession = deskSessionId;
          } catch (err) {
            ctx.metrics.wsUpgrades.inc({ socket: 'watch', outcome: 'refused' });
            return refuse(reply, toScribedError(err));
          }
        },
      },
      (socket: WebSocket, req) => {
        const session = req.watchedSession!;
        const log = req.log.child({ sessionId: session.id, watcher: true });
        let watching = false;
        let unregister: (() => void) | null = null;
        const own = (event: ServerEvent) => {
          if (socket.readyState === socket.OPEN) socket.send(wire(event));
        };
        const stop = () => {
          unregister?.();
          unregister = null;
          if (!watching) return;
          watching = false;
          session.unwatch(sink);
          ctx.metrics.watchers.dec();
        };
        const sink: SessionSocket = {
          send: (event) => {
            if (socket.readyState !== socket.OPEN) return;
            // Checked before the send: what is buffered is what the reader has not taken, so a
            // watcher over the bound gets nothing more and is let go; the session goes on.
            if (socket.bufferedAmount > limits.maxBufferedBytes) {
              log.warn({ bufferedBytes: socket.bufferedAmount }, 'watcher too slow: let go');
              ctx.metrics.watchersDropped.inc({ reason: 'slow' });
              stop();
              // The close frame queues behind what is buffered; ws destroys the connection if it
              // is not through within its close timeout (30 s), so the memory is bounded.
              socket.close(CLOSE_CODES.watcherTooSlow, 'WATCHER_TOO_SLOW');
              return;
            }
            socket.send(wire(event));
          },
          close: (code, reason) => {
            stop();
            socket.close(code, reason);
          },
        };

        socket.on('message', (data, isBinary) => {
          try {
            if (isBinary) throw new ScribedError('WATCHER_READ_ONLY', 'a watch socket takes no audio; send it on the stream socket');
            const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
            const msg = parseControlMessage(buf.toString('utf8'));
            if (msg.type !== 'ping')
              throw new ScribedError('WATCHER_READ_ONLY', `a watch socket takes only ping; send ${msg.type} on the stream socket`);
            own(serverEvent.pong(msg.id === undefined ? {} : { id: msg.id }));
          } catch (err) {
            // The watcher's own mistake: told so, and it keeps watching.
            own(wsError(toScribedError(err)));
          }
        });
        socket.on('close', stop);

        try {
          session.watch(sink, limits.perSession);
          watching = true;
          ctx.metrics.watchers.inc();
          const deskSessionId = req.watchingDeskSession ?? null;
          if (deskSessionId !== null) {
            // The socket lives no longer than the desk session whose ticket opened it.
            unregister = deskWatchers(ctx).add(deskSessionId, () => {
              log.info({ deskSessionId }, 'desk session ended: watch socket closed');
              stop();
              socket.close(CLOSE_CODES.deskSessionEnded, 'DESK_SESSION_ENDED');
            });
          }
          ctx.metrics.wsUpgrades.inc({ socket: 'watch', outcome: 'upgraded' });
        } catch (err) {
          // The session closed or moved, or racing handshakes took the last places, between
          // the checks before the upgrade and now.
          const e = toScribedError(err);
          ctx.metrics.wsUpgrades.inc({ socket: 'watch', outcome: 'attach_failed' });
          own(wsError(e, true));
          socket.close(
            e.code === 'WATCHER_LIMIT'
              ? CLOSE_CODES.tryAgainLater
              : e.code === 'SESSION_CLOSED'
                ? CLOSE_CODES.normal
                : CLOSE_CODES.superseded,
            e.code,
          );
        }
      },
    );
  };
}
