// Webhook endpoints as the API takes them (docs/webhooks.md): the limits, a URL's check, and the
// secret's format; the bodies' shape is their schema (src/server/schemas/webhooks.ts). Pure;
// the outbound policy decides hosts.
import { createHmac } from 'node:crypto';
import { ScribedError } from './errors.js';
import type { WebhookEventType } from './webhook-events.js';
import { openedBy, type OutboundPolicy } from './outbound-policy.js';

export const MAX_ENDPOINTS_PER_ACCOUNT = 20;
export const MAX_WEBHOOK_URL_CHARS = 2048;
export const MAX_DESCRIPTION_CHARS = 500;
/** Secret bytes (before base64): 24, as Standard Webhooks' reference libraries issue. */
export const SECRET_BYTES = 24;
/** How long a rotated-out secret keeps signing alongside the new one. */
export const SECRET_OVERLAP_MS = 24 * 3600_000;

/**
 * An endpoint's signing secret for one generation: `whsec_` and the base64 of 24 bytes of
 * HMAC-SHA256 under the server key. Derived, so it is never stored: the store keeps the
 * generation, which rotation raises.
 */
export function webhookSecret(serverKey: Buffer, endpointId: string, generation: number): string {
  const bytes = createHmac('sha256', serverKey).update(`webhook-endpoint:${endpointId}:${generation}`).digest().subarray(0, SECRET_BYTES);
  return `whsec_${bytes.toString('base64')}`;
}

export interface EndpointInput {
  url: string;
  events: WebhookEventType[];
  description: string | null;
  includeTranscript: boolean;
}

function field(message: string, name: string): ScribedError {
  return new ScribedError('VALIDATION_FAILED', `${name}: ${message}`, { details: { field: name } });
}

/** A URL an endpoint may have, normalised; refused hosts (literal addresses the policy closes,
 * loopback and metadata names) answer WEBHOOK_URL_FORBIDDEN here, resolved names are checked
 * at every connection. */
export function webhookUrl(v: unknown, policy: OutboundPolicy): string {
  if (typeof v !== 'string') throw field('an http(s) URL', 'url');
  if (v.length > MAX_WEBHOOK_URL_CHARS)
    throw new ScribedError('WEBHOOK_URL_TOO_LONG', `url: at most ${MAX_WEBHOOK_URL_CHARS} characters`, { details: { field: 'url' } });
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw field('an http(s) URL', 'url');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw field('an http(s) URL', 'url');
  if (url.username || url.password) throw field('credentials in the URL are not allowed', 'url');
  const verdict = policy.checkHost(url.hostname);
  if (verdict && !verdict.allowed) {
    throw new ScribedError(
      'WEBHOOK_URL_FORBIDDEN',
      `url: ${url.hostname} (${verdict.class}) is not a destination webhooks may reach on this server; ${openedBy(verdict.class, url.hostname)}`,
      { details: { field: 'url' } },
    );
  }
  return url.toString();
}

export interface EndpointPatch {
  url?: string;
  events?: WebhookEventType[];
  description?: string | null;
  includeTranscript?: boolean;
  enabled?: boolean;
}
