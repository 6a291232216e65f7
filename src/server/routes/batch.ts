// Batch transcription upload and the History list (both kinds of row).
//
// POST /stt/transcriptions takes multipart/form-data: one file part `file` (the audio) and
// the text fields `title`, `languageHint`, `options` (a JSON object). The access key is
// checked before any of the body is read; the file streams to disk under a size limit that
// stops the upload as soon as it is passed, then src/batch/submit.ts identifies it by its
// content (ffprobe), decodes it to the engine's rate (ffmpeg), keeps it in the runner's audio
// store (src/batch/audio-store.ts: the batch directory on one node, the shared store on
// many), charges and queues it. GET /stt/transcriptions lists History
// newest first with an opaque keyset cursor. An optional Idempotency-Key makes a retried
// upload answer with the first job instead of charging again (docs/api.md).
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { isId } from '../../core/ids.js';
import { optionalIdempotencyKey } from '../../core/idempotency.js';
import { batchSubmitterFor } from '../../batch/submit.js';
import type { BatchJobRecord, HistoryPosition } from '../../store/store.js';
import { accountOf, headerValue, requireCredential } from '../auth.js';
import type { AppContext, BatchRouteOptions } from '../context.js';
import { servedWithout } from '../openapi/route-schema.js';
import { BATCH_ROUTES, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../schemas/batch.js';
import { batchFields, transcriptionView } from './history-views.js';
import { malformedMultipart } from '../multipart-errors.js';
import { jsonNestsDeeperThan, tooDeep } from '../../core/json-depth.js';

const MAX_FIELD_BYTES = 64 * 1024;

/** Opaque cursor: base64url of the last row's (createdAt, id). */
export function encodeCursor(p: HistoryPosition): string {
  return Buffer.from(JSON.stringify([p.createdAt, p.id]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): HistoryPosition {
  const bad = () => new ScribedError('VALIDATION_FAILED', 'cursor: not a cursor returned by this list', { details: { field: 'cursor' } });
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'string' || !isId(v[1], 'stt') || Number.isNaN(Date.parse(v[0]))) throw bad();
  return { createdAt: v[0], id: v[1] };
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_PAGE_SIZE;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) {
    throw new ScribedError('VALIDATION_FAILED', `limit: must be an integer from 1 to ${MAX_PAGE_SIZE}`, { details: { field: 'limit' } });
  }
  return n;
}

/** Errors @fastify/multipart raises for its limits, in the table's terms. */
function multipartError(err: unknown): unknown {
  const code = (err as { code?: string } | null)?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE')
    return new ScribedError('PAYLOAD_TOO_LARGE', 'the audio file is over the upload size limit', { cause: err });
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return new ScribedError(
      'PAYLOAD_TOO_LARGE',
      'too many form parts: send one file part `file` and the fields title, languageHint, options',
      { cause: err },
    );
  }
  if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE')
    return new ScribedError('BAD_REQUEST', 'send multipart/form-data with a file part `file`', { cause: err });
  return malformedMultipart(err);
}

export function batchRoutes(ctx: AppContext, opts: BatchRouteOptions): FastifyPluginAsync {
  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    await app.register(multipart, { throwFileSizeLimit: true });
    const submitter = batchSubmitterFor(opts, () => ({
      ...opts,
      store: ctx.store,
      engine: ctx.engine,
      metrics: ctx.metrics,
      now: ctx.now,
    }));

    /** The answer for a job: created, or replayed under its Idempotency-Key (same body). A
     * multichannel upload answers with its first leg's row (which carries callId) and every
     * leg; charactersCharged is then what the whole upload cost (docs/calls.md). */
    async function jobView(job: BatchJobRecord) {
      const row = (await ctx.store.getTranscription(job.transcriptionId, job.accountId))!;
      const view = {
        ...transcriptionView(row),
        ...batchFields(job),
        charactersCharged: job.charactersCharged.toString(),
        source: job.source,
      };
      if (row.callId === null) return ok(view);
      const call = await ctx.store.getCall(row.callId, job.accountId);
      const legs = await Promise.all(
        (call?.legs ?? []).map(async (l) => ({
          speaker: l.speaker,
          transcriptionId: l.transcriptionId,
          status: l.status,
          charactersCharged: ((await ctx.store.getBatchJob(l.transcriptionId))?.charactersCharged ?? 0n).toString(),
        })),
      );
      return ok({ ...view, charactersCharged: legs.reduce((sum, l) => sum + BigInt(l.charactersCharged), 0n).toString(), legs });
    }

    // The upload, its Idempotency-Key and the list's query are checked here, not by their
    // schemas (schemas/batch.ts says why).
    app.route({
      ...servedWithout(BATCH_ROUTES.upload, 'body', 'headers'),
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const idempotencyKey = optionalIdempotencyKey(headerValue(req.headers['idempotency-key']));
        if (!req.isMultipart()) throw new ScribedError('BAD_REQUEST', 'send multipart/form-data with a file part `file`');
        await fs.mkdir(opts.dir, { recursive: true, mode: 0o700 });
        const token = randomBytes(8).toString('hex');
        const upload = path.join(opts.dir, `upload-${token}`);
        /** The job stored under this request's Idempotency-Key, or null when the key was used
         * with another file or other fields. */
        const replay = async (job: BatchJobRecord | null) => {
          if (job === null)
            throw new ScribedError('IDEMPOTENCY_CONFLICT', 'this Idempotency-Key was used with a different file, title or options');
          void reply.header('idempotent-replayed', 'true');
          return jobView(job);
        };
        const audioHash = createHash('sha256');
        let uploadName: string | null = null;
        try {
          const fields: Record<string, string> = {};
          let haveFile = false;
          try {
            const parts = req.parts({
              limits: { fileSize: opts.maxUploadBytes, files: 1, fields: 8, parts: 9, fieldSize: MAX_FIELD_BYTES },
            });
            for await (const part of parts) {
              if (part.type === 'file') {
                if (part.fieldname !== 'file') {
                  part.file.resume();
                  throw new ScribedError('VALIDATION_FAILED', `${part.fieldname}: unknown file part; the audio goes in \`file\``, {
                    details: { field: part.fieldname },
                  });
                }
                const hashing = new Transform({
                  transform(chunk: Buffer, _enc, done) {
                    audioHash.update(chunk);
                    done(null, chunk);
                  },
                });
                await pipeline(part.file, hashing, createWriteStream(upload, { mode: 0o600 }));
                if (part.file.truncated) throw new ScribedError('PAYLOAD_TOO_LARGE', 'the audio file is over the upload size limit');
                haveFile = true;
                uploadName = typeof part.filename === 'string' && part.filename !== '' ? path.basename(part.filename) : null;
              } else {
                if (Object.hasOwn(fields, part.fieldname)) {
                  throw new ScribedError('VALIDATION_FAILED', `${part.fieldname}: given twice`, { details: { field: part.fieldname } });
                }
                if (part.valueTruncated) throw new ScribedError('PAYLOAD_TOO_LARGE', `${part.fieldname}: over ${MAX_FIELD_BYTES} bytes`);
                fields[part.fieldname] = String(part.value);
              }
            }
          } catch (err) {
            throw multipartError(err);
          }
          if (!haveFile)
            throw new ScribedError('VALIDATION_FAILED', 'file: an audio file part named `file` is required', {
              details: { field: 'file' },
            });
          if (fields.options !== undefined && jsonNestsDeeperThan(fields.options)) throw tooDeep('options');
          const outcome = await submitter.submit(
            { accountId, file: upload, audioSha256: audioHash.digest('hex'), fields, idempotencyKey, uploadName },
            req.log,
          );
          if (outcome.kind === 'replayed') return await replay(outcome.job);
          return await jobView(outcome.job);
        } finally {
          await fs.rm(upload, { force: true });
        }
      },
    });

    app.route({
      ...servedWithout(BATCH_ROUTES.list, 'querystring'),
      handler: async (plainReq) => {
        const req = plainReq as typeof plainReq & { query: { cursor?: string; limit?: string } };
        const accountId = accountOf(req);
        const limit = parseLimit(req.query.limit);
        const after = req.query.cursor === undefined || req.query.cursor === '' ? undefined : decodeCursor(req.query.cursor);
        // One row more than the page tells whether another page exists.
        const rows = await ctx.store.listTranscriptions(accountId, limit + 1, after);
        const page = rows.slice(0, limit);
        const last = page[page.length - 1];
        return ok({
          items: page.map(transcriptionView),
          nextCursor: rows.length > limit && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null,
        });
      },
    });
  };
}
