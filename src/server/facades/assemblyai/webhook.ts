// AssemblyAI's `webhook_url`: when the transcript's jobs end, `{"transcript_id", "status"}`
// (status `completed` or `error`) is POSTed to the URL, with the client's
// webhook_auth_header_name/value header when given. The delivery is parked in the webhook
// outbox at create time, exactly as Deepgram's `callback` is (../deepgram/callback.ts: the
// sweep every node runs releases it once the jobs ended; the delivery worker sends it at least
// once on the webhook retry schedule, through the outbound policy, checked again on every
// address a name resolves to at each attempt). Unsigned, as AssemblyAI's webhooks are; the
// header is how a receiver authenticates them.
import { openedBy, type OutboundPolicy } from '../../../core/outbound-policy.js';
import type { BatchJobRecord, Store } from '../../../store/store.js';
import { callbackEnvelope } from '../../../webhooks/delivery-worker.js';
import { badRequest } from './errors.js';

export const PARKED_KIND = 'assemblyai';

/** What a parked AssemblyAI webhook row holds until its jobs end. */
export interface ParkedWebhook {
  kind: typeof PARKED_KIND;
  transcriptId: string;
  transcriptionIds: string[];
  header: { name: string; value: string } | null;
}

const MAX_URL_CHARS = 2048;

/** The webhook URL, refused (400, nothing charged) when it is not http(s) or names a host the
 * outbound policy closes; names that resolve are checked again at every attempt. */
export function webhookUrl(raw: string, policy: OutboundPolicy): string {
  const refuse = (why: string): never => {
    throw badRequest(`webhook_url: ${why}`);
  };
  if (raw.length > MAX_URL_CHARS) refuse(`at most ${MAX_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') refuse('an http(s) URL');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const verdict = policy.checkHost(host);
  if (verdict && !verdict.allowed) {
    refuse(
      `${url.hostname} (${verdict.class}) is not a destination this server may call (loopback, private, link-local or metadata addresses, unless the operator allows them: docs/security.md); ${openedBy(verdict.class, url.hostname)}`,
    );
  }
  return url.toString();
}

export function parkedWebhook(p: Omit<ParkedWebhook, 'kind'>): string {
  return JSON.stringify({ kind: PARKED_KIND, ...p } satisfies ParkedWebhook);
}

export function isParkedWebhook(p: unknown): p is ParkedWebhook {
  return typeof p === 'object' && p !== null && (p as { kind?: unknown }).kind === PARKED_KIND;
}

const ended = (j: BatchJobRecord | null) => j === null || j.state === 'DONE' || j.state === 'FAILED';

/** The delivery for a webhook whose jobs all ended, or null while one runs. */
export async function renderWebhook(
  store: Pick<Store, 'getBatchJob'>,
  p: ParkedWebhook,
): Promise<{ body: string; failed: boolean } | null> {
  const jobs = await Promise.all(p.transcriptionIds.map((id) => store.getBatchJob(id)));
  if (!jobs.every(ended)) return null;
  const failed = jobs.some((j) => j === null || j.state === 'FAILED');
  const body = JSON.stringify({ transcript_id: p.transcriptId, status: failed ? 'error' : 'completed' });
  return { body: p.header === null ? body : callbackEnvelope(body, { [p.header.name]: p.header.value }), failed };
}
