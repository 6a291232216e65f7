// What a connection may hold, and how the layers below the routes answer.
//
// Bounds (docs/api.md, "Connections and timeouts"; values from src/config.ts):
// - headers must arrive within headersTimeoutMs, the whole request (body included) within
//   requestTimeoutMs: 408 REQUEST_TIMEOUT and the connection is closed;
// - a connection silent for idleTimeoutMs while the client owes us something (the rest of a
//   request, reading our answer) is closed; the server's own work on a request it has whole is
//   never timed (a long batch decode is not idleness); between requests keepAliveTimeoutMs;
// - at most maxConnections at once (sockets included); past it Node closes new connections at
//   once, counted in scribed_http_connections_dropped_total;
// - an upgraded WebSocket is outside all of these (ws clears the socket timeout at the upgrade
//   and Node stops tracking it as a request): a call lasts as long as it lasts.
//
// Answers below the routes use the one envelope (src/core/envelope.ts): the HTTP parser's
// client errors (malformed request, headers over 16 KiB, timeouts) are written raw by
// answerClientError, Fastify's routing errors go through frameworkErrors, and a malformed
// WebSocket upgrade is refused before it is authenticated or a session is claimed.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyHttpOptions, FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ScribedError } from '../core/errors.js';
import { failRaw } from '../core/envelope.js';
import { upgradeProblem } from '../core/websocket-handshake.js';
import type { Metrics } from '../obs/metrics.js';
import { noRoute, sendRoutingError } from './error-handler.js';
import { lingerOnClose } from './lingering-close.js';

export interface ConnectionLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

/** Longest path parameter: every id this service issues is far shorter; longer is 414. */
export const MAX_PARAM_LENGTH = 100;
/** How often Node checks the header and request deadlines: the granularity of both. */
const DEADLINE_CHECK_INTERVAL_MS = 1000;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route serves a WebSocket (an upgrade to any other route is refused). */
    websocket?: boolean;
  }
}

/** The parts of Fastify's options these bounds and answers set. */
export function connectionOptions(limits: ConnectionLimits): FastifyHttpOptions<Server> {
  return {
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: DEADLINE_CHECK_INTERVAL_MS },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: sendRoutingError,
    clientErrorHandler(this: FastifyInstance, err: Error & { code?: string; reason?: string }, socket: Duplex) {
      answerClientError(this.log as unknown as Logger, err, socket);
    },
  };
}

/** The HTTP parser refused a request, or a deadline passed: answer in the envelope (unless an
 * answer is already on its way) and close. */
export function answerClientError(log: Logger, err: Error & { code?: string; reason?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ScribedError('REQUEST_TIMEOUT')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new ScribedError('HEADERS_TOO_LARGE')
        : new ScribedError('BAD_REQUEST', `the request is not valid HTTP/1.1 (${err.reason ?? err.code ?? err.message})`);
  log.warn({ code: error.code, cause: err.code }, 'client error: request refused before routing');
  const answering = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage?.headersSent === true;
  if (socket.writable && !answering) socket.end(failRaw(error));
  // Whatever the client still sends is not read; the socket goes once the answer is out.
  setTimeout(() => socket.destroy(), 1000).unref();
}

export function installConnectionGuards(app: FastifyInstance, limits: ConnectionLimits, metrics: Metrics): void {
  app.server.maxConnections = limits.maxConnections;
  app.server.on('drop', () => metrics.connectionsDropped.inc());

  // Requests in progress per socket, so the idle timeout can tell the client's silence (a
  // stalled upload, an answer not read, nothing after the last request) from the server's
  // own work on a request it has whole.
  const inProgress = new WeakMap<object, { req: IncomingMessage; res: ServerResponse }>();
  app.addHook('onRequest', async (req, reply) => {
    inProgress.set(req.raw.socket, { req: req.raw, res: reply.raw });
  });
  app.addHook('onResponse', async (req) => {
    if (inProgress.get(req.raw.socket)?.req === req.raw) inProgress.delete(req.raw.socket);
  });
  // With a listener here Node leaves the decision to it instead of destroying the socket.
  app.server.on('timeout', (socket: Duplex) => {
    const current = inProgress.get(socket);
    if (current && !current.res.headersSent) {
      if (current.req.complete) return; // the server's own work: not the client's silence
      // A request whose body stopped coming: say so before closing.
      app.log.warn({ code: 'REQUEST_TIMEOUT' }, 'client error: request body stalled');
      if (socket.writable)
        socket.end(failRaw(new ScribedError('REQUEST_TIMEOUT', 'no part of the request body arrived for the idle timeout')));
      setTimeout(() => socket.destroy(), 1000).unref();
      return;
    }
    socket.destroy();
  });

  // A malformed upgrade, or one to a route without a socket, is refused before anything else
  // runs (authentication, ticket, session claim). `req.ws` is set by @fastify/websocket's own
  // onRequest hook, which is added before this one.
  app.addHook('onRequest', async (req, reply) => {
    if (req.is404) return;
    if (!req.ws) {
      // A plain request to a socket route: refused before its checks would claim the session.
      if (req.routeOptions.config.websocket === true)
        throw new ScribedError('UPGRADE_INVALID', 'this path is a WebSocket: send a WebSocket upgrade request');
      return;
    }
    const refusal =
      upgradeProblem(req.method, req.headers) ??
      (req.routeOptions.config.websocket === true
        ? null
        : { error: new ScribedError('UPGRADE_INVALID', `${req.routeOptions.url} takes no WebSocket`), headers: {} });
    if (refusal) {
      void reply.headers(refusal.headers);
      throw refusal.error;
    }
  });

  // No route: answered before Fastify would read (and wait for) a body nobody wants.
  app.addHook('onRequest', async (req) => {
    if (req.is404) throw noRoute(req);
  });

  // An answer sent before the request's body arrived (refused at authentication, no such
  // route, a limit) closes the connection: otherwise Node keeps reading and discarding that
  // body for as long as the client trickles it. It closes lingering (lingering-close.ts), so
  // a client still writing its upload reads the answer rather than a reset. A refused upgrade
  // closes too: @fastify/websocket drops its socket after the answer, so keep-alive would be a
  // promise the server does not keep.
  app.addHook('onSend', async (req, reply) => {
    if (req.ws) {
      void reply.header('connection', 'close');
    } else if (!req.raw.complete) {
      void reply.header('connection', 'close');
      lingerOnClose(req.raw);
    }
  });

  // ws checks an upgrade once more when it takes it over; the hook above refuses whatever it
  // would refuse, but should they ever disagree, ws's refusal is in the envelope too.
  app.websocketServer.on('wsClientError', (err: Error, socket: Duplex) => {
    app.log.warn({ reason: err.message }, 'WebSocket upgrade refused by ws');
    if (socket.writable) socket.end(failRaw(new ScribedError('UPGRADE_INVALID', err.message)));
    setTimeout(() => socket.destroy(), 1000).unref();
  });
}

/** ws's codes for a client breaking the protocol (a message over the limit, a bad opcode,
 * invalid UTF-8, an unmasked frame ...) and the socket errors of a client that went away. */
function isClientFault(err: Error & { code?: string }): boolean {
  return typeof err.code === 'string' && (err.code.startsWith('WS_ERR_') || ['ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(err.code));
}

/** @fastify/websocket's errorHandler. A client's fault is a warning without a stack, and ws
 * has already begun the close with the code that says why (1009 for a message over the
 * limit); anything else is a server fault: logged with its stack, socket terminated. */
export function onSocketError(
  err: Error & { code?: string },
  socket: { terminate(): void },
  req: { log: { warn: Logger['warn']; error: Logger['error'] } },
): void {
  if (isClientFault(err)) {
    req.log.warn({ code: err.code }, `socket closed for a client fault: ${err.message}`);
    return;
  }
  req.log.error({ err }, 'socket error');
  socket.terminate();
}
