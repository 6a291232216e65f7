// Webhooks (areas/webhooks.ts, docs/webhooks.md): endpoints, the delivery outbox and its log.
import type { WebhookEventType } from '../../core/webhook-events.js';

export interface WebhookEndpointRecord {
  id: string;
  accountId: string;
  url: string;
  description: string | null;
  events: WebhookEventType[];
  includeTranscript: boolean;
  /** Which secret signs: the secret itself is derived from a server key and this number
   * (core/webhook-endpoints.ts webhookSecret), never stored. Rotation adds one. */
  secretGeneration: number;
  /** After a rotation, until when the previous generation's secret also signs. */
  previousUntil: string | null;
  enabled: boolean;
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}

export type WebhookDeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

export interface WebhookAttemptRecord {
  attempt: number;
  node: string;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

export interface WebhookDeliveryRecord {
  /** The webhook-id header of every attempt. */
  id: string;
  endpointId: string;
  accountId: string;
  eventType: WebhookEventType;
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  /** Attempts made before the current schedule began (a manual retry starts a new one). */
  scheduleBase: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastResponse: string | null;
  createdAt: string;
  updatedAt: string;
  deliveredAt: string | null;
  /** A Deepgram callback's own destination (its endpoint is the account's hidden callback
   * endpoint); null for a delivery to a webhook endpoint. */
  callbackUrl: string | null;
  log: WebhookAttemptRecord[];
}

export interface ClaimedWebhookDelivery {
  delivery: WebhookDeliveryRecord;
  endpoint: WebhookEndpointRecord;
}

export interface CreateWebhookEndpointInput {
  id: string;
  accountId: string;
  url: string;
  description: string | null;
  events: WebhookEventType[];
  includeTranscript: boolean;
  createdAt: string;
}

export interface WebhookEndpointPatch {
  url?: string;
  events?: WebhookEventType[];
  description?: string | null;
  includeTranscript?: boolean;
  enabled?: boolean;
}

/** What one attempt ended in, written while the claim holds. */
export interface WebhookAttemptOutcome {
  deliveryId: string;
  node: string;
  attempt: WebhookAttemptRecord;
  /** PENDING with nextAttemptAt (a retry), DELIVERED or FAILED. */
  status: WebhookDeliveryStatus;
  nextAttemptAt: string | null;
  response: string | null;
  /** Disable the endpoint, with this reason (410, or failing for about a day). */
  disableEndpoint: string | null;
  /** Reset (success) or start (first failure) the endpoint's failing_since. */
  endpointSucceeded: boolean;
}

export interface WebhookStore {
  /** null when the account already has `maxPerAccount` endpoints. */
  createWebhookEndpoint(input: CreateWebhookEndpointInput, maxPerAccount: number): Promise<WebhookEndpointRecord | null>;
  listWebhookEndpoints(accountId: string): Promise<WebhookEndpointRecord[]>;
  /** Another account's endpoint reads as null. */
  getWebhookEndpoint(endpointId: string, accountId: string): Promise<WebhookEndpointRecord | null>;
  /** Enabling clears the disabled reason and the failure run. */
  updateWebhookEndpoint(
    endpointId: string,
    accountId: string,
    patch: WebhookEndpointPatch,
    now: Date,
  ): Promise<WebhookEndpointRecord | null>;
  /** The next secret generation; the current one keeps signing until `previousUntil`. */
  rotateWebhookSecret(endpointId: string, accountId: string, previousUntil: string, now: Date): Promise<WebhookEndpointRecord | null>;
  /** The endpoint, its deliveries and their log. */
  deleteWebhookEndpoint(endpointId: string, accountId: string): Promise<boolean>;
  /** Newest first. */
  listWebhookDeliveries(endpointId: string, accountId: string, limit: number): Promise<WebhookDeliveryRecord[]>;
  /** A finished delivery goes back to PENDING, due now, on a new schedule. */
  retryWebhookDelivery(deliveryId: string, accountId: string, now: Date): Promise<WebhookDeliveryRecord | null>;
  /** The oldest due delivery of an enabled endpoint holding fewer than `perEndpoint` live
   * claims, that no live node holds; claimed for `leaseMs`. */
  claimWebhookDelivery(node: string, leaseMs: number, now: Date, perEndpoint: number): Promise<ClaimedWebhookDelivery | null>;
  /** Record an attempt; false when this node no longer holds the claim (nothing written). */
  finishWebhookAttempt(outcome: WebhookAttemptOutcome): Promise<boolean>;
  /** Forget every claim but `node`'s (the embedded store at start-up). */
  clearOtherWebhookClaims(node: string): Promise<number>;
  /** Delete up to `limit` finished (delivered or failed) deliveries last changed before
   * `before`, with their attempts; answers how many. */
  pruneWebhookDeliveries(before: string, limit: number): Promise<number>;
  /** Pending deliveries and the oldest one's creation time. */
  webhookOutboxStats(): Promise<{ depth: number; oldestCreatedAt: string | null }>;
  /** Park a one-off delivery to `url` (Deepgram's `callback`) on the account's hidden callback
   * endpoint (created on first use): not due (next_attempt_at null, never claimed, not counted
   * in the stats) until released; `payload` is what the releaser needs. Answers its id. */
  parkCallbackDelivery(input: CallbackDeliveryInput): Promise<string>;
  /** Parked callback deliveries, oldest first. */
  listParkedCallbacks(limit: number): Promise<ParkedCallback[]>;
  /** Make a parked delivery due now with the body sent; false when it is not parked (another
   * node released it). */
  releaseCallbackDelivery(id: string, payload: string, eventType: WebhookEventType, now: Date): Promise<boolean>;
}

export interface ParkedCallback {
  id: string;
  accountId: string;
  payload: string;
}

export interface CallbackDeliveryInput {
  accountId: string;
  url: string;
  /** What the releaser needs (the body sent replaces it at release). */
  payload: string;
  now: Date;
}
