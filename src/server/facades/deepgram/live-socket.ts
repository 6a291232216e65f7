// Deepgram's live API: GET /v1/listen as a WebSocket (docs/compat.md, "Deepgram live"). Before
// the upgrade: the query is mapped (live-params.ts; a refused parameter is a 400 naming it),
// the key read from `Authorization: Token|Bearer <key>` or the browser form
// `Sec-WebSocket-Protocol: token, <key>` (ws answers the first protocol offered, `token`), the
// node's room checked, and a native real-time session of the account created and claimed
// exactly as the native create and stream routes do (server/live/open-live.ts); with
// `channels=2&multichannel=true` a call and one session per channel, its legs (docs/calls.md).
// After it, the socket drives each session through the session's typed commands
// (session-driver.ts; live-leg.ts): raw audio is split by channel (live-channels.ts) and
// numbered here (Deepgram clients send no epoch or sampleOffset), KeepAlive is a keep-alive,
// Finalize a commit and CloseStream a close of every leg; the sessions' events go out as
// Deepgram messages (live-messages.ts) with their channel's index. A dropped socket pauses
// every session like a native one.
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError } from '../../../core/errors.js';
import { newId } from '../../../core/ids.js';
import { callRequestHash, type CallLink } from '../../../core/calls.js';
import { DEFAULT_CHANNEL_SPEAKERS, legTitle } from '../../../core/channels.js';
import { Backpressure } from '../../../session/session-driver.js';
import { authenticate, headerValue } from '../../auth.js';
import { attachLive, createLiveSession, openLive, type LiveOpening } from '../../live/open-live.js';
import type { AppContext } from '../../context.js';
import { authorizationCredential } from '../credentials.js';
import { DeepgramError, sendDeepgramError } from './errors.js';
import { mapLiveQuery, type LiveListenRequest } from './live-params.js';
import { ChannelSplitter } from './live-channels.js';
import { LiveLeg } from './live-leg.js';
import { DeepgramLiveMessages, streamMetadata } from './live-messages.js';
import type { Query } from './options.js';
import { servedWithout } from '../../openapi/route-schema.js';
import { DEEPGRAM_ROUTES } from '../../schemas/deepgram.js';

interface LiveHandshake {
  /** One session per channel, in channel order (two: the legs of a call). */
  opening: LiveOpening;
  callId: string | null;
  request: LiveListenRequest;
  requestId: string;
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
  /** A native session for the stream, created as POST .../sessions creates one (a fresh
   * idempotency key: each socket is its own session). */
  async function createSession(accountId: string, body: LiveListenRequest['sessionBody'], call: CallLink | null): Promise<string> {
    const outcome = await createLiveSession(ctx, { accountId, body, call, idempotencyKey: `deepgram-live-${randomUUID()}` });
    if (outcome.kind === 'conflict') throw new ScribedError('INTERNAL', 'a fresh idempotency key conflicted');
    return outcome.session.id;
  }

  /** A stereo stream's call (docs/calls.md), created as POST .../stt/calls creates one; its
   * legs join it as the pre-recorded multichannel path's legs do: channel 0 `agent`, channel 1
   * `customer`, each titled `<call title>: <speaker>`. */
  async function createLegs(accountId: string, request: LiveListenRequest): Promise<{ callId: string; sessionIds: string[] }> {
    const title = request.sessionBody.title;
    const outcome = await ctx.store.createCall({
      call: { id: newId('call', ctx.now()), accountId, externalId: null, title, createdAt: ctx.now().toISOString() },
      idempotency: { key: `deepgram-live-${randomUUID()}`, requestHash: callRequestHash({ title, externalId: null }) },
    });
    if (outcome.kind === 'conflict') throw new ScribedError('INTERNAL', 'a fresh idempotency key conflicted');
    ctx.metrics.callsCreated.inc();
    const callId = outcome.call.id;
    const sessionIds: string[] = [];
    for (const speaker of DEFAULT_CHANNEL_SPEAKERS.slice(0, request.channels)) {
      sessionIds.push(await createSession(accountId, { ...request.sessionBody, title: legTitle(title, speaker) }, { callId, speaker }));
    }
    return { callId, sessionIds };
  }

  async function handshake(req: FastifyRequest<{ Querystring: Query }>, requestId: string): Promise<LiveHandshake> {
    const request = mapLiveQuery(req.query ?? {});
    const key = liveCredential(headerValue(req.headers.authorization), headerValue(req.headers['sec-websocket-protocol']));
    const accountId = await authenticate(ctx.store, 'access_key', key);
    const n = request.channels;
    let callId: string | null = null;
    // Each channel is a stream of the account (a leg counts as a stream everywhere).
    const opening = await openLive(ctx, req, {
      accountId,
      target: {
        count: n,
        create: async () => {
          if (n === 1) return [await createSession(accountId, request.sessionBody, null)];
          const legs = await createLegs(accountId, request);
          callId = legs.callId;
          return legs.sessionIds;
        },
      },
      refusals: {
        streamLimit: (limit) =>
          new DeepgramError(
            429,
            'TOO_MANY_REQUESTS',
            `this account already streams ${limit} sessions on this node, its limit${n > 1 ? ` (each of the ${n} channels is one)` : ''}`,
          ),
        engineBusy: () =>
          new ScribedError(
            'ENGINE_BUSY',
            `${n > 1 ? `${n} recognizers (one per channel) are` : 'a recognizer is'} not free on this node now; try again later`,
          ),
      },
    });
    return { opening, callId, request, requestId };
  }

  return async (app) => {
    // A refusal from before the route (a GET that is no upgrade, a malformed upgrade) in
    // Deepgram's shape too.
    app.setErrorHandler(sendDeepgramError);
    app.get<{ Querystring: Query }>(
      DEEPGRAM_ROUTES.live.url,
      {
        schema: servedWithout(DEEPGRAM_ROUTES.live, 'querystring').schema,
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
        const { opening, callId, request, requestId } = req.deepgramLive!;
        const sessions = opening.sessions;
        const log = req.log.child({ sessionIds: sessions.map((s) => s.id), ...(callId ? { callId } : {}), requestId });
        const created = ctx.now().toISOString();
        const pressure = new Backpressure(socket);
        const translators = sessions.map(
          (session, i) =>
            new DeepgramLiveMessages({
              requestId,
              transcriptionId: session.transcriptionId,
              created,
              sampleRate: request.sampleRate,
              modelName: `scribed-${ctx.engine.info.name}`,
              interimResults: request.interimResults,
              vadEvents: request.vadEvents,
              utteranceEndMs: request.utteranceEndMs,
              channel: [i, sessions.length],
            }),
        );
        // A leg that ended normally waits for the others; the stream ends (Metadata, 1000) with
        // the last. A leg refused or failed ends the socket with its code; the other legs then
        // lose their socket and pause, as a dropped socket pauses them.
        const onRelease = (ended: boolean, code: number, reason: string) => {
          if (ended && !legs.every((l) => l.ended)) return;
          if (ended && legs.length > 1 && socket.readyState === socket.OPEN) socket.send(JSON.stringify(streamMetadata(translators)));
          socket.close(code, reason);
        };
        const legs = sessions.map(
          (session, i) =>
            new LiveLeg({ session, messages: translators[i]!, socket, bytesPerSample: request.bytesPerSample, pressure, onRelease }),
        );
        const splitter = new ChannelSplitter(request.bytesPerSample, request.channels);
        const control = (text: string) => {
          let type: unknown;
          try {
            type = (JSON.parse(text) as { type?: unknown }).type;
          } catch {
            type = undefined;
          }
          if (type === 'KeepAlive') return legs.forEach((l) => void l.driver.keepAlive());
          if (type === 'Finalize') return legs.forEach((l) => void l.driver.commit());
          if (type === 'CloseStream') return legs.forEach((l) => void l.driver.close());
          socket.send(
            JSON.stringify({
              type: 'Error',
              err_code: 'INVALID_MESSAGE',
              err_msg: 'text messages are KeepAlive, Finalize or CloseStream; audio goes in binary messages',
              request_id: requestId,
            }),
          );
        };

        socket.on('message', (data, isBinary) => {
          const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
          if (isBinary) splitter.push(buf).forEach((channel, i) => legs[i]!.audio(channel));
          else control(buf.toString('utf8'));
        });
        socket.on('close', () => {
          for (const leg of legs) void leg.driver.detach().catch((err) => log.error({ err, sessionId: leg.session.id }, 'detach failed'));
        });

        void attachLive(
          ctx,
          opening,
          legs.map((l) => l.driver),
          {
            socket,
            log,
            sendError: (e) => socket.send(JSON.stringify({ type: 'Error', err_code: e.code, err_msg: e.message, request_id: requestId })),
          },
        ).then((attached) => {
          if (attached) log.info({ model: request.model, channels: request.channels }, 'Deepgram live stream opened');
        });
      },
    );
  };
}
