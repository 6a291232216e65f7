// Voice library: list (with the accent-model filter), create a cloned TTS voice from
// uploaded recordings, add recordings, delete. Uploads are multipart with limits set before
// anything is buffered: each file streams to a staging file and is cut off past 10 MiB, the
// part count is capped at the voice's remaining room, and every file is checked by content
// (ffprobe) before any of them is published. A request stores all its files or none.
// Published files go to the data dir or, when nodes share PostgreSQL, to the store
// (src/store/recordings.ts).
// docs/api.md, Voice library. Voice design lives in voice-design.ts (same recording store).
import multipart from '@fastify/multipart';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import {
  ACCENT_MODEL_ID,
  KNOWN_MODEL_IDS,
  MAX_FILE_BYTES,
  MAX_FILES_PER_VOICE,
  PREBUILT_VOICES,
  accentCompatible,
  isPrebuiltId,
  prebuiltItem,
  validateVoiceName,
  type VoiceItem,
} from '../../core/voices.js';
import { probeAudio } from '../../media/probe.js';
import type { RecordingStore, StagedFile } from '../../store/recordings.js';
import type { NewRecording, VoiceRecord } from '../../store/store.js';
import { accountOf, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { servedWithout } from '../openapi/route-schema.js';
import { VOICE_ROUTES } from '../schemas/voices.js';
import { voiceDesignRoutes } from './voice-design.js';
import { malformedMultipart } from '../multipart-errors.js';
import type { VoiceFiles } from '../voice-files.js';

export function voiceItem(v: VoiceRecord): VoiceItem {
  return {
    id: v.id,
    name: v.name,
    type: v.type,
    feature: v.feature,
    channel: v.channel,
    fileCount: v.fileCount,
    totalFileSize: v.totalFileSize,
  };
}

/** The text fields a request may carry, each with its check (called with undefined when the
 * field is absent; it throws if the field is required). */
type FieldRules = Record<string, (value: string | undefined) => string>;

interface Upload {
  fields: Record<string, string>;
  files: StagedFile[];
}

/** Map an error raised while the multipart body is parsed onto the table: the plugin's limit
 * errors by code; any other parser error (no boundary, a body that is not multipart data, a
 * body cut off mid-part) is the client's malformed request, 400. File-system errors while
 * staging (they carry a `syscall`) stay server faults. */
function uploadError(err: unknown, maxFiles: number): unknown {
  if (err instanceof ScribedError) return err;
  switch ((err as { code?: string }).code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return new ScribedError('PAYLOAD_TOO_LARGE', `a recording is over ${MAX_FILE_BYTES} bytes (10 MiB)`);
    case 'FST_FILES_LIMIT':
      return new ScribedError(
        'VOICE_FILE_LIMIT',
        `this request may add at most ${maxFiles} more recording(s); a voice holds ${MAX_FILES_PER_VOICE}`,
      );
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new ScribedError('PAYLOAD_TOO_LARGE', 'too many form parts');
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new ScribedError('BAD_REQUEST', 'send multipart/form-data with the recordings in `files`');
    default:
      return malformedMultipart(err);
  }
}

/** Stream every part: `files` parts to staging, short text fields kept; then check every
 * file's content. On any failure the staged files are removed before the error propagates. */
async function readUpload(req: FastifyRequest, recordings: RecordingStore, maxFiles: number, fields: FieldRules): Promise<Upload> {
  const upload: Upload = { fields: {}, files: [] };
  try {
    await readParts(req, recordings, maxFiles, fields, upload);
    // A required field that never came is refused before any file is probed.
    for (const [name, rule] of Object.entries(fields)) if (!(name in upload.fields)) rule(undefined);
  } catch (err) {
    recordings.discard(upload.files);
    throw uploadError(err, maxFiles);
  }
  // The content check is outside the parser-error mapping: a failing ffprobe is a server
  // fault, not a malformed request.
  try {
    if (upload.files.length === 0)
      throw new ScribedError('VALIDATION_FAILED', 'files: at least one recording (mp3, wav or m4a) is required');
    const formats: string[] = [];
    const byContent = new Map<string, string | null>(); // identical files are probed once
    for (const [i, f] of upload.files.entries()) {
      if (!byContent.has(f.sha256)) byContent.set(f.sha256, f.sizeBytes === 0 ? null : await probeAudio(f.stagingPath));
      const format = byContent.get(f.sha256);
      if (!format) throw new ScribedError('UNSUPPORTED_AUDIO', `files[${i}] is not mp3, wav or m4a audio`);
      formats.push(format);
    }
    (upload as Upload & { formats: string[] }).formats = formats;
    return upload;
  } catch (err) {
    recordings.discard(upload.files);
    throw err;
  }
}

async function readParts(
  req: FastifyRequest,
  recordings: RecordingStore,
  maxFiles: number,
  fields: FieldRules,
  upload: Upload,
): Promise<void> {
  const allowed = Object.keys(fields);
  const parts = req.parts({
    limits: {
      fileSize: MAX_FILE_BYTES,
      files: maxFiles,
      fields: allowed.length + 2,
      fieldSize: 1024,
      parts: maxFiles + allowed.length + 2,
      headerPairs: 200,
    },
  });
  for await (const part of parts) {
    if (part.type === 'file') {
      if (part.fieldname !== 'files') {
        part.file.resume();
        throw new ScribedError('VALIDATION_FAILED', `recordings go in the form field "files", not "${part.fieldname}"`);
      }
      const staged = await recordings.stage(part.file);
      upload.files.push(staged);
      if (part.file.truncated) throw new ScribedError('PAYLOAD_TOO_LARGE', `a recording is over ${MAX_FILE_BYTES} bytes (10 MiB)`);
    } else {
      if (!Object.hasOwn(fields, part.fieldname)) throw new ScribedError('VALIDATION_FAILED', `${part.fieldname}: unknown field`);
      if (part.valueTruncated) throw new ScribedError('VALIDATION_FAILED', `${part.fieldname}: too long`);
      // Checked as soon as it is parsed: a bad field stops the upload before more is read.
      upload.fields[part.fieldname] = fields[part.fieldname]!(String(part.value));
    }
  }
}

function toNewRecordings(upload: Upload): NewRecording[] {
  const formats = (upload as Upload & { formats: string[] }).formats;
  return upload.files.map((f, i) => ({ sha256: f.sha256, format: formats[i]!, sizeBytes: f.sizeBytes }));
}

export function voiceRoutes(ctx: AppContext, files: VoiceFiles): FastifyPluginAsync {
  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    const { recordings } = files;
    await app.register(multipart, { limits: { fileSize: MAX_FILE_BYTES, files: MAX_FILES_PER_VOICE } });

    // The upload bodies and the list's query are checked here, not by their schemas (schemas/voices.ts says why).
    app.route({
      ...servedWithout(VOICE_ROUTES.list, 'querystring'),
      handler: async (req) => {
        const accountId = accountOf(req);
        const modelId = (req.query as { modelId?: string }).modelId;
        if (modelId !== undefined && !(KNOWN_MODEL_IDS as readonly string[]).includes(modelId)) {
          throw new ScribedError('VALIDATION_FAILED', `modelId: unknown model ${modelId}`);
        }
        const custom = (await ctx.store.listVoices(accountId)).map(voiceItem);
        if (modelId === ACCENT_MODEL_ID) {
          return ok([
            ...custom.filter((v) => accentCompatible(v)),
            ...PREBUILT_VOICES.filter((v) => accentCompatible(v)).map(prebuiltItem),
          ]);
        }
        return ok([...custom, ...PREBUILT_VOICES.map(prebuiltItem)]);
      },
    });

    app.route({
      ...servedWithout(VOICE_ROUTES.create, 'body'),
      handler: async (req) => {
        const accountId = accountOf(req);
        const upload = await readUpload(req, recordings, MAX_FILES_PER_VOICE, { name: (v) => validateVoiceName(v) });
        const name = upload.fields.name!;
        const now = ctx.now();
        const id = newId('vc', now);
        const created = await recordings.publish(
          upload.files,
          () =>
            ctx.store.createVoice({
              id,
              accountId,
              name,
              type: 'cloned',
              feature: 'text-to-speech',
              channel: 'web',
              designId: null,
              createdAt: now.toISOString(),
              recordings: toNewRecordings(upload),
            }),
          async () => {
            await ctx.store.deleteVoice(id, accountId);
          },
        );
        ctx.metrics.recordingBytes.inc(upload.files.reduce((sum, f) => sum + f.sizeBytes, 0));
        req.log.info({ voiceId: created.voice.id, files: upload.files.length }, 'voice created');
        return ok({ id: created.voice.id });
      },
    });

    app.route({
      ...servedWithout(VOICE_ROUTES.improve, 'body'),
      handler: async (req) => {
        const accountId = accountOf(req);
        const { voiceId } = req.params;
        if (isPrebuiltId(voiceId)) throw new ScribedError('VOICE_PREBUILT', `${voiceId} is a prebuilt voice`);
        const voice = await ctx.store.getVoice(voiceId, accountId);
        if (!voice) throw new ScribedError('NOT_FOUND', `voice ${voiceId} does not exist`);
        const room = MAX_FILES_PER_VOICE - voice.fileCount;
        if (room <= 0) throw new ScribedError('VOICE_FILE_LIMIT', `voice ${voiceId} already holds ${voice.fileCount} recordings`);
        const upload = await readUpload(req, recordings, room, {});
        let firstIndex = -1;
        const out = await recordings.publish(
          upload.files,
          async () => {
            const r = await ctx.store.addVoiceRecordings(voiceId, accountId, toNewRecordings(upload), MAX_FILES_PER_VOICE, ctx.now());
            if (r.kind === 'not_found') throw new ScribedError('NOT_FOUND', `voice ${voiceId} does not exist`);
            if (r.kind === 'limit')
              throw new ScribedError(
                'VOICE_FILE_LIMIT',
                `voice ${voiceId} holds ${r.current} recordings; ${upload.files.length} more would pass ${MAX_FILES_PER_VOICE}`,
              );
            firstIndex = r.firstIndex;
            return r.voice;
          },
          async () => {
            if (firstIndex >= 0) await ctx.store.dropVoiceRecordingsFrom(voiceId, firstIndex);
          },
        );
        ctx.metrics.recordingBytes.inc(upload.files.reduce((sum, f) => sum + f.sizeBytes, 0));
        return ok({ id: out.id, fileCount: out.fileCount, totalFileSize: out.totalFileSize });
      },
    });

    app.route({
      ...VOICE_ROUTES.delete,
      handler: async (req) => {
        const accountId = accountOf(req);
        const { id } = req.params;
        if (isPrebuiltId(id)) throw new ScribedError('VOICE_PREBUILT', `${id} is a prebuilt voice`);
        let found = true;
        await recordings.remove(async () => {
          const gone = await ctx.store.deleteVoice(id, accountId);
          if (gone === null) found = false;
          return gone ?? [];
        });
        if (!found) throw new ScribedError('NOT_FOUND', `voice ${id} does not exist`);
        return ok(null);
      },
    });

    await app.register(voiceDesignRoutes(ctx, files));
  };
}
