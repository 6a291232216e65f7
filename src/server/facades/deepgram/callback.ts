// Deepgram's `callback` on POST /v1/listen: the request is answered at once with its
// request_id, and when the batch job ends the body the synchronous request would have been
// answered with (response.ts; an error body `{err_code, err_msg, request_id}` when the job
// failed) is queued as a one-off delivery in the webhook outbox, which any node delivers at
// least once on the webhook retry schedule through the outbound policy (docs/webhooks.md,
// "Deepgram callbacks"). The node that took the request watches its jobs in the store and
// queues the delivery when they end; a node stopped before that loses the callback (the job
// itself runs and stays in History).
import type { FastifyBaseLogger } from 'fastify';
import type { OutboundPolicy } from '../../../core/outbound-policy.js';
import type { AppContext } from '../../context.js';
import type { BatchJobRecord } from '../../../store/store.js';
import { DeepgramError } from './errors.js';
import { listenResponse, type ListenMeta } from './response.js';

const POLL_MS = 250;
const MAX_CALLBACK_URL_CHARS = 2048;

/** The callback URL, refused (400, nothing charged) when it is not http(s) or names a host the
 * outbound policy closes; names that resolve are checked again at every connection. */
export function callbackUrl(raw: string, policy: OutboundPolicy): string {
  const refuse = (why: string): never => {
    throw new DeepgramError(400, 'INVALID_QUERY_PARAMETER', `callback: ${why}`);
  };
  if (raw.length > MAX_CALLBACK_URL_CHARS) refuse(`at most ${MAX_CALLBACK_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') refuse('an http(s) URL');
  const verdict = policy.checkHost(url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname);
  if (verdict && !verdict.allowed) {
    refuse(`${url.hostname} (${verdict.class}) is not a destination this server may call (loopback, private, link-local or metadata addresses, unless the operator allows them: docs/security.md)`);
  }
  return url.toString();
}

const ended = (j: BatchJobRecord | null) => j === null || j.state === 'DONE' || j.state === 'FAILED';

/**
 * Watch the jobs until every one ended (no bound: the caller is not waiting), then queue the
 * callback. Stops quietly when `stopped` is aborted (the server closing).
 */
export async function deliverWhenDone(
  ctx: AppContext,
  accountId: string,
  ids: readonly string[],
  url: string,
  render: Omit<ListenMeta, 'created'>,
  stopped: AbortSignal,
  log: FastifyBaseLogger,
): Promise<void> {
  let jobs = await Promise.all(ids.map((id) => ctx.store.getBatchJob(id)));
  while (!jobs.every(ended)) {
    if (stopped.aborted) return;
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (stopped.aborted) return;
    jobs = await Promise.all(ids.map((id) => ctx.store.getBatchJob(id)));
  }
  const failed = jobs.find((j) => j === null || j.state === 'FAILED');
  let payload: string;
  if (failed !== undefined) {
    const reason = failed?.error ?? 'the job is gone';
    payload = JSON.stringify(new DeepgramError(500, 'INTERNAL_SERVER_ERROR', `the transcription failed: ${reason}; nothing was charged`).body(render.requestId));
  } else {
    const done = await Promise.all(
      jobs.map(async (job) => {
        const row = await ctx.store.getTranscription(job!.transcriptionId, accountId);
        if (row === null) throw new Error(`History row ${job!.transcriptionId} is missing`);
        return { row, segments: await ctx.store.listSegments(job!.transcriptionId) };
      }),
    );
    const body = listenResponse(
      done.map((d) => ({
        meta: { transcriptionId: d.row.id, title: d.row.title, status: d.row.status, sampleRateHz: d.row.sampleRateHz, audioSamples: d.row.audioSamples },
        segments: d.segments,
      })),
      { ...render, created: new Date(done[0]!.row.createdAt).toISOString() },
    );
    payload = JSON.stringify(body);
  }
  const deliveryId = await ctx.store.enqueueCallbackDelivery({
    accountId,
    url,
    payload,
    eventType: failed === undefined ? 'transcription.completed' : 'transcription.failed',
    now: ctx.now(),
  });
  log.info({ deliveryId, requestId: render.requestId, transcriptionIds: ids }, 'Deepgram callback queued');
}
