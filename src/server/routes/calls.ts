// Calls (docs/calls.md): create (idempotent), read, list (by the PBX's id), and the
// transcript of all legs merged by time. Legs join through the create-session route (its body's
// callId and speaker); this plugin reads them. Another account's call reads as missing.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  callRequestHash,
  callStatus,
  callTranscriptSrt,
  callTranscriptText,
  callTranscriptVtt,
  encodeCallCursor,
  mergeCallTranscript,
  parseCallListQuery,
  parseTranscriptFormat,
  type CallTranscriptFormat,
} from '../../core/calls.js';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { requireIdempotencyKey } from '../../core/idempotency.js';
import { newId } from '../../core/ids.js';
import type { CallRecord } from '../../store/store.js';
import { accountOf, headerValue, requireCredential } from '../auth.js';
import { audit, removeErasedAudio, removeErasedRecordings } from '../audit.js';
import type { AppContext } from '../context.js';
import { idempotencyKeyFirst } from '../openapi/route-schema.js';
import { CALL_ROUTES, callRequestOf } from '../schemas/calls.js';

const CONTENT_TYPES: Record<CallTranscriptFormat, string> = {
  json: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  srt: 'application/x-subrip; charset=utf-8',
  vtt: 'text/vtt; charset=utf-8',
};

export function callView(c: CallRecord) {
  const updatedAt = c.legs.reduce((latest, l) => (l.updatedAt > latest ? l.updatedAt : latest), c.updatedAt);
  return {
    callId: c.id,
    externalId: c.externalId,
    title: c.title,
    agentId: c.agentId,
    status: callStatus(c.legs),
    // The longest leg's audio so far: legs share the call's clock from their own first sample.
    durationMs: c.legs.reduce(
      (longest, l) => Math.max(longest, l.sampleRateHz > 0 ? Math.round((Number(l.audioSamples) * 1000) / l.sampleRateHz) : 0),
      0,
    ),
    legs: c.legs.map((l) => ({
      speaker: l.speaker,
      sessionId: l.sessionId,
      transcriptionId: l.transcriptionId,
      kind: l.kind,
      status: l.status,
      createdAt: l.createdAt,
    })),
    createdAt: c.createdAt,
    updatedAt,
  };
}

export function callRoutes(ctx: AppContext): FastifyPluginAsync {
  async function owned(callId: string, accountId: string): Promise<CallRecord> {
    const call = await ctx.store.getCall(callId, accountId);
    if (!call) throw new ScribedError('NOT_FOUND', `call ${callId} does not exist`);
    return call;
  }

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));

    app.route({
      ...CALL_ROUTES.create,
      preValidation: idempotencyKeyFirst,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const key = requireIdempotencyKey(headerValue(req.headers['idempotency-key']));
        const valid = callRequestOf(req.body);
        const outcome = await ctx.store.createCall({
          call: {
            id: newId('call', ctx.now()),
            accountId,
            externalId: valid.externalId,
            title: valid.title,
            agentId: valid.agentId,
            createdAt: ctx.now().toISOString(),
          },
          idempotency: { key, requestHash: callRequestHash(valid) },
        });
        if (outcome.kind === 'conflict')
          throw new ScribedError('IDEMPOTENCY_CONFLICT', 'this Idempotency-Key was used with a different title, externalId or agentId');
        if (outcome.kind === 'created') {
          ctx.metrics.callsCreated.inc();
          req.log.info({ callId: outcome.call.id }, 'call created');
          void reply.code(201);
        } else {
          void reply.header('idempotent-replayed', 'true');
        }
        return ok(callView(outcome.call));
      },
    });

    app.route({
      ...CALL_ROUTES.list,
      handler: async (req) => {
        const q = parseCallListQuery(req.query);
        // One row more than the page tells whether another page exists.
        const rows = await ctx.store.listCalls(accountOf(req), q.limit + 1, {
          ...(q.externalId === undefined ? {} : { externalId: q.externalId }),
          ...(q.after === undefined ? {} : { after: q.after }),
        });
        const page = rows.slice(0, q.limit);
        const last = page[page.length - 1];
        return ok({
          items: page.map(callView),
          nextCursor: rows.length > q.limit && last ? encodeCallCursor({ createdAt: last.createdAt, id: last.id }) : null,
        });
      },
    });

    app.route({ ...CALL_ROUTES.get, handler: async (req) => ok(callView(await owned(req.params.callId, accountOf(req)))) });

    app.route({
      ...CALL_ROUTES.transcript,
      handler: async (req, reply) => {
        const format = parseTranscriptFormat(req.query.format);
        const accountId = accountOf(req);
        const call = await owned(req.params.callId, accountId);
        await audit(ctx, req, accountId, 'call.transcript.download', call.id);
        // A live leg contributes the finals stored so far; each read is a snapshot per leg.
        const legs = await Promise.all(
          call.legs.map(async (l) => ({
            speaker: l.speaker,
            meta: {
              transcriptionId: l.transcriptionId,
              title: call.title,
              status: l.status,
              sampleRateHz: l.sampleRateHz,
              audioSamples: l.audioSamples,
            },
            segments: await ctx.store.listSegments(l.transcriptionId),
          })),
        );
        const merged = mergeCallTranscript(
          { callId: call.id, externalId: call.externalId, title: call.title, status: callStatus(call.legs) },
          legs,
        );
        const body =
          format === 'json'
            ? JSON.stringify(merged)
            : format === 'txt'
              ? callTranscriptText(merged)
              : format === 'srt'
                ? callTranscriptSrt(merged)
                : callTranscriptVtt(merged);
        return reply.type(CONTENT_TYPES[format]).header('content-disposition', `attachment; filename="${call.id}.${format}"`).send(body);
      },
    });

    // Erasure (docs/redaction.md): every leg as DELETE .../transcriptions/{id} does, then the call.
    app.route({
      ...CALL_ROUTES.delete,
      handler: async (req) => {
        const accountId = accountOf(req);
        const id = req.params.callId;
        const outcome = await ctx.store.eraseCall(id, accountId);
        if (outcome.kind === 'not_found') throw new ScribedError('NOT_FOUND', `call ${id} does not exist`);
        if (outcome.kind === 'in_progress')
          throw new ScribedError('TRANSCRIPTION_IN_PROGRESS', `leg ${outcome.transcriptionId} of call ${id} has not ended`);
        await removeErasedAudio(ctx, req, outcome.audioFiles);
        await removeErasedRecordings(ctx, outcome.recordingFiles);
        await audit(ctx, req, accountId, 'call.delete', id);
        return ok({ callId: id, deleted: true as const, transcriptionIds: outcome.transcriptionIds });
      },
    });
  };
}
