// AssemblyAI's Universal-Streaming API (v3): GET /v3/ws as a WebSocket, as the `assemblyai`
// SDK's streaming transcriber opens it (docs/compat.md, "AssemblyAI Universal-Streaming"), and
// GET /v3/token, the temporary tokens (token.ts). The credential is `Authorization: <access
// key>` (the bare key, as the SDK sends it) or `?token=`; the connection parameters are the
// query (params.ts). As AssemblyAI does, refusals come on the socket after the upgrade: an
// error frame, then a close code the SDK maps (4001 not authorized, 3006 input validation,
// 3009 too many sessions, 1013 try again later). Then the socket's native session is opened
// (leg.ts), `Begin` sent, and the socket driven like a native one: binary messages are audio,
// `ForceEndpoint` a commit, `KeepAlive` a keep-alive, `Terminate` a close answered with
// `Termination`. Each socket is one native real-time session (History, Characters, spool,
// redaction, rules, webhooks), ended when the socket closes (AssemblyAI clients never resume).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError, toScribedError } from '../../../../core/errors.js';
import { CLOSE_CODES } from '../../../../core/protocol.js';
import type { ServerEvent } from '../../../../core/protocol.js';
import { Backpressure } from '../../../../session/session-driver.js';
import type { AppContext } from '../../../context.js';
import { facadeAccountByBareKey } from '../../credentials.js';
import { AssemblyAiError, sendAssemblyAiError } from '../errors.js';
import { StreamingLeg, StreamingRefusal } from './leg.js';
import { AAI_CODES, StreamingMessages, type OutMessage } from './messages.js';
import { mapStreamingQuery, StreamingParamError, UPDATE_FIELDS, type Query, type StreamingRequest } from './params.js';
import { DEFAULT_MAX_SESSION_SECONDS, issueToken, SESSION_SECONDS_RANGE, TOKEN_KEY_NAME, TOKEN_TTL_RANGE, verifyToken } from './token.js';
import { servedWithout } from '../../../openapi/route-schema.js';
import { ASSEMBLYAI_STREAMING_ROUTES } from './schemas.js';

/** Messages held while the native session opens (the socket is paused past it). */
const PENDING_HIGH = 256;
/** A close reason is at most 123 bytes. */
const reasonOf = (message: string): string =>
  Buffer.from(message, 'utf8')
    .subarray(0, 123)
    .toString('utf8')
    .replace(/\uFFFD$/, '');

type Handshake =
  | { ok: true; accountId: string; tokenId: string | null; maxSessionSeconds: number; request: StreamingRequest }
  | { ok: false; refusal: StreamingRefusal };

declare module 'fastify' {
  interface FastifyRequest {
    assemblyAiStreaming?: Handshake;
  }
}

/** The AssemblyAI code of a native refusal (of the attach: the socket then closes). */
function codeOf(e: ScribedError): number {
  if (e.code === 'INSUFFICIENT_CHARACTERS') return AAI_CODES.insufficientFunds;
  if (e.code === 'ENGINE_BUSY') return CLOSE_CODES.tryAgainLater;
  return e.spec.http >= 500 ? AAI_CODES.serverError : AAI_CODES.inputValidation;
}

function intParam(q: Query, name: string, range: { min: number; max: number }, required: boolean): number | undefined {
  const raw = q[name];
  const v = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  if (v === undefined) {
    if (required) throw new AssemblyAiError(400, `${name}: required, an integer from ${range.min} to ${range.max}`);
    return undefined;
  }
  if (!/^\d+$/.test(v) || Number(v) < range.min || Number(v) > range.max)
    throw new AssemblyAiError(400, `${name}: an integer from ${range.min} to ${range.max}`);
  return Number(v);
}

export function assemblyAiStreamingRoutes(ctx: AppContext): FastifyPluginAsync {
  const tokenKey = () => ctx.files.keys.load(TOKEN_KEY_NAME);

  async function handshake(req: FastifyRequest<{ Querystring: Query }>): Promise<Handshake> {
    const q = req.query ?? {};
    const token = Array.isArray(q.token) ? q.token[q.token.length - 1] : q.token;
    let accountId: string;
    let tokenId: string | null = null;
    let maxSessionSeconds = DEFAULT_MAX_SESSION_SECONDS;
    if (token !== undefined) {
      const check = verifyToken(await tokenKey(), token, ctx.now());
      if (!check.ok)
        return {
          ok: false,
          refusal: new StreamingRefusal(
            AAI_CODES.authFailed,
            check.reason === 'expired' ? 'Not Authorized: this temporary token has expired' : 'Not Authorized',
          ),
        };
      ({ accountId, id: tokenId, maxSessionSeconds } = check.claims);
    } else {
      try {
        accountId = await facadeAccountByBareKey(ctx.store, req);
      } catch (err) {
        if (toScribedError(err).code !== 'UNAUTHORIZED') throw err;
        return { ok: false, refusal: new StreamingRefusal(AAI_CODES.authFailed, 'Not Authorized') };
      }
    }
    try {
      return { ok: true, accountId, tokenId, maxSessionSeconds, request: mapStreamingQuery(q) };
    } catch (err) {
      if (!(err instanceof StreamingParamError)) throw err;
      return { ok: false, refusal: new StreamingRefusal(AAI_CODES.inputValidation, `Input validation error: ${err.message}`) };
    }
  }

  return async (app) => {
    app.setErrorHandler(sendAssemblyAiError);

    const token = servedWithout(ASSEMBLYAI_STREAMING_ROUTES.token, 'querystring');
    app.get<{ Querystring: Query }>(token.url, { schema: token.schema }, async (req, reply) => {
      const accountId = await facadeAccountByBareKey(ctx.store, req);
      const q = req.query ?? {};
      for (const name of Object.keys(q))
        if (name !== 'expires_in_seconds' && name !== 'max_session_duration_seconds')
          throw new AssemblyAiError(400, `${name}: unknown parameter`);
      const ttl = intParam(q, 'expires_in_seconds', TOKEN_TTL_RANGE, true)!;
      const maxSession = intParam(q, 'max_session_duration_seconds', SESSION_SECONDS_RANGE, false) ?? DEFAULT_MAX_SESSION_SECONDS;
      const token = issueToken(await tokenKey(), accountId, ttl, maxSession, ctx.now());
      void reply.header('cache-control', 'no-store');
      return { token, expires_in_seconds: ttl };
    });

    app.get<{ Querystring: Query }>(
      ASSEMBLYAI_STREAMING_ROUTES.socket.url,
      {
        schema: servedWithout(ASSEMBLYAI_STREAMING_ROUTES.socket, 'querystring').schema,
        websocket: true,
        config: { websocket: true },
        preValidation: async (req) => {
          req.assemblyAiStreaming = await handshake(req);
        },
      },
      (socket: WebSocket, req) => {
        const hs = req.assemblyAiStreaming!;
        const sendMessage = (m: OutMessage | object) => {
          if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(m));
        };
        const refuse = (code: number, message: string) => {
          sendMessage({ type: 'Error', error_code: code, error: message });
          if (socket.readyState === socket.OPEN) socket.close(code, reasonOf(message));
        };
        if (!hs.ok) {
          ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'refused' });
          req.log.info({ code: hs.refusal.code }, 'AssemblyAI streaming socket refused');
          return refuse(hs.refusal.code, hs.refusal.message);
        }
        const { accountId, request } = hs;
        let log = req.log;
        const opened = Date.now();
        const messages = new StreamingMessages({ formatTurns: request.formatTurns, sampleRate: request.sampleRate });
        const pressure = new Backpressure(socket);
        let leg: StreamingLeg | null = null;
        let pending: { data: Buffer; isBinary: boolean }[] = [];
        let closed = false;
        let expiry: NodeJS.Timeout | null = null;
        let expired = false;

        const onEvent = (event: ServerEvent) => {
          if (event.type === 'closed') return sendMessage(messages.termination(event, Date.now() - opened));
          for (const m of messages.translate(event)) sendMessage(m);
        };
        const onRelease = (code: number, reason: string) => {
          if (expired) return refuse(AAI_CODES.maxSessionDuration, 'Session expired: maximum session duration exceeded');
          if (socket.readyState === socket.OPEN) socket.close(code, reason);
        };

        const text = (raw: string) => {
          let m: Record<string, unknown> | null = null;
          try {
            const v: unknown = JSON.parse(raw);
            if (typeof v === 'object' && v !== null && !Array.isArray(v)) m = v as Record<string, unknown>;
          } catch {
            m = null;
          }
          if (m?.type === 'Terminate') return void leg!.driver.close();
          if (m?.type === 'ForceEndpoint') return void leg!.driver.commit();
          if (m?.type === 'KeepAlive') return void leg!.driver.keepAlive();
          if (m?.type === 'UpdateConfiguration') {
            // Accepted and ignored: the native session's options are fixed at its creation.
            const unknown = Object.keys(m).filter((k) => k !== 'type' && !(UPDATE_FIELDS as readonly string[]).includes(k));
            if (unknown.length > 0)
              sendMessage({
                type: 'Error',
                error_code: AAI_CODES.inputValidation,
                error: `Input validation error: ${unknown[0]}: unknown UpdateConfiguration field`,
              });
            return;
          }
          sendMessage({
            type: 'Error',
            error_code: AAI_CODES.inputValidation,
            error:
              'Input validation error: text messages are Terminate, ForceEndpoint, KeepAlive or UpdateConfiguration; audio goes in binary messages',
          });
        };
        const act = (data: Buffer, isBinary: boolean) => (isBinary ? leg!.audio(data) : text(data.toString('utf8')));

        socket.on('message', (data, isBinary) => {
          const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
          if (leg) return act(buf, isBinary);
          pending.push({ data: buf, isBinary });
          if (pending.length >= PENDING_HIGH && !socket.isPaused) socket.pause();
        });
        socket.on('close', () => {
          closed = true;
          if (expiry) clearTimeout(expiry);
          // An AssemblyAI client never resumes: the socket's end is the session's end (its
          // last words recognized, History completed).
          if (leg) {
            const l: StreamingLeg = leg;
            void l.driver.close().finally(() => l.driver.detach().catch((err: unknown) => log.debug({ err }, 'detach after close')));
          }
        });

        void (async () => {
          try {
            leg = await StreamingLeg.open(ctx, accountId, {
              req,
              socket,
              log,
              pressure,
              request,
              tokenId: hs.tokenId,
              onEvent,
              onRelease,
              sendError: (e: ScribedError) => sendMessage({ type: 'Error', error_code: codeOf(e), error: e.message }),
            });
          } catch (err) {
            if (err instanceof StreamingRefusal) return refuse(err.code, err.message);
            const e = toScribedError(err);
            log.warn({ code: e.code }, 'AssemblyAI streaming session could not open');
            if (e.code === 'ENGINE_BUSY') return refuse(CLOSE_CODES.tryAgainLater, `Try again later: ${e.message}`);
            if (e.code === 'INSUFFICIENT_CHARACTERS') return refuse(AAI_CODES.insufficientFunds, `Insufficient funds: ${e.message}`);
            if (e.spec.http < 500) return refuse(AAI_CODES.inputValidation, `Input validation error: ${e.message}`);
            return refuse(AAI_CODES.serverError, 'Server error');
          }
          if (!leg) return;
          log = log.child({ sessionId: leg.session.id });
          log.info({ sampleRate: request.sampleRate, bytesPerSample: request.bytesPerSample }, 'AssemblyAI streaming session opened');
          if (closed) return void leg.driver.close();
          sendMessage({ type: 'Begin', id: leg.session.id, expires_at: Math.floor(opened / 1000) + hs.maxSessionSeconds });
          // AssemblyAI's session bound (3 h, or the token's max_session_duration_seconds): the
          // session is closed (its last words sent) and the socket with 3008.
          const l: StreamingLeg = leg;
          expiry = setTimeout(() => {
            expired = true;
            void l.driver.close();
          }, hs.maxSessionSeconds * 1000);
          expiry.unref();
          const held = pending;
          pending = [];
          if (socket.isPaused) socket.resume();
          for (const m of held) act(m.data, m.isBinary);
        })();
      },
    );
  };
}
