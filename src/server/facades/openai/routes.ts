// OpenAI's transcription API over the native batch path: POST /v1/audio/transcriptions
// (multipart, as OpenAI's SDK sends it) and GET /v1/models (the list only: a path parameter
// over Fastify's length bound would be answered below the facade, in the native envelope). The mapping is in request.ts and
// response.ts (pure); this adapter authenticates (`Authorization: Bearer <access key>`),
// stages the file, submits it as a native batch job (History row, Characters charged as the
// native batch API does), waits for it (batch-wait.ts) and answers in OpenAI's shapes,
// errors included (errors.ts).
import fs from 'node:fs/promises';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsync } from 'fastify';
import { ScribedError } from '../../../core/errors.js';
import type { BatchRouteOptions } from '../../context.js';
import type { AppContext } from '../../context.js';
import { accountOf } from '../../auth.js';
import { malformedMultipart } from '../../multipart-errors.js';
import { facadeAccount } from '../credentials.js';
import { stageStream, stagingPath, transcribeStaged, type StagedFile } from '../staged-upload.js';
import { OpenAiError, sendOpenAiError } from './errors.js';
import { mapTranscriptionRequest } from './request.js';
import { OPENAI_MODEL_ALIASES } from './names.js';
import { openAiTranscription, openAiTranscriptStream } from './response.js';
import { servedWithout } from '../../openapi/route-schema.js';
import { OPENAI_ROUTES } from '../../schemas/openai.js';

const MAX_FIELD_BYTES = 64 * 1024;

/** The node's own model id and the OpenAI names served as aliases of it. */
export function servedModels(engineName: string): string[] {
  return [`scribed-${engineName}`, ...OPENAI_MODEL_ALIASES];
}

function multipartFault(err: unknown): unknown {
  const code = (err as { code?: string } | null)?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE')
    return new ScribedError('PAYLOAD_TOO_LARGE', 'the audio file is over the upload size limit', { cause: err });
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT')
    return new OpenAiError(400, 'invalid_request_error', 'too many form parts: send one file part `file` and the documented fields');
  if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE')
    return new OpenAiError(400, 'invalid_request_error', 'send multipart/form-data with a file part `file`', 'file');
  return malformedMultipart(err);
}

export function openAiRoutes(ctx: AppContext, batch: BatchRouteOptions, maxWaitMs: number): FastifyPluginAsync {
  return async (app) => {
    app.setErrorHandler(sendOpenAiError);
    app.addHook('onRequest', async (req) => {
      req.accountId = await facadeAccount(ctx.store, req, ['Bearer']);
    });
    await app.register(multipart, { throwFileSizeLimit: true });
    const models = servedModels(ctx.engine.info.name);
    const created = Math.floor(Date.now() / 1000);
    const modelView = (id: string) => ({ id, object: 'model', created, owned_by: 'scribed' });

    app.route({ ...OPENAI_ROUTES.models, handler: async () => ({ object: 'list' as const, data: models.map(modelView) }) });

    // The multipart body is read here as a stream, in OpenAI's words (schemas/openai.ts says why).
    const transcribe = servedWithout(OPENAI_ROUTES.transcribe, 'body');
    app.post(transcribe.url, { schema: transcribe.schema }, async (req, reply) => {
      const accountId = accountOf(req);
      if (!req.isMultipart())
        throw new OpenAiError(400, 'invalid_request_error', 'send multipart/form-data with a file part `file`', 'file');
      const file = await stagingPath(batch);
      try {
        // No prototype: a field named like an inherited property (constructor, toString) is an
        // unknown field like any other.
        const fields = Object.create(null) as Record<string, string[]>;
        let staged: StagedFile | null = null;
        try {
          const parts = req.parts({
            limits: { fileSize: batch.maxUploadBytes, files: 1, fields: 16, parts: 17, fieldSize: MAX_FIELD_BYTES },
          });
          for await (const part of parts) {
            if (part.type === 'file') {
              if (part.fieldname !== 'file') {
                part.file.resume();
                throw new OpenAiError(
                  400,
                  'invalid_request_error',
                  `Unrecognized file part: ${part.fieldname}; the audio goes in \`file\``,
                  part.fieldname,
                  'unknown_parameter',
                );
              }
              staged = await stageStream(part.file, file, batch.maxUploadBytes);
              if (part.file.truncated) throw new ScribedError('PAYLOAD_TOO_LARGE', 'the audio file is over the upload size limit');
            } else {
              if (part.valueTruncated) throw new ScribedError('PAYLOAD_TOO_LARGE', `${part.fieldname}: over ${MAX_FIELD_BYTES} bytes`);
              (fields[part.fieldname] ??= []).push(String(part.value));
            }
          }
        } catch (err) {
          throw multipartFault(err);
        }
        // Fields first (a bad model or format is named before the file is looked at).
        const request = mapTranscriptionRequest(fields, models);
        if (staged === null)
          throw new OpenAiError(400, 'invalid_request_error', 'you must provide a file part `file` with the audio', 'file');
        const [done] = await transcribeStaged(ctx, batch, req, reply, accountId, staged, request.nativeFields, maxWaitMs);
        if (request.stream) {
          const meta = {
            transcriptionId: done!.row.id,
            title: done!.row.title,
            status: done!.row.status,
            sampleRateHz: done!.row.sampleRateHz,
            audioSamples: done!.row.audioSamples,
          };
          const events = openAiTranscriptStream({
            meta,
            segments: done!.segments,
            language: request.language ?? ctx.engine.info.languages[0] ?? 'en',
          });
          return await reply
            .header('x-scribed-transcription-id', done!.row.id)
            .header('cache-control', 'no-cache')
            .type('text/event-stream; charset=utf-8')
            .send(events);
        }
        const out = openAiTranscription(
          {
            meta: {
              transcriptionId: done!.row.id,
              title: done!.row.title,
              status: done!.row.status,
              sampleRateHz: done!.row.sampleRateHz,
              audioSamples: done!.row.audioSamples,
            },
            segments: done!.segments,
            language: request.language ?? ctx.engine.info.languages[0] ?? 'en',
          },
          request.format,
          request.granularities,
        );
        // Where the same transcript is kept (History), for clients that want it later.
        return await reply.header('x-scribed-transcription-id', done!.row.id).type(out.contentType).send(out.body);
      } finally {
        await fs.rm(file, { force: true });
      }
    });
  };
}
