// A facade request waits for its batch jobs: the OpenAI and Deepgram REST APIs answer a
// transcription in the response, where scribed's native batch API answers with a History row
// to poll. The wait is bounded (maxWaitMs). Past it the jobs still pending are failed and
// refunded (store.failBatchJob, the same transaction that fails a job whose decoder died), so
// the request is answered with a timeout error and charges nothing; a job that ended in the
// meantime keeps its outcome. The History row stays, FAILED, with the reason.
//
// Jobs are polled in the store rather than watched in process: on a shared store another node
// may run them (docs/scaling.md).
import { ScribedError } from '../../core/errors.js';
import type { TranscriptSegment } from '../../core/transcript.js';
import type { BatchJobRecord, Store, TranscriptionRecord } from '../../store/store.js';

/** Default bound on a facade request's wait for its transcription. */
export const DEFAULT_FACADE_MAX_WAIT_MS = 300_000;
const POLL_MS = 200;

/** Reason stored on a job failed because its request stopped waiting. */
export const WAIT_BOUND_REASON = 'the request waiting for this transcription passed its wait bound; the job was cancelled and refunded';

export interface FinishedTranscription {
  row: TranscriptionRecord;
  job: BatchJobRecord;
  segments: TranscriptSegment[];
}

/** Thrown when the wait bound passed; each facade renders it as its API's timeout. */
export class WaitBoundPassed extends Error {
  constructor(readonly waitedMs: number) {
    super(`the transcription did not finish within ${Math.round(waitedMs / 1000)} s; it was cancelled and nothing was charged`);
    this.name = 'WaitBoundPassed';
  }
}

/** The jobs of an upload: one, or a multichannel call's legs in channel order. */
export async function uploadJobs(store: Store, job: BatchJobRecord): Promise<string[]> {
  const row = await store.getTranscription(job.transcriptionId, job.accountId);
  if (row === null || row.callId === null) return [job.transcriptionId];
  const call = await store.getCall(row.callId, job.accountId);
  return (call?.legs ?? []).map((l) => l.transcriptionId).sort();
}

const ended = (j: BatchJobRecord | null) => j !== null && (j.state === 'DONE' || j.state === 'FAILED');

/**
 * Wait until every job has ended, at most maxWaitMs; then read their transcripts. A job that
 * failed raises the stored reason as ENGINE_FAILED (it was refunded by whoever failed it).
 */
export async function awaitTranscriptions(
  store: Store,
  accountId: string,
  ids: readonly string[],
  opts: { maxWaitMs: number; signal?: AbortSignal },
): Promise<FinishedTranscription[]> {
  const started = Date.now();
  let jobs = await Promise.all(ids.map((id) => store.getBatchJob(id)));
  while (!jobs.every(ended)) {
    if (Date.now() - started >= opts.maxWaitMs || opts.signal?.aborted === true) {
      for (const id of ids) await store.failBatchJob(id, WAIT_BOUND_REASON);
      jobs = await Promise.all(ids.map((id) => store.getBatchJob(id)));
      // Every job had finished after all: the answer stands.
      if (jobs.every((j) => j?.state === 'DONE')) break;
      throw new WaitBoundPassed(Date.now() - started);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
    jobs = await Promise.all(ids.map((id) => store.getBatchJob(id)));
  }
  const failed = jobs.find((j) => j?.state === 'FAILED');
  if (failed) throw new ScribedError('ENGINE_FAILED', `the transcription failed: ${failed.error ?? 'unknown reason'}; nothing was charged`);
  return Promise.all(
    jobs.map(async (job) => {
      const row = await store.getTranscription(job!.transcriptionId, accountId);
      if (row === null) throw new ScribedError('INTERNAL', `History row ${job!.transcriptionId} is missing`);
      return { row, job: job!, segments: await store.listSegments(job!.transcriptionId) };
    }),
  );
}
