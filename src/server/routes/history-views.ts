// The History row as clients see it, shared by the History routes (transcriptions.ts) and
// the batch routes (batch.ts), which add a batch row's own fields; its shape is declared in
// src/server/schemas/transcriptions.ts.
import type { TranscriptionRecord } from '../../store/store.js';
import type { AppContext } from '../context.js';
import type { TranscriptionView } from '../schemas/transcriptions.js';

export function transcriptionView(t: TranscriptionRecord): TranscriptionView {
  return {
    transcriptionId: t.id,
    kind: t.kind,
    sessionId: t.sessionId,
    title: t.title,
    status: t.status,
    languageHint: t.languageHint,
    sampleRateHz: t.sampleRateHz,
    audioSamples: t.audioSamples.toString(),
    audioDurationMs: Number((t.audioSamples * 1000n) / BigInt(t.sampleRateHz)),
    callId: t.callId,
    speaker: t.speaker,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
    completedAt: t.completedAt,
    endReason: t.endReason,
  };
}

/** Batch-only fields of a History row: options in effect, notices, failure reason. */
export function batchFields(job: {
  options: Record<string, unknown>;
  notices: unknown[];
  error: string | null;
}): Partial<TranscriptionView> {
  return { effectiveOptions: job.options, notices: job.notices, error: job.error };
}

/** Batch fields for a row when it is a batch row (History detail). */
export async function batchDetail(ctx: AppContext, t: TranscriptionRecord): Promise<Partial<TranscriptionView>> {
  if (t.kind !== 'batch') return {};
  const job = await ctx.store.getBatchJob(t.id);
  return job ? batchFields(job) : {};
}
