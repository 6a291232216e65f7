// Recordings (docs/recordings.md): a History row's redacted recording, and a call's legs and
// their stereo mix, as FLAC. Not enveloped (the body is the file); byte ranges are served so a
// player can seek. Another account's row or call reads as not found. Every download is in the
// audit trail.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ScribedError } from '../../core/errors.js';
import { FLAC_CONTENT_TYPE } from '../../recording/flac.js';
import type { RecordingKeeper, StoredRecording } from '../../recording/keeper.js';
import type { TranscriptionRecord } from '../../store/store.js';
import { accountOf, requireCredential } from '../auth.js';
import { audit } from '../audit.js';
import type { AppContext } from '../context.js';
import { RECORDING_ROUTES } from '../schemas/recordings.js';

const ENDED = new Set(['COMPLETED', 'FAILED']);
/** How long after a row ended its own node is left to finish its recording. */
const FINISH_GRACE_MS = 30_000;

/** `Range: bytes=a-b | a- | -n` (one range) against a body of `size` bytes: the inclusive
 * byte span to send, null for the whole body, or 'unsatisfiable'. */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null; // several ranges or another unit: the whole body
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

function sendAudio(reply: FastifyReply, range: string | undefined, body: Buffer, filename: string): FastifyReply {
  reply.type(FLAC_CONTENT_TYPE).header('accept-ranges', 'bytes').header('content-disposition', `inline; filename="${filename}"`);
  const r = parseRange(range, body.length);
  if (r === 'unsatisfiable') return reply.code(416).header('content-range', `bytes */${body.length}`).send();
  if (r === null) return reply.send(body);
  return reply
    .code(206)
    .header('content-range', `bytes ${r.start}-${r.end}/${body.length}`)
    .send(body.subarray(r.start, r.end + 1));
}

export function recordingRoutes(ctx: AppContext, keeper: RecordingKeeper): FastifyPluginAsync {
  /** The row's recording; one left as pieces (its node stopped before finishing it) is
   * finished now. */
  async function recordingOf(t: TranscriptionRecord): Promise<StoredRecording> {
    const found = await keeper.read(t.id, t.accountId);
    if (found) return found;
    if (!ENDED.has(t.status)) {
      throw new ScribedError(
        'TRANSCRIPTION_IN_PROGRESS',
        `transcription ${t.id} has not ended; its recording is stored when its session closes or its job ends`,
      );
    }
    if (await ctx.store.hasRecordingPieces(t.id)) {
      // Just closed: the closing node is finishing it from its pieces (its last piece may
      // still be on the way); a download finishes it only when that node evidently did not.
      const endedAt = Date.parse(t.completedAt ?? t.updatedAt);
      if (Number.isFinite(endedAt) && ctx.now().getTime() - endedAt < FINISH_GRACE_MS) {
        throw new ScribedError('TRANSCRIPTION_IN_PROGRESS', `the recording of ${t.id} is being finished; try again in a few seconds`);
      }
      await keeper.finishFromPieces(t.id, t.accountId, t.audioSamples);
      const finished = await keeper.read(t.id, t.accountId);
      if (finished) return finished;
    }
    throw new ScribedError(
      'NOT_FOUND',
      `transcription ${t.id} has no recording (it was not made with recordAudio, or the recording was deleted)`,
    );
  }

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));

    app.route({
      ...RECORDING_ROUTES.transcription,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const t = await ctx.store.getTranscription(req.params.transcriptionId, accountId);
        if (!t) throw new ScribedError('NOT_FOUND', `transcription ${req.params.transcriptionId} does not exist`);
        const rec = await recordingOf(t);
        await audit(ctx, req, accountId, 'recording.download', t.id);
        return sendAudio(reply, req.headers.range, rec.bytes, `${t.id}.flac`);
      },
    });

    app.route({
      ...RECORDING_ROUTES.call,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const call = await ctx.store.getCall(req.params.callId, accountId);
        if (!call) throw new ScribedError('NOT_FOUND', `call ${req.params.callId} does not exist`);
        const leg = req.query.leg ?? 'stereo';
        const rowOf = async (transcriptionId: string) => {
          const t = await ctx.store.getTranscription(transcriptionId, accountId);
          if (!t) throw new ScribedError('NOT_FOUND', `transcription ${transcriptionId} does not exist`);
          return recordingOf(t);
        };
        let body: Buffer;
        let name: string;
        if (leg === 'stereo') {
          if (call.legs.length !== 2) {
            throw new ScribedError(
              'VALIDATION_FAILED',
              `leg: a stereo mix needs exactly two legs; call ${call.id} has ${call.legs.length}: ask for one by its speaker`,
              { details: { field: 'leg' } },
            );
          }
          // The agent on the left when a leg is so named, else the leg that joined first.
          const agentFirst = call.legs[1]!.speaker === 'agent' ? [call.legs[1]!, call.legs[0]!] : [call.legs[0]!, call.legs[1]!];
          const [left, right] = await Promise.all(agentFirst.map((l) => rowOf(l.transcriptionId)));
          body = await keeper.stereo(left!, right!);
          name = `${call.id}.stereo.flac`;
        } else {
          const found = call.legs.find((l) => l.speaker === leg);
          if (!found) throw new ScribedError('NOT_FOUND', `call ${call.id} has no leg with speaker ${leg}`);
          body = (await rowOf(found.transcriptionId)).bytes;
          name = `${call.id}.${leg}.flac`;
        }
        await audit(ctx, req, accountId, 'call.recording.download', call.id);
        return sendAudio(reply, req.headers.range, body, name);
      },
    });
  };
}
