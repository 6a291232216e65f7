// The webhook endpoints (src/server/routes/webhooks.ts, docs/webhooks.md) in the API document,
// from the limits src/core/webhook-endpoints.ts validates with; spread into ENDPOINTS.
import { ID_BODY_CHARS } from '../../core/ids.js';
import { WEBHOOK_EVENT_TYPES } from '../../core/webhook-events.js';
import { MAX_DESCRIPTION_CHARS, MAX_WEBHOOK_URL_CHARS } from '../../core/webhook-endpoints.js';
import { API } from '../context.js';
import type { Endpoint } from './endpoint.js';
import { nullable, object, text, type JsonSchema } from './json-schema.js';

const BASE = `${API}/webhooks`;
const STRING: JsonSchema = { type: 'string' };
const TIMESTAMP: JsonSchema = { type: 'string', description: 'ISO 8601 UTC time' };
const ENDPOINT_ID: JsonSchema = { type: 'string', pattern: `^whe_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$`, description: 'a webhook endpoint id' };
const URL_FIELD: JsonSchema = {
  type: 'string',
  pattern: '^https?://([a-z0-9-]+\\.)+[a-z]{2,}(:[1-9][0-9]{0,3})?(/[^\\s#]*)?$',
  description: `http(s) URL of at most ${MAX_WEBHOOK_URL_CHARS} characters (longer: 422 WEBHOOK_URL_TOO_LONG); its host must be a destination the outbound policy allows`,
};
const EVENTS: JsonSchema = { type: 'array', minItems: 1, items: { enum: [...WEBHOOK_EVENT_TYPES] }, description: 'the events this endpoint receives' };
const DESCRIPTION = nullable(text(0, MAX_DESCRIPTION_CHARS));

const CREATE_BODY: JsonSchema = object({ url: URL_FIELD, events: EVENTS, description: DESCRIPTION, includeTranscript: { type: 'boolean', default: false } }, ['url', 'events'], {
  closed: true,
});
const PATCH_BODY: JsonSchema = object(
  { url: URL_FIELD, events: EVENTS, description: DESCRIPTION, includeTranscript: { type: 'boolean' }, enabled: { type: 'boolean', description: 'true also clears disabledReason' } },
  [],
  { closed: true },
);

const ENDPOINT_FIELDS: Record<string, JsonSchema> = {
  id: ENDPOINT_ID,
  url: STRING,
  description: nullable(STRING),
  events: EVENTS,
  includeTranscript: { type: 'boolean' },
  enabled: { type: 'boolean' },
  disabledReason: nullable({ type: 'string', description: 'why the service disabled it (410, a day of failures) or the account did' }),
  previousSecretExpiresAt: nullable({ ...TIMESTAMP, description: 'after a rotation, until when the old secret also signs' }),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
};
const ENDPOINT_REQUIRED = Object.keys(ENDPOINT_FIELDS);
const ENDPOINT_VIEW: JsonSchema = object(ENDPOINT_FIELDS, ENDPOINT_REQUIRED);
const ENDPOINT_WITH_SECRET: JsonSchema = object(
  { ...ENDPOINT_FIELDS, secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]+=*$', description: 'the signing secret; shown only here' } },
  [...ENDPOINT_REQUIRED, 'secret'],
);

const DELIVERY_VIEW: JsonSchema = object(
  {
    id: { type: 'string', pattern: '^msg_', description: 'the webhook-id header of every attempt' },
    endpointId: ENDPOINT_ID,
    eventType: { enum: [...WEBHOOK_EVENT_TYPES] },
    status: { enum: ['PENDING', 'DELIVERED', 'FAILED'] },
    attempts: { type: 'integer', minimum: 0 },
    lastStatusCode: nullable({ type: 'integer' }),
    lastError: nullable(STRING),
    lastResponse: nullable({ type: 'string', description: "the first 256 bytes of the receiver's last answer" }),
    nextAttemptAt: nullable(TIMESTAMP),
    createdAt: TIMESTAMP,
    deliveredAt: nullable(TIMESTAMP),
    attemptLog: {
      type: 'array',
      items: object(
        { attempt: { type: 'integer', minimum: 1 }, at: TIMESTAMP, durationMs: { type: 'integer', minimum: 0 }, statusCode: nullable({ type: 'integer' }), error: nullable(STRING) },
        ['attempt', 'at', 'durationMs', 'statusCode', 'error'],
      ),
    },
  },
  ['id', 'endpointId', 'eventType', 'status', 'attempts', 'lastStatusCode', 'lastError', 'lastResponse', 'nextAttemptAt', 'createdAt', 'deliveredAt', 'attemptLog'],
);

const json = (schema: JsonSchema) => ({ contentType: 'application/json' as const, schema: () => schema, required: true });

export const WEBHOOK_ENDPOINTS: readonly Endpoint[] = [
  {
    method: 'post', path: `${BASE}/endpoints`, operationId: 'createWebhookEndpoint', tag: 'Webhooks', auth: 'accessKey',
    summary: 'Register a webhook endpoint; the answer is the only one that shows its secret',
    description: 'Deliveries are signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature). docs/webhooks.md.',
    body: json(CREATE_BODY),
    response: { kind: 'envelope', data: ENDPOINT_WITH_SECRET, description: 'the endpoint, created', status: 201 },
    errors: ['VALIDATION_FAILED', 'WEBHOOK_URL_TOO_LONG', 'WEBHOOK_URL_FORBIDDEN', 'WEBHOOK_ENDPOINT_LIMIT'],
  },
  {
    method: 'get', path: `${BASE}/endpoints`, operationId: 'listWebhookEndpoints', tag: 'Webhooks', auth: 'accessKey',
    summary: "The account's webhook endpoints, oldest first (no secrets)",
    response: { kind: 'envelope', data: object({ endpoints: { type: 'array', items: ENDPOINT_VIEW } }, ['endpoints']), description: 'every endpoint' },
    errors: [],
  },
  {
    method: 'get', path: `${BASE}/endpoints/{id}`, operationId: 'getWebhookEndpoint', tag: 'Webhooks', auth: 'accessKey',
    summary: 'Read a webhook endpoint',
    response: { kind: 'envelope', data: ENDPOINT_VIEW, description: 'the endpoint' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'patch', path: `${BASE}/endpoints/{id}`, operationId: 'updateWebhookEndpoint', tag: 'Webhooks', auth: 'accessKey',
    summary: 'Change a webhook endpoint; enabled: true re-enables a disabled one',
    body: json(PATCH_BODY),
    response: { kind: 'envelope', data: ENDPOINT_VIEW, description: 'the endpoint, changed' },
    errors: ['VALIDATION_FAILED', 'WEBHOOK_URL_TOO_LONG', 'WEBHOOK_URL_FORBIDDEN', 'NOT_FOUND'],
  },
  {
    method: 'delete', path: `${BASE}/endpoints/{id}`, operationId: 'deleteWebhookEndpoint', tag: 'Webhooks', auth: 'accessKey',
    summary: 'Delete a webhook endpoint with its deliveries (pending ones are not sent)',
    response: { kind: 'envelope', data: object({ id: ENDPOINT_ID, deleted: { const: true } }, ['id', 'deleted']), description: 'deleted' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'post', path: `${BASE}/endpoints/{id}/rotate-secret`, operationId: 'rotateWebhookSecret', tag: 'Webhooks', auth: 'accessKey',
    summary: 'A new secret; the old one keeps signing alongside for 24 hours',
    response: { kind: 'envelope', data: ENDPOINT_WITH_SECRET, description: 'the endpoint with its new secret' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'get', path: `${BASE}/endpoints/{id}/deliveries`, operationId: 'listWebhookDeliveries', tag: 'Webhooks', auth: 'accessKey',
    summary: "The endpoint's last 100 deliveries, newest first, each with its attempts",
    response: { kind: 'envelope', data: object({ deliveries: { type: 'array', items: DELIVERY_VIEW } }, ['deliveries']), description: 'the delivery log' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'post', path: `${BASE}/deliveries/{id}/retry`, operationId: 'retryWebhookDelivery', tag: 'Webhooks', auth: 'accessKey',
    summary: 'Send a delivery again now, with the same webhook-id, on a fresh retry schedule',
    response: { kind: 'envelope', data: DELIVERY_VIEW, description: 'the delivery, pending' },
    errors: ['NOT_FOUND'],
  },
];
