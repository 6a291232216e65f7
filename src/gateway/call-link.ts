// The one place the gateway ties legs into a call (the calls API: POST .../stt/calls). The
// call is created with an Idempotency-Key derived from the protocol and the PBX's own id
// (Twilio CallSid, AudioSocket call UUID, fork uuid), so both legs of a call, and a restarted
// gateway receiving the rest of it, land on the same call. A server without the calls API
// (404 for the route) gets its legs as plain sessions: the gateway still transcribes them.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { API_BASE } from '../core/protocol.js';
import { backoffDelay } from '../client/backoff.js';
import { describeFetchError } from '../client/session-streamer.js';

export interface CallLinkOptions {
  url: string;
  accessKey: string;
  logger: Logger;
  /** How long to keep trying while the server cannot be reached, ms. */
  connectTimeoutMs?: number;
}

/** 16-64 printable ASCII characters (the server's rule), stable for a call. */
export function callIdempotencyKey(protocol: string, externalId: string): string {
  return `call-${createHash('sha256').update(`${protocol}\n${externalId}`, 'utf8').digest('hex').slice(0, 40)}`;
}

export class CallLinker {
  private readonly calls = new Map<string, Promise<string | null>>();
  private unsupported = false;

  constructor(private readonly o: CallLinkOptions) {}

  /** The call id for this PBX call (created once per gateway run; idempotent on the server),
   * or null when the server has no calls API. Rejects when the server refuses it. */
  callFor(protocol: string, externalId: string, title: string, agentId?: string): Promise<string | null> {
    const key = `${protocol}\n${externalId}`;
    let p = this.calls.get(key);
    if (!p) {
      p = this.create(protocol, externalId, title, agentId);
      this.calls.set(key, p);
      // A failure is not remembered: the next leg asks again.
      p.catch(() => this.calls.delete(key));
    }
    return p;
  }

  /** Forget a call once all its legs ended (a long-running gateway keeps no state per call). */
  forget(protocol: string, externalId: string): void {
    this.calls.delete(`${protocol}\n${externalId}`);
  }

  private async create(protocol: string, externalId: string, title: string, agentId?: string): Promise<string | null> {
    if (this.unsupported) return null;
    const giveUpAt = Date.now() + (this.o.connectTimeoutMs ?? 30_000);
    for (let attempt = 0; ; attempt++) {
      let status = 0;
      let reason = '';
      try {
        const res = await fetch(`${this.o.url}${API_BASE}/stt/calls`, {
          method: 'POST',
          headers: {
            accessKey: this.o.accessKey,
            'content-type': 'application/json',
            'Idempotency-Key': callIdempotencyKey(protocol, externalId),
          },
          body: JSON.stringify({ title, externalId, ...(agentId === undefined ? {} : { agentId }) }),
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        const json = (await res.json().catch(() => ({}))) as { message?: string; data?: { callId?: unknown } };
        if ((status === 200 || status === 201) && typeof json.data?.callId === 'string') return json.data.callId;
        if (status === 404) {
          this.unsupported = true;
          this.o.logger.warn(
            'the server has no calls API (POST /stt/calls is 404): legs are streamed as sessions of their own, not linked into a call',
          );
          return null;
        }
        reason = `HTTP ${status} ${typeof json.message === 'string' ? json.message.slice(0, 200) : ''}`;
        if (status < 500 && status !== 429) throw new Error(`creating the call failed: ${reason}`);
      } catch (err) {
        if (status !== 0 && status < 500 && status !== 429) throw err;
        if (status === 0) {
          const failure = describeFetchError(err);
          if (!failure.network) throw new Error(`creating the call failed: ${failure.reason}`);
          reason = failure.reason;
        }
      }
      const delay = backoffDelay(attempt);
      if (Date.now() + delay > giveUpAt) throw new Error(`creating the call failed: ${reason}`);
      this.o.logger.warn({ reason, delayMs: delay }, 'creating the call failed; retrying');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
