// OpenAI's Realtime API for transcription: GET /v1/realtime?intent=transcription as a
// WebSocket (the path OpenAI's SDK opens: `OpenAIRealtimeWS` with `{ intent: 'transcription' }`
// and a baseURL ending in /v1; docs/compat.md, "OpenAI Realtime"). Before the upgrade: the
// intent is checked (model sessions, which answer with speech, are not served), the key read
// from `Authorization: Bearer <access key>`, the account's stream limit and the node's room
// checked; refusals are OpenAI-shaped HTTP errors. After it: `session.created`, then the
// client configures the session (realtime-config.ts) and sends audio; the native session is
// opened with that configuration at the first audio (realtime-leg.ts) and driven like a native
// socket: each socket is one native real-time session (History, Characters, spool, redaction,
// rules, webhooks), ended when the socket closes.
import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { ScribedError } from '../../../core/errors.js';
import { CLOSE_CODES } from '../../../core/protocol.js';
import type { ServerEvent } from '../../../core/protocol.js';
import { authenticate, headerValue } from '../../auth.js';
import type { AppContext } from '../../context.js';
import { authorizationCredential } from '../credentials.js';
import { Backpressure } from '../../../session/session-driver.js';
import { OpenAiError, sendOpenAiError, toOpenAiError } from './errors.js';
import {
  applySessionUpdate,
  applyTranscriptionSessionUpdate,
  betaSessionView,
  defaultConfig,
  fixedFieldChanged,
  formatShape,
  nativeSessionBody,
  RealtimeConfigError,
  servedRealtimeModels,
  sessionView,
  type RealtimeConfig,
} from './realtime-config.js';
import { precheck, RealtimeLeg } from './realtime-leg.js';
import { readClientEvent, RealtimeMessages, type ClientEvent } from './realtime-messages.js';
import { servedWithout } from '../../openapi/route-schema.js';
import { OPENAI_ROUTES } from '../../schemas/openai.js';

/** Client events held while the native session opens (the socket is paused past it). */
const PENDING_HIGH = 256;

interface RealtimeHandshake {
  accountId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    openAiRealtime?: RealtimeHandshake;
  }
}

export function openAiRealtimeRoutes(ctx: AppContext): FastifyPluginAsync {
  const models = servedRealtimeModels(ctx.engine.info.name);

  async function handshake(req: FastifyRequest<{ Querystring: Record<string, string | string[]> }>): Promise<RealtimeHandshake> {
    const q = req.query ?? {};
    if (q.model !== undefined || q.call_id !== undefined) {
      throw new OpenAiError(
        400,
        'invalid_request_error',
        'this server serves transcription sessions only: open the socket with intent=transcription',
        q.model !== undefined ? 'model' : 'call_id',
      );
    }
    if (q.intent !== 'transcription')
      throw new OpenAiError(400, 'invalid_request_error', 'intent: open the socket with intent=transcription', 'intent');
    const accountId = await authenticate(
      ctx.store,
      'access_key',
      authorizationCredential(headerValue(req.headers.authorization), ['Bearer']),
    );
    const refusal = precheck(ctx, accountId);
    if (refusal) throw refusal;
    return { accountId };
  }

  return async (app) => {
    app.setErrorHandler(sendOpenAiError);
    app.get<{ Querystring: Record<string, string | string[]> }>(
      OPENAI_ROUTES.realtime.url,
      {
        schema: servedWithout(OPENAI_ROUTES.realtime, 'querystring').schema,
        websocket: true,
        config: { websocket: true },
        preValidation: async (req, reply) => {
          try {
            req.openAiRealtime = await handshake(req);
          } catch (err) {
            ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'refused' });
            sendOpenAiError(err, req, reply);
            return reply;
          }
        },
      },
      (socket: WebSocket, req) => {
        const { accountId } = req.openAiRealtime!;
        const sessionId = `sess_${randomBytes(12).toString('hex')}`;
        let log = req.log.child({ realtimeSessionId: sessionId });
        let config: RealtimeConfig = defaultConfig(ctx.engine.info.name);
        let messages: RealtimeMessages | null = null;
        let leg: RealtimeLeg | null = null;
        let opening: Promise<void> | null = null;
        let pending: ClientEvent[] = [];
        let closed = false;

        const send = (m: object) => {
          if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(m));
        };
        // Before the native session exists, errors still need event ids: a translator for them.
        const early = new RealtimeMessages({ vad: true, itemPrefix: sessionId.slice(5, 13) });
        const ids = () => messages ?? early;
        const fail = (
          code: string | null,
          message: string,
          param: string | null,
          eventId: string | null,
          type?: 'invalid_request_error' | 'server_error',
        ) => send(ids().error(code, message, param, eventId, type));

        const pressure = new Backpressure(socket);
        const onEvent = (event: ServerEvent) => {
          if (messages) for (const m of messages.translate(event)) send(m);
        };
        const onRelease = (code: number, reason: string) => {
          if (socket.readyState === socket.OPEN) socket.close(code, reason);
        };

        /** The native session, opened with the configuration as it stands at the first audio;
         * the events that came meanwhile follow in order. */
        async function open(): Promise<void> {
          messages = new RealtimeMessages({ vad: config.turnDetection !== null, itemPrefix: sessionId.slice(5, 13) });
          const sendError = (e: ScribedError) =>
            fail(e.code.toLowerCase(), e.message, null, null, e.spec.http >= 500 ? 'server_error' : 'invalid_request_error');
          try {
            leg = await RealtimeLeg.open(ctx, accountId, nativeSessionBody(config), {
              req,
              socket,
              log,
              pressure,
              bytesPerSample: formatShape(config.format).bytesPerSample,
              onEvent,
              onRelease,
              sendError,
            });
          } catch (err) {
            // Refused before a session was held (the account's places, the node's room, the
            // options): said in OpenAI's shape, and the socket closes.
            const e = toOpenAiError(err);
            log.warn({ status: e.status }, 'OpenAI realtime session could not open');
            fail(e.code, e.message, e.param, null, e.status >= 500 ? 'server_error' : 'invalid_request_error');
            socket.close(e.status === 503 ? CLOSE_CODES.tryAgainLater : e.status < 500 ? 1008 : CLOSE_CODES.internal, e.code ?? 'refused');
            return;
          }
          if (!leg) return;
          log = log.child({ sessionId: leg.session.id });
          log.info({ format: config.format, vad: config.turnDetection !== null }, 'OpenAI realtime transcription session opened');
          if (closed) return void leg.close();
          const held = pending;
          pending = [];
          // Resumed first: the backpressure rule pauses it again if the held events fill the queue.
          if (socket.isPaused) socket.resume();
          for (const e of held) act(e);
        }

        function configure(e: Extract<ClientEvent, { type: 'session.update' | 'transcription_session.update' }>): void {
          let next: RealtimeConfig;
          try {
            next =
              e.type === 'session.update'
                ? applySessionUpdate(config, e.session, models)
                : applyTranscriptionSessionUpdate(config, e.session, models);
          } catch (err) {
            if (err instanceof RealtimeConfigError) return fail(err.code, err.message, err.param, e.eventId);
            throw err;
          }
          const changed = opening ? fixedFieldChanged(config, next) : null;
          if (changed)
            return fail(
              'session_already_started',
              `${changed} cannot change once audio has been sent (the session was opened with it); open a new socket`,
              changed,
              e.eventId,
            );
          config = next;
          if (e.type === 'session.update')
            send({ type: 'session.updated', event_id: ids().eventId(), session: sessionView(sessionId, config) });
          else send({ type: 'transcription_session.updated', event_id: ids().eventId(), session: betaSessionView(sessionId, config) });
        }

        /** An audio event once the native session exists. */
        function act(e: ClientEvent): void {
          if (e.type === 'input_audio_buffer.append') return leg!.audio(e.audio);
          if (e.type === 'input_audio_buffer.commit') return leg!.commit();
          if (e.type === 'input_audio_buffer.clear') {
            send(messages!.clear());
            return leg!.commit();
          }
          configure(e);
        }

        socket.on('message', (data, isBinary) => {
          const text = (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString('utf8');
          if (isBinary)
            return fail('invalid_value', 'audio goes in input_audio_buffer.append events (base64), not in binary messages', null, null);
          const read = readClientEvent(text);
          if (!read.ok) return fail(read.code, read.message, read.param, read.eventId);
          const e = read.event;
          if (leg) return act(e);
          if (!opening) {
            if (e.type === 'session.update' || e.type === 'transcription_session.update') return configure(e);
            if (e.type === 'input_audio_buffer.commit')
              return fail('input_audio_buffer_commit_empty', 'Error committing input audio buffer: the buffer is empty.', null, e.eventId);
            if (e.type === 'input_audio_buffer.clear') return send(early.clear());
            opening = open();
          }
          pending.push(e);
          if (pending.length >= PENDING_HIGH && !socket.isPaused) socket.pause();
        });

        socket.on('close', () => {
          closed = true;
          // An OpenAI client never resumes: the socket's end is the session's end (its last
          // words recognized, History completed).
          // The session's own queue keeps the close after every audio event before it; a
          // session not closed (refused) pauses as any dropped socket's does.
          if (leg) {
            const l: RealtimeLeg = leg;
            void l.close().finally(() => l.driver.detach().catch((err: unknown) => log.debug({ err }, 'detach after close')));
          }
        });

        send({ type: 'session.created', event_id: early.eventId(), session: sessionView(sessionId, config) });
      },
    );
  };
}
