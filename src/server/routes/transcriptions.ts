// History rows and transcript downloads. Rows are shared by real-time sessions and (later)
// batch jobs; downloads are not enveloped, so a JSON transcript is the document itself.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { toJson, toSrt, toText, toVtt } from '../../core/transcript.js';
import type { TranscriptionRecord } from '../../store/store.js';
import { accountOf, requireCredential } from '../auth.js';
import { audit, removeErasedAudio, removeErasedRecordings } from '../audit.js';
import { API, type AppContext } from '../context.js';
import { FORMATS, TRANSCRIPTION_ROUTES } from '../schemas/transcriptions.js';
import { batchDetail, transcriptionView } from './history-views.js';

export function transcriptionRoutes(ctx: AppContext): FastifyPluginAsync {
  async function owned(transcriptionId: string, accountId: string): Promise<TranscriptionRecord> {
    // A session id here is a common first mistake (the session is what a client creates).
    // The hint is given for any `rts_` id without looking it up, so the answer is the same
    // whether such a session exists, is another account's or never was.
    if (transcriptionId.startsWith('rts_')) {
      throw new ScribedError(
        'NOT_FOUND',
        `${transcriptionId} is a real-time session id, not a transcription id: read the session's transcriptionId from GET ${API}/stt/realtime/sessions/{sessionId} and use it here`,
      );
    }
    const t = await ctx.store.getTranscription(transcriptionId, accountId);
    if (!t) throw new ScribedError('NOT_FOUND', `transcription ${transcriptionId} does not exist`);
    return t;
  }

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    app.route({
      ...TRANSCRIPTION_ROUTES.get,
      handler: async (req) => {
        const t = await owned(req.params.transcriptionId, accountOf(req));
        return ok({ ...transcriptionView(t), ...(await batchDetail(ctx, t)) });
      },
    });

    app.route({
      ...TRANSCRIPTION_ROUTES.transcript,
      handler: async (req, reply) => {
        const format = req.query.format ?? 'json';
        const accountId = accountOf(req);
        const t = await owned(req.params.transcriptionId, accountId);
        const segments = await ctx.store.listSegments(t.id);
        await audit(ctx, req, accountId, 'transcript.download', t.id);
        const meta = { transcriptionId: t.id, title: t.title, status: t.status, sampleRateHz: t.sampleRateHz };
        const body =
          format === 'json'
            ? JSON.stringify(toJson(meta, segments))
            : format === 'txt'
              ? toText(segments)
              : format === 'srt'
                ? toSrt(segments, t.sampleRateHz)
                : toVtt(segments, t.sampleRateHz);
        return reply.type(FORMATS[format]).header('content-disposition', `attachment; filename="${t.id}.${format}"`).send(body);
      },
    });

    // Erasure (docs/redaction.md): the row and everything holding its words or audio.
    app.route({
      ...TRANSCRIPTION_ROUTES.delete,
      handler: async (req) => {
        const accountId = accountOf(req);
        const id = req.params.transcriptionId;
        const outcome = await ctx.store.eraseTranscription(id, accountId);
        if (outcome.kind === 'not_found') await owned(id, accountId); // the same 404 (and rts_ hint) as a read
        if (outcome.kind === 'in_progress')
          throw new ScribedError('TRANSCRIPTION_IN_PROGRESS', `transcription ${id} has not ended; close its session or wait for its job`);
        if (outcome.kind !== 'erased') throw new ScribedError('NOT_FOUND', `transcription ${id} does not exist`);
        await removeErasedAudio(ctx, req, outcome.audioFiles);
        await removeErasedRecordings(ctx, outcome.recordingFiles);
        await audit(ctx, req, accountId, 'transcription.delete', id);
        return ok({ transcriptionId: id, deleted: true as const });
      },
    });
  };
}
