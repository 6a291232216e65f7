// Deepgram's `callback` on POST /v1/listen: the request is answered at once with its
// request_id, and when the batch job ends the body the synchronous request would have been
// answered with (response.ts; an error body `{err_code, err_msg, request_id}` when the job
// failed) is queued as a one-off delivery in the webhook outbox, which any node delivers at
// least once on the webhook retry schedule through the outbound policy (docs/webhooks.md,
// "Deepgram callbacks"). The delivery row is parked (not due) right after the jobs are queued,
// holding what rendering needs; every node sweeps parked rows and releases one, with the body,
// once its jobs ended (the release is conditional, so one node wins). A node that dies loses no
// callback: any node's sweep finds the row.
import type { Logger } from 'pino';
import { openedBy, type OutboundPolicy } from '../../../core/outbound-policy.js';
import type { AppContext } from '../../context.js';
import type { BatchJobRecord } from '../../../store/store.js';
import { isParkedWebhook, renderWebhook } from '../assemblyai/webhook.js';
import { DeepgramError } from './errors.js';
import { listenResponse, type ListenMeta } from './response.js';

const SWEEP_MS = 250;
const SWEEP_BATCH = 100;
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
    refuse(
      `${url.hostname} (${verdict.class}) is not a destination this server may call (loopback, private, link-local or metadata addresses, unless the operator allows them: docs/security.md); ${openedBy(verdict.class, url.hostname)}`,
    );
  }
  return url.toString();
}

/** What the sweep reads: the store and the clock. */
type SweepParts = Pick<AppContext, 'store' | 'now'>;

const ended = (j: BatchJobRecord | null) => j === null || j.state === 'DONE' || j.state === 'FAILED';

/** What a parked callback row holds until its jobs end. */
interface ParkedPayload {
  transcriptionIds: string[];
  render: Omit<ListenMeta, 'created'>;
}

export function parkedPayload(transcriptionIds: readonly string[], render: Omit<ListenMeta, 'created'>): string {
  return JSON.stringify({ transcriptionIds: [...transcriptionIds], render } satisfies ParkedPayload);
}

/** The body for a callback whose jobs all ended, or null while one runs. */
async function renderWhenEnded(ctx: SweepParts, accountId: string, p: ParkedPayload): Promise<{ body: string; failed: boolean } | null> {
  const jobs = await Promise.all(p.transcriptionIds.map((id) => ctx.store.getBatchJob(id)));
  if (!jobs.every(ended)) return null;
  const failed = jobs.find((j) => j === null || j.state === 'FAILED');
  if (failed !== undefined) {
    const reason = failed?.error ?? 'the job is gone';
    return {
      body: JSON.stringify(
        new DeepgramError(500, 'INTERNAL_SERVER_ERROR', `the transcription failed: ${reason}; nothing was charged`).body(
          p.render.requestId,
        ),
      ),
      failed: true,
    };
  }
  const done = await Promise.all(
    jobs.map(async (job) => {
      const row = await ctx.store.getTranscription(job!.transcriptionId, accountId);
      if (row === null) throw new Error(`History row ${job!.transcriptionId} is missing`);
      return { row, segments: await ctx.store.listSegments(job!.transcriptionId) };
    }),
  );
  const body = listenResponse(
    done.map((d) => ({
      meta: {
        transcriptionId: d.row.id,
        title: d.row.title,
        status: d.row.status,
        sampleRateHz: d.row.sampleRateHz,
        audioSamples: d.row.audioSamples,
      },
      segments: d.segments,
    })),
    { ...p.render, created: new Date(done[0]!.row.createdAt).toISOString() },
  );
  return { body: JSON.stringify(body), failed: false };
}

/** Every node runs one: releases parked callbacks whose jobs ended. */
export class CallbackSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly ctx: SweepParts,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.nudge(), SWEEP_MS);
    this.timer.unref();
  }

  nudge(): void {
    if (this.running || this.timer === null) return;
    this.running = this.sweep()
      .catch((err: unknown) => this.log.warn({ err }, 'Deepgram callback sweep failed; retrying at the next sweep'))
      .finally(() => {
        this.running = null;
      });
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private async sweep(): Promise<void> {
    for (const parked of await this.ctx.store.listParkedCallbacks(SWEEP_BATCH)) {
      if (this.timer === null) return;
      const parsed = JSON.parse(parked.payload) as unknown;
      // AssemblyAI's webhooks are parked in the same outbox (../assemblyai/webhook.ts).
      const rendered = isParkedWebhook(parsed)
        ? await renderWebhook(this.ctx.store, parsed)
        : await renderWhenEnded(this.ctx, parked.accountId, parsed as ParkedPayload);
      const p = isParkedWebhook(parsed)
        ? { render: { requestId: parsed.transcriptId }, transcriptionIds: parsed.transcriptionIds }
        : (parsed as ParkedPayload);
      if (rendered === null) continue;
      const released = await this.ctx.store.releaseCallbackDelivery(
        parked.id,
        rendered.body,
        rendered.failed ? 'transcription.failed' : 'transcription.completed',
        this.ctx.now(),
      );
      if (released)
        this.log.info({ deliveryId: parked.id, requestId: p.render.requestId, transcriptionIds: p.transcriptionIds }, 'callback due');
    }
  }
}
