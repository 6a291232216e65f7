// Real-time session endpoints: create (idempotent), read, resume, browser tickets.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { splitSessionCallFields } from '../../core/calls.js';
import { parseSampleCount } from '../../core/capture-cursor.js';
import { generateCredential } from '../../core/credentials.js';
import { requireIdempotencyKey } from '../../core/idempotency.js';
import { effectiveOptionsView } from '../../text/final-text.js';
import type { SessionRecord, TicketScope, TranscriptionStatus } from '../../store/store.js';
import { accountOf, headerValue, requireCredential } from '../auth.js';
import { MODEL_ID, streamPath, type AppContext } from '../context.js';
import { createLiveSession } from '../live/open-live.js';
import { SESSION_ROUTES } from '../schemas/sessions.js';
import { servedWithout } from '../openapi/route-schema.js';

export function sessionView(record: SessionRecord, taskStatus: TranscriptionStatus | null) {
  return {
    sessionId: record.id,
    transcriptionId: record.transcriptionId,
    status: record.state === 'CLOSED' && taskStatus ? taskStatus : record.state,
    modelId: MODEL_ID,
    streamUrl: streamPath(record.id),
    title: record.title,
    languageHint: record.languageHint,
    effectiveOptions: effectiveOptionsView(record.options),
    epoch: record.epoch,
    capturedSamples: record.capturedSamples.toString(),
    callId: record.callId,
    speaker: record.speaker,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

export function sessionRoutes(ctx: AppContext): FastifyPluginAsync {
  async function ownedSession(sessionId: string, accountId: string): Promise<SessionRecord> {
    const record = await ctx.store.getSession(sessionId, accountId);
    if (!record) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
    return record;
  }

  async function view(record: SessionRecord) {
    const t = record.state === 'CLOSED' ? await ctx.store.getTranscription(record.transcriptionId, record.accountId) : null;
    return sessionView(record, t?.status ?? null);
  }

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    // The bodies of create and resume are checked here (schemas/sessions.ts says why).
    app.route({
      ...servedWithout(SESSION_ROUTES.create, 'body'),
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const key = requireIdempotencyKey(headerValue(req.headers['idempotency-key']));
        // The call fields (docs/calls.md) are validated by the calls core; the rest as before.
        const { session: body, call } = splitSessionCallFields(req.body ?? {});
        const outcome = await createLiveSession(ctx, { accountId, body, call, idempotencyKey: key });
        if (outcome.kind === 'conflict') {
          throw new ScribedError(
            'IDEMPOTENCY_CONFLICT',
            'this Idempotency-Key was used with a different title, options, callId or speaker',
          );
        }
        if (outcome.kind === 'created') {
          req.log.info({ sessionId: outcome.session.id }, 'session created');
        } else {
          void reply.header('idempotent-replayed', 'true');
        }
        return ok(await view(outcome.session));
      },
    });

    app.route({
      ...SESSION_ROUTES.get,
      handler: async (req) => ok(await view(await ownedSession(req.params.sessionId, accountOf(req)))),
    });

    app.route({
      ...servedWithout(SESSION_ROUTES.resume, 'body'),
      handler: async (req) => {
        const accountId = accountOf(req);
        const body = (req.body ?? {}) as { capturedSamples?: unknown };
        if (typeof body !== 'object' || Array.isArray(body)) throw new ScribedError('VALIDATION_FAILED', 'body must be a JSON object');
        const clientCaptured =
          body.capturedSamples === undefined || body.capturedSamples === null ? undefined : parseSampleCount(body.capturedSamples);
        // A draining node would keep a session it serves: the client retries, and the balancer
        // (which has taken this node out) sends the resume to another node.
        if (ctx.draining?.())
          throw new ScribedError(
            'NODE_DRAINING',
            'this node is draining before it stops; resume through the balancer to reach another node',
          );
        // Any node takes a resume: it opens the new epoch, which fences the node that served the
        // old one (docs/scaling.md); the next socket's node serves the session.
        const r = await ctx.sessions.resume(req.params.sessionId, accountId, clientCaptured);
        ctx.metrics.resumesAnswered.inc();
        return ok({
          sessionId: r.sessionId,
          transcriptionId: r.transcriptionId,
          status: 'RECORDING',
          epoch: r.epoch,
          sampleOffset: 0,
          capturedSamples: r.capturedSamples.toString(),
          clientCapturedSamples: clientCaptured?.toString() ?? null,
          // Samples the client says it captured that never reached the server: it re-sends
          // them in the new epoch from sampleOffset 0.
          missingSamples: clientCaptured === undefined ? null : (clientCaptured - r.capturedSamples).toString(),
          accepting: r.accepting,
          streamUrl: streamPath(r.sessionId),
        });
      },
    });

    // Close without a socket (docs/api.md): a session that never streamed, or whose client is
    // gone, ends here; its transcript is final once the answer says COMPLETED. Closing a
    // closed session answers its view again.
    app.route({
      ...SESSION_ROUTES.close,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const record = await ownedSession(req.params.sessionId, accountId);
        if (record.state !== 'CLOSED') {
          // Claimed for this node (SESSION_BUSY while another node's socket holds it).
          const session = await ctx.sessions.take(record.id, accountId);
          if (!session) throw new ScribedError('NOT_FOUND', `session ${record.id} does not exist`);
          if (!(await session.closeFromRequest())) {
            // Deferred recognition: the close waits for the audio before it to be recognized.
            req.log.info({ sessionId: record.id }, 'session close accepted; waits for deferred recognition');
            return reply.code(202).send(ok({ ...(await view(await ownedSession(record.id, accountId))), status: 'PROCESSING' }));
          }
          req.log.info({ sessionId: record.id }, 'session closed by request');
        }
        return ok(await view(await ownedSession(record.id, accountId)));
      },
    });

    app.route({ ...SESSION_ROUTES.tickets, handler: async (req) => ok(await issueTicket(ctx, accountOf(req), req.params.sessionId)) });
  };
}

/** A browser ticket for one of the account's sessions (spec: "Create a browser ticket"); also
 * what the desk's watch-ticket route hands its page (routes/desk.ts), with `watch` scope and
 * its desk session named, so the ticket opens only the watch socket and dies with the session. */
export async function issueTicket(
  ctx: AppContext,
  accountId: string,
  sessionId: string,
  grant: { scope: TicketScope; deskSessionId: string | null } = { scope: 'stream', deskSessionId: null },
) {
  const record = await ctx.store.getSession(sessionId, accountId);
  if (!record) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
  if (record.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
  const cred = generateCredential('tkt');
  const ticketId = `tkt_${cred.id}`;
  const now = ctx.now();
  await ctx.store.insertTicket({
    id: ticketId,
    accountId,
    sessionId: record.id,
    secretHash: cred.secretHash,
    expiresAt: new Date(now.getTime() + ctx.config.ticketTtlSeconds * 1000).toISOString(),
    usedAt: null,
    scope: grant.scope,
    deskSessionId: grant.deskSessionId,
  });
  ctx.metrics.tickets.inc({ outcome: 'issued' });
  return {
    ticketId,
    sessionId: record.id,
    streamUrl: streamPath(record.id),
    expiresInSeconds: ctx.config.ticketTtlSeconds,
    ticket: cred.value,
  };
}
