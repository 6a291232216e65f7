// The webhook delivery worker (docs/webhooks.md): every node runs one. It claims due rows of
// the outbox with a lease (store: claimWebhookDelivery), signs each with Standard Webhooks
// (the `standardwebhooks` package), sends it through the guarded transport (the operator's
// outbound policy, checked in the connection's own DNS lookup) and records the attempt while
// its claim holds. A node that dies mid-attempt leaves the row to any node once the lease
// runs out: at least once, with the row's id as the webhook-id of every attempt.
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import {
  failingLongEnough,
  judgeAttempt,
  MAX_ATTEMPTS,
  RESPONSE_SNIPPET_BYTES,
  retryDelayMs,
  type AttemptResult,
  type AttemptVerdict,
} from '../core/webhook-delivery.js';
import type { ClaimedWebhookDelivery, Store, WebhookDeliveryStatus } from '../store/store.js';
import { DestinationRefused, outboundFailure, type GuardedTransport } from '../outbound/guarded-transport.js';

const PRUNE_BATCH = 500;

export interface WebhookWorkerOptions {
  store: Store;
  /** The secret of an endpoint's generation (core/webhook-endpoints.ts webhookSecret). */
  secretOf: (endpointId: string, generation: number) => string;
  transport: GuardedTransport;
  log: Logger;
  node: string;
  now: () => Date;
  retryBaseMs: number;
  /** How long a claim holds; longer than the attempt timeout. */
  leaseMs: number;
  timeoutMs: number;
  /** Deliveries in flight to one endpoint, across all nodes. */
  perEndpoint: number;
  /** Deliveries in flight on this node. */
  maxInFlight: number;
  pollMs: number;
  statsMs: number;
  /** Finished deliveries older than this are deleted (checked with each stats sample). */
  retentionMs: number;
  onAttempt?: (verdict: AttemptVerdict, seconds: number) => void;
  onStats?: (depth: number, oldestSeconds: number) => void;
}

/**
 * Where a Deepgram callback goes: unsigned, as Deepgram's are; credentials in the URL's
 * userinfo (Deepgram's way of authenticating a callback) become Basic authorization.
 */
export function callbackTarget(raw: string): { url: string; headers: Record<string, string> } {
  const url = new URL(raw);
  if (url.username === '' && url.password === '') return { url: raw, headers: {} };
  const basic = Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64');
  url.username = '';
  url.password = '';
  return { url: url.toString(), headers: { authorization: `Basic ${basic}` } };
}

/** A callback's stored body with headers of its own (AssemblyAI's webhook_auth_header_name
 * and value): the body and the headers, kept together in the delivery row until sent. */
const ENVELOPE_KEY = 'scribedCallbackEnvelope';

export function callbackEnvelope(body: string, headers: Record<string, string>): string {
  return JSON.stringify({ [ENVELOPE_KEY]: { headers, body } });
}

/** A callback's stored payload as the body sent and the headers it brings: an envelope's, or
 * the payload itself (a Deepgram body is never an object with only the envelope key). */
export function openCallbackPayload(payload: string): { body: string; headers: Record<string, string> } {
  try {
    const parsed = JSON.parse(payload) as Record<string, unknown>;
    const env = parsed?.[ENVELOPE_KEY] as { headers?: Record<string, string>; body?: string } | undefined;
    if (Object.keys(parsed).length === 1 && typeof env?.body === 'string') return { body: env.body, headers: env.headers ?? {} };
  } catch {
    // not JSON: sent as stored
  }
  return { body: payload, headers: {} };
}

export class WebhookWorker {
  private inFlight = 0;
  private closed = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private statsTimer: NodeJS.Timeout | null = null;
  private filling = false;
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly o: WebhookWorkerOptions) {}

  start(): void {
    this.pollTimer = setInterval(() => this.fill(), this.o.pollMs);
    this.pollTimer.unref();
    this.statsTimer = setInterval(() => void this.sampleStats(), this.o.statsMs);
    this.statsTimer.unref();
    this.fill();
    void this.sampleStats();
  }

  /** Look for due deliveries now (after an event this node raised, say). */
  nudge(): void {
    this.fill();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.statsTimer) clearInterval(this.statsTimer);
    await Promise.allSettled([...this.running]);
  }

  /** Claim due deliveries until this node's limit or none is due. */
  private fill(): void {
    if (this.filling || this.closed) return;
    this.filling = true;
    void (async () => {
      try {
        while (!this.closed && this.inFlight < this.o.maxInFlight) {
          const claim = await this.o.store.claimWebhookDelivery(this.o.node, this.o.leaseMs, this.o.now(), this.o.perEndpoint);
          if (!claim) break;
          this.inFlight++;
          const p = this.attempt(claim)
            .catch((err: unknown) => this.o.log.error({ err, deliveryId: claim.delivery.id }, 'webhook attempt could not be recorded'))
            .finally(() => {
              this.inFlight--;
              this.running.delete(p);
              this.fill();
            });
          this.running.add(p);
        }
      } catch (err) {
        if (!this.closed) this.o.log.warn({ err }, 'webhook claim failed; retrying at the next poll');
      } finally {
        this.filling = false;
      }
    })();
  }

  private async sampleStats(): Promise<void> {
    try {
      // Bounded batches, so one sample never holds the database long; a backlog drains over samples.
      await this.o.store.pruneWebhookDeliveries(new Date(this.o.now().getTime() - this.o.retentionMs).toISOString(), PRUNE_BATCH);
      const s = await this.o.store.webhookOutboxStats();
      const oldest = s.oldestCreatedAt === null ? 0 : Math.max(0, (this.o.now().getTime() - Date.parse(s.oldestCreatedAt)) / 1000);
      this.o.onStats?.(s.depth, oldest);
    } catch {
      // the store is closing or unreachable: the next sample tells
    }
  }

  /** The body sent: the stored event, with the transcript's text when the endpoint asks; a
   * callback's stored body as is. */
  private async body(c: ClaimedWebhookDelivery): Promise<string> {
    const payload = c.delivery.payload;
    if (c.delivery.callbackUrl !== null) return openCallbackPayload(payload).body;
    if (!c.endpoint.includeTranscript || c.delivery.eventType !== 'transcription.completed') return payload;
    const event = JSON.parse(payload) as { data: { transcriptionId: string; transcript?: unknown } };
    const segments = await this.o.store.listSegments(event.data.transcriptionId);
    event.data.transcript = { text: segments.map((s) => s.text).join(' ') };
    return JSON.stringify(event);
  }

  /** The current secret's signature, and the previous generation's during a rotation's overlap. */
  private signatures(c: ClaimedWebhookDelivery, at: Date, body: string): string {
    const e = c.endpoint;
    const sign = (generation: number) => new Webhook(this.o.secretOf(e.id, generation)).sign(c.delivery.id, at, body);
    const sigs = [sign(e.secretGeneration)];
    if (e.secretGeneration > 1 && e.previousUntil && Date.parse(e.previousUntil) > at.getTime()) sigs.push(sign(e.secretGeneration - 1));
    return sigs.join(' ');
  }

  private async attempt(c: ClaimedWebhookDelivery): Promise<void> {
    const d = c.delivery;
    const attempt = d.attempts + 1;
    const inSchedule = attempt - d.scheduleBase;
    const started = this.o.now();
    const body = await this.body(c);
    let result: AttemptResult;
    let snippet: string | null = null;
    let failure: string | undefined;
    try {
      const target =
        d.callbackUrl === null
          ? { url: c.endpoint.url, headers: { 'webhook-signature': this.signatures(c, started, body) } }
          : (() => {
              const t = callbackTarget(d.callbackUrl);
              return { url: t.url, headers: { ...t.headers, ...openCallbackPayload(d.payload).headers } };
            })();
      const r = await this.o.transport.post(target.url, {
        headers: {
          'content-type': 'application/json',
          'user-agent': 'scribed-webhooks/1',
          'webhook-id': d.id,
          'webhook-timestamp': String(Math.floor(started.getTime() / 1000)),
          ...target.headers,
        },
        body,
        signal: AbortSignal.timeout(this.o.timeoutMs),
        snippetBytes: RESPONSE_SNIPPET_BYTES,
      });
      result = { kind: 'answered', status: r.status };
      snippet = r.snippet ?? null;
    } catch (err) {
      const e = err as Error;
      // What happened, for the server log only; the delivery log (the account's to read) gets
      // the fixed word of outboundFailure, so it maps no address, port or internal name.
      failure =
        err instanceof DestinationRefused ? e.message : `${(err as NodeJS.ErrnoException).code ?? e.name}: ${e.message}`.slice(0, 300);
      if (err instanceof DestinationRefused) result = { kind: 'refused', error: outboundFailure(err) };
      else if (e.name === 'TimeoutError' || e.name === 'AbortError') result = { kind: 'timeout' };
      else result = { kind: 'network', error: outboundFailure(err) };
    }
    const durationMs = Math.max(0, this.o.now().getTime() - started.getTime());
    const verdict = judgeAttempt(result, inSchedule);
    const error = result.kind === 'answered' ? null : result.kind === 'timeout' ? 'failed' : result.error;
    let status: WebhookDeliveryStatus = verdict === 'delivered' ? 'DELIVERED' : verdict === 'retry' ? 'PENDING' : 'FAILED';
    const next =
      verdict === 'retry'
        ? new Date(this.o.now().getTime() + retryDelayMs(inSchedule, this.o.retryBaseMs, Math.random())).toISOString()
        : null;
    let disable: string | null = null;
    // A callback's endpoint is the account's hidden holder of one-off URLs: never disabled.
    if (d.callbackUrl !== null) disable = null;
    else if (verdict === 'gone') disable = 'the endpoint answered 410 Gone';
    else if (verdict === 'failed' && inSchedule >= MAX_ATTEMPTS && failingLongEnough(c.endpoint.failingSince, d.createdAt)) {
      disable = `every attempt failed since ${c.endpoint.failingSince}; last: ${error ?? `HTTP ${result.kind === 'answered' ? result.status : ''}`}`;
    }
    if (verdict === 'gone') status = 'FAILED';
    const recorded = await this.o.store.finishWebhookAttempt({
      deliveryId: d.id,
      node: this.o.node,
      attempt: {
        attempt,
        node: this.o.node,
        startedAt: started.toISOString(),
        durationMs,
        statusCode: result.kind === 'answered' ? result.status : null,
        error,
      },
      status,
      nextAttemptAt: next,
      // The receiver's words stay in the server log (below): an internal service's error page
      // is not the account's to read.
      response: null,
      disableEndpoint: disable,
      endpointSucceeded: verdict === 'delivered',
    });
    this.o.onAttempt?.(verdict, durationMs / 1000);
    const fields = {
      deliveryId: d.id,
      endpointId: c.endpoint.id,
      eventType: d.eventType,
      attempt,
      verdict,
      statusCode: result.kind === 'answered' ? result.status : undefined,
      error,
      ...(failure === undefined ? {} : { failure }),
      ...(result.kind === 'timeout' ? { failure: `no answer within ${this.o.timeoutMs} ms` } : {}),
      ...(snippet === null || verdict === 'delivered' ? {} : { response: snippet }),
    };
    if (!recorded) this.o.log.warn(fields, 'webhook attempt made after this node lost its claim; another node owns the delivery');
    else if (disable) this.o.log.warn({ ...fields, reason: disable }, 'webhook endpoint disabled');
    else this.o.log.info(fields, 'webhook attempt');
  }
}
