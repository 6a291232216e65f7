// Webhook endpoints as the API takes them (docs/webhooks.md): validation of a create or update
// body, the limits, and the secret's format. Pure; the outbound policy decides hosts.
import { createHmac } from 'node:crypto';
import { ScribedError } from './errors.js';
import { isWebhookEventType, type WebhookEventType } from './webhook-events.js';
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
  if (v.length > MAX_WEBHOOK_URL_CHARS) throw new ScribedError('WEBHOOK_URL_TOO_LONG', `url: at most ${MAX_WEBHOOK_URL_CHARS} characters`, { details: { field: 'url' } });
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
    throw new ScribedError('WEBHOOK_URL_FORBIDDEN', `url: ${url.hostname} (${verdict.class}) is not a destination webhooks may reach on this server; ${openedBy(verdict.class, url.hostname)}`, { details: { field: 'url' } });
  }
  return url.toString();
}

function events(v: unknown): WebhookEventType[] {
  if (!Array.isArray(v) || v.length === 0 || !v.every(isWebhookEventType)) {
    throw field('a non-empty list of transcription.completed, transcription.failed, call.completed, session.paused, alert.triggered', 'events');
  }
  return [...new Set(v)];
}

function description(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || [...v].length > MAX_DESCRIPTION_CHARS) throw field(`a string of at most ${MAX_DESCRIPTION_CHARS} characters`, 'description');
  return v;
}

function flag(v: unknown, name: string): boolean {
  if (typeof v !== 'boolean') throw field('true or false', name);
  return v;
}

function body(v: unknown): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ScribedError('VALIDATION_FAILED', 'the body must be a JSON object');
  const known = new Set(['url', 'events', 'description', 'includeTranscript', 'enabled']);
  const extra = Object.keys(v).find((k) => !known.has(k));
  if (extra !== undefined) throw field('unknown field', extra);
  return v as Record<string, unknown>;
}

export function validateCreateEndpoint(v: unknown, policy: OutboundPolicy): EndpointInput {
  const b = body(v);
  if (b.enabled !== undefined) throw field('set it with PATCH', 'enabled');
  return {
    url: webhookUrl(b.url, policy),
    events: events(b.events),
    description: description(b.description),
    includeTranscript: b.includeTranscript === undefined ? false : flag(b.includeTranscript, 'includeTranscript'),
  };
}

export interface EndpointPatch {
  url?: string;
  events?: WebhookEventType[];
  description?: string | null;
  includeTranscript?: boolean;
  enabled?: boolean;
}

export function validatePatchEndpoint(v: unknown, policy: OutboundPolicy): EndpointPatch {
  const b = body(v);
  const patch: EndpointPatch = {};
  if (b.url !== undefined) patch.url = webhookUrl(b.url, policy);
  if (b.events !== undefined) patch.events = events(b.events);
  if (b.description !== undefined) patch.description = description(b.description);
  if (b.includeTranscript !== undefined) patch.includeTranscript = flag(b.includeTranscript, 'includeTranscript');
  if (b.enabled !== undefined) patch.enabled = flag(b.enabled, 'enabled');
  return patch;
}
