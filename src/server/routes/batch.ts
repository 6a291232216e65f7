// Batch transcription upload and the History list (both kinds of row).
//
// POST /stt/transcriptions takes multipart/form-data: one file part `file` (the audio) and
// the text fields `title`, `languageHint`, `options` (a JSON object). The access key is
// checked before any of the body is read; the file streams to disk under a size limit that
// stops the upload as soon as it is passed, is identified by its content (ffprobe), decoded
// to the engine's rate (ffmpeg), kept in the runner's audio store (src/batch/audio-store.ts:
// the batch directory on one node, the shared store on many), charged, and queued. GET /stt/transcriptions lists History
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
import { charactersDue } from '../../core/billing.js';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { isId, newId } from '../../core/ids.js';
import { optionalIdempotencyKey } from '../../core/idempotency.js';
import { decodeToRaw, probeAudio } from '../../batch/audio.js';
import { audioAllowance, decodeCap, refuseDecoded, refuseStatedDuration } from '../../batch/limits.js';
import { Semaphore } from '../../batch/semaphore.js';
import { batchRequestHash, validateBatchRequest, type BatchRequest } from '../../batch/request.js';
import { splitChannelFields } from '../../batch/multichannel.js';
import { callRequestHash } from '../../core/calls.js';
import { checkMultichannelFile, legTitle } from '../../core/channels.js';
import { DEFAULT_TITLE } from '../../core/session-options.js';
import type { BatchJobRecord, HistoryPosition } from '../../store/store.js';
import { accountOf, headerValue, requireCredential } from '../auth.js';
import { API, type AppContext, type BatchRouteOptions } from '../context.js';
import { batchFields, transcriptionView } from './history-views.js';
import { malformedMultipart } from '../multipart-errors.js';
import { jsonNestsDeeperThan, tooDeep } from '../../core/json-depth.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
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
  if (code === 'FST_REQ_FILE_TOO_LARGE') return new ScribedError('PAYLOAD_TOO_LARGE', 'the audio file is over the upload size limit', { cause: err });
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return new ScribedError('PAYLOAD_TOO_LARGE', 'too many form parts: send one file part `file` and the fields title, languageHint, options', { cause: err });
  }
  if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') return new ScribedError('BAD_REQUEST', 'send multipart/form-data with a file part `file`', { cause: err });
  return malformedMultipart(err);
}

export function batchRoutes(ctx: AppContext, opts: BatchRouteOptions): FastifyPluginAsync {
  const base = `${API}/stt/transcriptions`;
  return async (app) => {
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    await app.register(multipart, { throwFileSizeLimit: true });
    const decodeSlots = new Semaphore(opts.maxConcurrentDecodes);

    /** The answer for a job: created, or replayed under its Idempotency-Key (same body). A
     * multichannel upload answers with its first leg's row (which carries callId) and every
     * leg; charactersCharged is then what the whole upload cost (docs/calls.md). */
    async function jobView(job: BatchJobRecord) {
      const row = (await ctx.store.getTranscription(job.transcriptionId, job.accountId))!;
      const view = { ...transcriptionView(row), ...batchFields(job), charactersCharged: job.charactersCharged.toString(), source: job.source };
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

    app.post(base, async (req, reply) => {
      const accountId = accountOf(req);
      const idempotencyKey = optionalIdempotencyKey(headerValue(req.headers['idempotency-key']));
      if (!req.isMultipart()) throw new ScribedError('BAD_REQUEST', 'send multipart/form-data with a file part `file`');
      await fs.mkdir(opts.dir, { recursive: true, mode: 0o700 });
      const token = randomBytes(8).toString('hex');
      const upload = path.join(opts.dir, `upload-${token}`);
      /** The job stored under this request's Idempotency-Key, or null when the key was used
       * with another file or other fields. */
      const replay = async (job: BatchJobRecord | null) => {
        if (job === null) throw new ScribedError('IDEMPOTENCY_CONFLICT', 'this Idempotency-Key was used with a different file, title or options');
        void reply.header('idempotent-replayed', 'true');
        return jobView(job);
      };
      /** Decoded audio: one file, or one per channel of a multichannel upload. */
      const decodedPath = (leg: number) => path.join(opts.dir, `decode-${token}-${leg}.s16le`);
      const decodedPaths: string[] = [];
      const audioHash = createHash('sha256');
      /** The decoded audio's names in the audio store, until a stored job owns them. */
      let unowned: string[] = [];
      let uploadName: string | null = null;
      try {
        const fields: Record<string, string> = {};
        let haveFile = false;
        try {
          const parts = req.parts({ limits: { fileSize: opts.maxUploadBytes, files: 1, fields: 8, parts: 9, fieldSize: MAX_FIELD_BYTES } });
          for await (const part of parts) {
            if (part.type === 'file') {
              if (part.fieldname !== 'file') {
                part.file.resume();
                throw new ScribedError('VALIDATION_FAILED', `${part.fieldname}: unknown file part; the audio goes in \`file\``, { details: { field: part.fieldname } });
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
        if (!haveFile) throw new ScribedError('VALIDATION_FAILED', 'file: an audio file part named `file` is required', { details: { field: 'file' } });
        if (fields.options !== undefined && jsonNestsDeeperThan(fields.options)) throw tooDeep('options');
        // multichannel and channelSpeakers (src/core/channels.ts); the rest is validated below.
        const split = splitChannelFields(fields);
        const channels = split.channels;

        // Probing and decoding run at most maxConcurrentDecodes at a time (each is an ffmpeg
        // process); the rest wait their turn.
        const prepared = await decodeSlots.run(async () => {
          const probed = await probeAudio(upload);
          // Telephone-band sources (8 kHz and below) stay at 8 kHz and go to the telephony
          // front end, as a mulaw_8000 session would; everything else is decoded to the
          // engine's rate. Upsampling narrowband audio to 16 kHz for the wideband model
          // recognizes it far worse (docs/engines.md).
          const rate = probed.sampleRate > 0 && probed.sampleRate <= 8000 ? 8000 : ctx.engine.info.sampleRate;
          const checked = validateBatchRequest(split.fields, rate, { languages: ctx.engine.info.languages, detectsLanguage: ctx.engine.info.detectsLanguage ?? false });
          if (channels) checkMultichannelFile(probed.channels);
          // The channel options are part of the stored options (and so of the Idempotency-Key's
          // request); a stereo file without them is mixed down as before, with a notice.
          const valid: BatchRequest = channels
            ? { ...checked, effectiveOptions: withChannelOptions(checked.effectiveOptions, channels.speakers) }
            : probed.channels > 1
              ? {
                  ...checked,
                  notices: [
                    ...checked.notices,
                    {
                      code: 'CHANNELS_MIXED_DOWN',
                      message: `the file has ${probed.channels} channels, mixed down to one; send options {"multichannel": true} to transcribe each channel as a leg of a call`,
                    },
                  ],
                }
              : checked;
          const legs = channels ? channels.speakers.length : 1;
          const idempotency = idempotencyKey === undefined ? null : { key: idempotencyKey, requestHash: batchRequestHash(audioHash.digest('hex'), valid) };
          // A retry of a stored upload answers before decoding it again, whatever the balance
          // is now (the create below checks once more, in its transaction, for a duplicate
          // sent in parallel).
          const earlier = idempotency && (await ctx.store.findBatchJobByIdempotencyKey(accountId, idempotency.key));
          if (earlier) return { kind: 'replay' as const, job: earlier.requestHash === idempotency.requestHash ? earlier.job : null };
          // What the account can pay for and the server allows, before anything is decoded
          // (src/batch/limits.ts): a stated duration over it is refused now, and the decode
          // cannot write more than it plus one second whatever the container claims.
          // A multichannel upload is charged per channel, so the balance buys 1/legs of it.
          const allowance = audioAllowance((await ctx.store.getAccount(accountId))?.characters ?? 0n, opts.maxAudioSeconds, legs);
          const stated = refuseStatedDuration(probed.durationSec, allowance);
          if (stated) throw stated;
          const samples: bigint[] = [];
          for (let leg = 0; leg < legs; leg++) {
            const out = decodedPath(leg);
            decodedPaths.push(out);
            await decodeToRaw(upload, out, rate, decodeCap(allowance, rate), undefined, channels ? leg : null);
            const n = BigInt(Math.floor((await fs.stat(out)).size / 2));
            if (n === 0n) throw new ScribedError('UNSUPPORTED_AUDIO', 'the file decodes to no audio samples');
            const over = refuseDecoded(n, rate, allowance);
            if (over) throw over;
            samples.push(n);
          }
          return { kind: 'decoded' as const, probed, rate, valid, idempotency, samples };
        });
        if (prepared.kind === 'replay') return await replay(prepared.job);
        const { probed, rate, valid, idempotency, samples } = prepared;
        if (channels) {
          const now = ctx.now();
          const callTitle = valid.title === DEFAULT_TITLE && uploadName !== null ? uploadName : valid.title;
          // A call lists its legs by (createdAt, id): ids made in one millisecond order at
          // random, so they are sorted and handed out in channel order.
          const ids = channels.speakers.map(() => newId('stt', now)).sort();
          const legs = channels.speakers.map((speaker, i) => ({ speaker, id: ids[i]!, samples: samples[i]!, decoded: decodedPaths[i]! }));
          for (const leg of legs) {
            unowned.push(`${leg.id}.s16le`);
            await opts.runner.audio.write(`${leg.id}.s16le`, leg.decoded);
          }
          const callId = newId('call', now);
          const total = legs.reduce((sum, l) => sum + charactersDue(l.samples, rate), 0n);
          const outcome = await ctx.store.createBatchCall({
            // The call's own key (calls have a namespace of their own): the upload is the
            // call's only creator, so its first leg's id makes a key nothing else uses.
            call: { id: callId, accountId, title: callTitle, idempotencyKey: `batch-upload-${legs[0]!.id}`, requestHash: callRequestHash({ title: callTitle, externalId: null }), createdAt: now.toISOString() },
            legs: legs.map((l) => ({
              job: {
                transcriptionId: l.id,
                accountId,
                options: valid.effectiveOptions as unknown as Record<string, unknown>,
                notices: valid.notices,
                audioFile: `${l.id}.s16le`,
                charactersCharged: charactersDue(l.samples, rate),
                source: { ...probed },
                createdAt: now.toISOString(),
              },
              speaker: l.speaker,
              title: legTitle(callTitle, l.speaker),
              audioSamples: l.samples,
            })),
            languageHint: valid.languageHint,
            sampleRateHz: rate,
            idempotency,
          });
          if (outcome.kind === 'insufficient') throw new ScribedError('INSUFFICIENT_CHARACTERS', `transcribing this file's ${legs.length} channels costs ${total} Characters, more than the balance`);
          if (outcome.kind === 'conflict') return await replay(null);
          if (outcome.kind === 'replayed') return await replay(outcome.job);
          unowned = []; // the jobs' now
          ctx.metrics.callsCreated.inc();
          for (const l of legs) {
            opts.runner.enqueue(l.id);
            ctx.metrics.batchJobs.inc({ outcome: 'queued' });
          }
          req.log.info({ callId, transcriptionIds: legs.map((l) => l.id), format: probed.format, codec: probed.codec, samples: samples[0]!.toString() }, 'multichannel batch upload queued as a call');
          return await jobView(outcome.job);
        }

        const now = ctx.now();
        const id = newId('stt', now);
        const audioFile = `${id}.s16le`;
        unowned = [audioFile];
        await opts.runner.audio.write(audioFile, decodedPaths[0]!);
        const outcome = await ctx.store.createBatchJob({
          job: {
            transcriptionId: id,
            accountId,
            options: valid.effectiveOptions as unknown as Record<string, unknown>,
            notices: valid.notices,
            audioFile,
            charactersCharged: charactersDue(samples[0]!, rate),
            source: { ...probed },
            createdAt: now.toISOString(),
          },
          title: valid.title,
          languageHint: valid.languageHint,
          sampleRateHz: rate,
          audioSamples: samples[0]!,
          idempotency,
        });
        if (outcome.kind === 'insufficient') {
          throw new ScribedError('INSUFFICIENT_CHARACTERS', `transcribing this file costs ${charactersDue(samples[0]!, rate)} Characters, more than the balance`);
        }
        if (outcome.kind === 'conflict') return await replay(null);
        if (outcome.kind === 'replayed') return await replay(outcome.job);
        unowned = []; // the job's now: the node that ends the job deletes it
        opts.runner.enqueue(id);
        ctx.metrics.batchJobs.inc({ outcome: 'queued' });
        req.log.info({ transcriptionId: id, format: probed.format, codec: probed.codec, samples: samples[0]!.toString() }, 'batch job queued');
        return await jobView(outcome.job);
      } finally {
        // Whatever ended the request (a refusal, a replay, or the create itself throwing),
        // no audio of it stays unless a stored job names it.
        await fs.rm(upload, { force: true });
        for (const p of decodedPaths) await fs.rm(p, { force: true });
        for (const name of unowned) {
          await opts.runner.audio.remove(name).catch((err: unknown) => req.log.warn({ err, file: name }, 'could not delete the audio of an upload that created no job; the sweep removes it'));
        }
      }
    });

    app.get<{ Querystring: { cursor?: string; limit?: string } }>(base, async (req) => {
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
    });
  };
}

/** A multichannel upload's effective options: the validated ones and the channel options. */
function withChannelOptions(options: BatchRequest['effectiveOptions'], speakers: string[]): BatchRequest['effectiveOptions'] {
  const channelOptions = { multichannel: true, channelSpeakers: speakers };
  return { ...options, ...channelOptions };
}
