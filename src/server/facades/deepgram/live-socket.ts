// Deepgram's live API: GET /v1/listen as a WebSocket (docs/compat.md, "Deepgram live"). Before
// the upgrade: the query is mapped (live-params.ts; a refused parameter is a 400 naming it),
// the key read from `Authorization: Token|Bearer <key>` or the browser form
// `Sec-WebSocket-Protocol: token, <key>` (ws answers the first protocol offered, `token`), the
// node's room checked, and a native real-time session of the account created and claimed
// exactly as the native create and stream routes do. After it, the socket drives that session
// through the native socket's API (onBinary/onText/attach/detach): raw audio is framed here
// (Deepgram clients send no epoch or sampleOffset), KeepAlive is absorbed, Finalize is a
// commit, CloseStream a close; the session's events go out as Deepgram messages
// (live-messages.ts). A dropped socket pauses the session like a native one.
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError, toScribedError } from '../../../core/errors.js';
import { encodeAudioFrame } from '../../../core/frame.js';
import { CLOSE_CODES } from '../../../core/protocol.js';
import { newId } from '../../../core/ids.js';
import { requestHash, validateCreateSession, withRedactionDefault } from '../../../core/session-options.js';
import { applyRecognizerCapabilities } from '../../../core/recognizer-capabilities.js';
import { accountStreamLimit } from '../../../core/account-streams.js';
import { accountStreamsOf } from '../../account-admission.js';
import type { LiveSession, SessionSocket } from '../../../session/live-session.js';
import { authenticate, headerValue } from '../../auth.js';
import { hasFreeDecoder } from '../../capacity.js';
import type { AppContext } from '../../context.js';
import { authorizationCredential } from '../credentials.js';
import { DeepgramError, sendDeepgramError } from './errors.js';
import { mapLiveQuery, type LiveListenRequest } from './live-params.js';
import { DeepgramLiveMessages } from './live-messages.js';
import type { Query } from './options.js';

const QUEUE_HIGH = 64;
const QUEUE_LOW = 16;

interface LiveHandshake {
  session: LiveSession;
  request: LiveListenRequest;
  requestId: string;
  settle: () => void;
}

declare module 'fastify' {
  interface FastifyRequest {
    deepgramLive?: LiveHandshake;
  }
}

/** The key of a live handshake: the Authorization header, else the second entry of
 * `Sec-WebSocket-Protocol: token, <key>` (browsers cannot set headers on a WebSocket). */
export function liveCredential(authorization: string | undefined, protocols: string | undefined): string | undefined {
  const fromHeader = authorizationCredential(authorization, ['Token', 'Bearer']);
  if (fromHeader !== undefined) return fromHeader;
  if (protocols === undefined) return undefined;
  const [scheme, key] = protocols.split(',').map((p) => p.trim());
  if (key === undefined || (scheme?.toLowerCase() !== 'token' && scheme?.toLowerCase() !== 'bearer')) return undefined;
  return key;
}

export function deepgramLiveRoutes(ctx: AppContext): FastifyPluginAsync {
  const accountStreams = accountStreamsOf(ctx);

  /** A native session for the stream, created as POST .../sessions creates one (same
   * validation, same store call; a fresh idempotency key: each socket is its own session). */
  async function createSession(accountId: string, request: LiveListenRequest): Promise<string> {
    const body = request.sessionBody;
    const valid = applyRecognizerCapabilities(validateCreateSession(body), {
      languages: ctx.engine.info.languages,
      detectsLanguage: ctx.engine.info.detectsLanguage ?? false,
    });
    const outcome = await ctx.store.createSession({
      accountId,
      idempotencyKey: `deepgram-live-${randomUUID()}`,
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
    return outcome.session.id;
  }

  async function handshake(req: FastifyRequest<{ Querystring: Query }>, requestId: string): Promise<LiveHandshake> {
    const request = mapLiveQuery(req.query ?? {});
    const key = liveCredential(headerValue(req.headers.authorization), headerValue(req.headers['sec-websocket-protocol']));
    const accountId = await authenticate(ctx.store, 'access_key', key);
    const limit = accountStreamLimit(ctx.config.maxStreamsPerAccount);
    const streaming = ctx.sessions.all().filter((s) => s.accountId === accountId && s.hasSocket).map((s) => s.id);
    const pendingId = `deepgram-${requestId}`;
    if (!accountStreams.tryAdmit(accountId, pendingId, limit, streaming)) {
      throw new DeepgramError(429, 'TOO_MANY_REQUESTS', `this account already streams ${limit} sessions on this node, its limit`);
    }
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      accountStreams.settle(accountId, pendingId);
    };
    req.raw.socket.once('close', settle);
    try {
      if (!hasFreeDecoder(ctx) && !(ctx.sessions.deferral?.budget.hasRoom() ?? false)) {
        throw new ScribedError('ENGINE_BUSY', 'every recognizer of this node is in use; try again later');
      }
      const sessionId = await createSession(accountId, request);
      const session = await ctx.sessions.take(sessionId, accountId);
      if (!session) throw new ScribedError('INTERNAL', `session ${sessionId} vanished after its creation`);
      return { session, request, requestId, settle };
    } catch (err) {
      settle();
      throw err;
    }
  }

  return async (app) => {
    // A refusal from before the route (a GET that is no upgrade, a malformed upgrade) in
    // Deepgram's shape too.
    app.setErrorHandler(sendDeepgramError);
    app.get<{ Querystring: Query }>(
      '/v1/listen',
      {
        websocket: true,
        config: { websocket: true },
        preValidation: async (req, reply) => {
          const requestId = randomUUID();
          void reply.header('dg-request-id', requestId);
          try {
            req.deepgramLive = await handshake(req, requestId);
          } catch (err) {
            ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'refused' });
            sendDeepgramError(err, req, reply);
            return reply;
          }
        },
      },
      (socket: WebSocket, req) => {
        const { session, request, requestId, settle: settleAdmission } = req.deepgramLive!;
        const log = req.log.child({ sessionId: session.id, requestId });
        const messages = new DeepgramLiveMessages({
          requestId,
          transcriptionId: session.transcriptionId,
          created: ctx.now().toISOString(),
          sampleRate: request.sampleRate,
          modelName: `scribed-${ctx.engine.info.name}`,
          interimResults: request.interimResults,
          vadEvents: request.vadEvents,
          utteranceEndMs: request.utteranceEndMs,
        });
        const sink: SessionSocket = {
          send: (event) => {
            if (event.type === 'accepting') accepting = event.accepting;
            if (socket.readyState !== socket.OPEN) return;
            for (const m of messages.translate(event)) socket.send(JSON.stringify(m));
          },
          close: (code, reason) => socket.close(code, reason),
        };
        // The frame cursor: a fresh session's epoch, from its first sample. A linear16 message
        // may split a sample; its odd byte waits for the next message. While the session does
        // not accept audio (spent balance, recognition backlog) audio is dropped here without
        // moving the cursor, so only what was in flight is a gap (filled with silence).
        let accepting = true;
        const epoch = session.cursor.epoch;
        let sampleOffset = session.cursor.epochReceived;
        let carry: Buffer | null = null;
        const maxPayload = ctx.config.maxFramePayloadBytes - (ctx.config.maxFramePayloadBytes % request.bytesPerSample);

        let queued = 0;
        const track = (work: Promise<void>) => {
          queued += 1;
          if (queued >= QUEUE_HIGH && !socket.isPaused) socket.pause();
          void work.finally(() => {
            queued -= 1;
            if (queued <= QUEUE_LOW && socket.isPaused) socket.resume();
          });
        };
        const audio = (data: Buffer) => {
          if (!accepting) return;
          let bytes = carry ? Buffer.concat([carry, data]) : data;
          carry = null;
          const whole = bytes.length - (bytes.length % request.bytesPerSample);
          if (whole < bytes.length) carry = Buffer.from(bytes.subarray(whole));
          bytes = bytes.subarray(0, whole);
          for (let at = 0; at < bytes.length; at += maxPayload) {
            const payload = bytes.subarray(at, Math.min(bytes.length, at + maxPayload));
            track(session.onBinary(sink, encodeAudioFrame({ epoch, sampleOffset, payload })));
            sampleOffset += payload.length / request.bytesPerSample;
          }
        };
        const control = (text: string) => {
          let type: unknown;
          try {
            type = (JSON.parse(text) as { type?: unknown }).type;
          } catch {
            type = undefined;
          }
          if (type === 'KeepAlive') return;
          if (type === 'Finalize') return track(session.onText(sink, '{"type":"commit"}'));
          if (type === 'CloseStream') return track(session.onText(sink, '{"type":"close"}'));
          socket.send(JSON.stringify({ type: 'Error', err_code: 'INVALID_MESSAGE', err_msg: 'text messages are KeepAlive, Finalize or CloseStream; audio goes in binary messages', request_id: requestId }));
        };

        socket.on('message', (data, isBinary) => {
          const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
          if (isBinary) audio(buf);
          else control(buf.toString('utf8'));
        });
        socket.on('close', () => {
          void session.detach(sink).catch((err) => log.error({ err }, 'detach failed'));
        });

        const attaching = session.attach(sink);
        void attaching.finally(settleAdmission).catch(() => undefined);
        attaching.then(
          () => {
            ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'upgraded' });
            log.info({ model: request.model }, 'Deepgram live stream opened');
          },
          (err: unknown) => {
            const e = toScribedError(err);
            ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'attach_failed' });
            log.warn({ code: e.code }, 'socket attach refused');
            void ctx.sessions.releaseIfIdle(session).catch((releaseErr: unknown) => log.warn({ err: releaseErr }, 'could not release the claim'));
            if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ type: 'Error', err_code: e.code, err_msg: e.message, request_id: requestId }));
            socket.close(e.code === 'ENGINE_BUSY' ? CLOSE_CODES.tryAgainLater : CLOSE_CODES.internal, e.code);
          },
        );
      },
    );
  };
}
