// Webhook endpoints and their deliveries (docs/webhooks.md, routes/webhooks.ts): the request and
// response shapes, declared once. The URL is checked in code after the shape (webhookUrl,
// src/core/webhook-endpoints.ts): one too long answers WEBHOOK_URL_TOO_LONG, a host the
// outbound policy closes WEBHOOK_URL_FORBIDDEN, and whether it parses is the URL parser's call;
// the document states the URL's form for clients.
import { Type, type Static } from 'typebox';
import { ID_BODY_CHARS } from '../../core/ids.js';
import type { OutboundPolicy } from '../../core/outbound-policy.js';
import {
  MAX_DESCRIPTION_CHARS,
  MAX_WEBHOOK_URL_CHARS,
  webhookUrl,
  type EndpointInput,
  type EndpointPatch,
} from '../../core/webhook-endpoints.js';
import { WEBHOOK_EVENT_TYPES } from '../../core/webhook-events.js';
import { API } from '../context.js';
import { documented, envelope, fieldNamed, invalid, operation, PATH_PARAM, unknownKey, type RouteTable } from '../openapi/route-schema.js';

const BASE = `${API}/webhooks`;
const TAG = 'Webhooks';
const TIMESTAMP = Type.String({ description: 'ISO 8601 UTC time' });
const ENDPOINT_ID = Type.String({ pattern: `^whe_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$`, description: 'a webhook endpoint id' });
const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T, options: Record<string, unknown> = {}) =>
  Type.Union([t, Type.Null()], options);

const EVENTS_MESSAGE =
  'a non-empty list of transcription.completed, transcription.failed, call.completed, session.paused, session.expired, alert.triggered';
const FIELDS = {
  url: Type.String({
    description: `http(s) URL of at most ${MAX_WEBHOOK_URL_CHARS} characters (longer: 422 WEBHOOK_URL_TOO_LONG); its host must be a destination the outbound policy allows`,
    ...invalid('an http(s) URL'),
    ...documented({ pattern: '^https?://([a-z0-9-]+\\.)+[a-z]{2,}(:[1-9][0-9]{0,3})?(/[^\\s#]*)?$' }),
  }),
  events: Type.Array(Type.Enum([...WEBHOOK_EVENT_TYPES], { ...invalid(EVENTS_MESSAGE), ...fieldNamed('events') }), {
    minItems: 1,
    description: 'the events this endpoint receives',
    ...invalid(EVENTS_MESSAGE),
  }),
  description: nullable(
    Type.String({ maxLength: MAX_DESCRIPTION_CHARS }),
    invalid(`a string of at most ${MAX_DESCRIPTION_CHARS} characters`),
  ),
  includeTranscript: Type.Boolean({ default: false, ...invalid('true or false') }),
};
const BODY = { additionalProperties: false, ...invalid('the body must be a JSON object'), ...fieldNamed(false) } as const;

export const CREATE_ENDPOINT_BODY = Type.Object(
  {
    url: FIELDS.url,
    events: FIELDS.events,
    description: Type.Optional(FIELDS.description),
    includeTranscript: Type.Optional(FIELDS.includeTranscript),
  },
  { ...BODY, ...unknownKey({ enabled: 'set it with PATCH', default: 'unknown field' }) },
);
export const PATCH_ENDPOINT_BODY = Type.Object(
  {
    url: Type.Optional(FIELDS.url),
    events: Type.Optional(FIELDS.events),
    description: Type.Optional(FIELDS.description),
    includeTranscript: Type.Optional(Type.Boolean(invalid('true or false'))),
    enabled: Type.Optional(Type.Boolean({ description: 'true also clears disabledReason', ...invalid('true or false') })),
  },
  BODY,
);

const ENDPOINT_FIELDS = {
  id: ENDPOINT_ID,
  url: Type.String(),
  description: nullable(Type.String()),
  events: Type.Array(Type.Enum([...WEBHOOK_EVENT_TYPES]), { description: 'the events this endpoint receives' }),
  includeTranscript: Type.Boolean(),
  enabled: Type.Boolean(),
  disabledReason: nullable(Type.String(), { description: 'why the service disabled it (410, a day of failures) or the account did' }),
  previousSecretExpiresAt: nullable(TIMESTAMP, { description: 'after a rotation, until when the old secret also signs' }),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
};
const ENDPOINT_VIEW = Type.Object(ENDPOINT_FIELDS);
const ENDPOINT_WITH_SECRET = Type.Object({
  ...ENDPOINT_FIELDS,
  secret: Type.String({ pattern: '^whsec_[A-Za-z0-9+/]+=*$', description: 'the signing secret; shown only here' }),
});

const DELIVERY_VIEW = Type.Object({
  id: Type.String({ pattern: '^msg_', description: 'the webhook-id header of every attempt' }),
  endpointId: ENDPOINT_ID,
  eventType: Type.Enum([...WEBHOOK_EVENT_TYPES]),
  status: Type.Enum(['PENDING', 'DELIVERED', 'FAILED']),
  attempts: Type.Integer({ minimum: 0 }),
  lastStatusCode: nullable(Type.Integer()),
  lastError: nullable(Type.String()),
  lastResponse: nullable(Type.String(), { description: "the first 256 bytes of the receiver's last answer" }),
  nextAttemptAt: nullable(TIMESTAMP),
  createdAt: TIMESTAMP,
  deliveredAt: nullable(TIMESTAMP),
  attemptLog: Type.Array(
    Type.Object({
      attempt: Type.Integer({ minimum: 1 }),
      at: TIMESTAMP,
      durationMs: Type.Integer({ minimum: 0 }),
      statusCode: nullable(Type.Integer()),
      error: nullable(Type.String()),
    }),
  ),
});

const ID = Type.Object({ id: PATH_PARAM });
const op = (o: Omit<Parameters<typeof operation>[0], 'tag' | 'auth'>) => operation({ ...o, tag: TAG, auth: 'accessKey' });

export const WEBHOOK_ROUTES = {
  create: {
    method: 'POST',
    url: `${BASE}/endpoints`,
    schema: {
      ...op({
        operationId: 'createWebhookEndpoint',
        summary: 'Register a webhook endpoint; the answer is the only one that shows its secret',
        description: 'Deliveries are signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature). docs/webhooks.md.',
        errors: ['WEBHOOK_URL_TOO_LONG', 'WEBHOOK_URL_FORBIDDEN', 'WEBHOOK_ENDPOINT_LIMIT'],
      }),
      body: CREATE_ENDPOINT_BODY,
      response: { 201: envelope(ENDPOINT_WITH_SECRET, 'the endpoint, created') },
    },
  },
  list: {
    method: 'GET',
    url: `${BASE}/endpoints`,
    schema: {
      ...op({ operationId: 'listWebhookEndpoints', summary: "The account's webhook endpoints, oldest first (no secrets)", errors: [] }),
      response: { 200: envelope(Type.Object({ endpoints: Type.Array(ENDPOINT_VIEW) }), 'every endpoint') },
    },
  },
  get: {
    method: 'GET',
    url: `${BASE}/endpoints/:id`,
    schema: {
      ...op({ operationId: 'getWebhookEndpoint', summary: 'Read a webhook endpoint', errors: ['NOT_FOUND'] }),
      params: ID,
      response: { 200: envelope(ENDPOINT_VIEW, 'the endpoint') },
    },
  },
  update: {
    method: 'PATCH',
    url: `${BASE}/endpoints/:id`,
    schema: {
      ...op({
        operationId: 'updateWebhookEndpoint',
        summary: 'Change a webhook endpoint; enabled: true re-enables a disabled one',
        errors: ['WEBHOOK_URL_TOO_LONG', 'WEBHOOK_URL_FORBIDDEN', 'NOT_FOUND'],
      }),
      params: ID,
      body: PATCH_ENDPOINT_BODY,
      response: { 200: envelope(ENDPOINT_VIEW, 'the endpoint, changed') },
    },
  },
  delete: {
    method: 'DELETE',
    url: `${BASE}/endpoints/:id`,
    schema: {
      ...op({
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint with its deliveries (pending ones are not sent)',
        errors: ['NOT_FOUND'],
      }),
      params: ID,
      response: { 200: envelope(Type.Object({ id: ENDPOINT_ID, deleted: Type.Literal(true) }), 'deleted') },
    },
  },
  rotateSecret: {
    method: 'POST',
    url: `${BASE}/endpoints/:id/rotate-secret`,
    schema: {
      ...op({
        operationId: 'rotateWebhookSecret',
        summary: 'A new secret; the old one keeps signing alongside for 24 hours',
        errors: ['NOT_FOUND'],
      }),
      params: ID,
      response: { 200: envelope(ENDPOINT_WITH_SECRET, 'the endpoint with its new secret') },
    },
  },
  deliveries: {
    method: 'GET',
    url: `${BASE}/endpoints/:id/deliveries`,
    schema: {
      ...op({
        operationId: 'listWebhookDeliveries',
        summary: "The endpoint's last 100 deliveries, newest first, each with its attempts",
        errors: ['NOT_FOUND'],
      }),
      params: ID,
      response: { 200: envelope(Type.Object({ deliveries: Type.Array(DELIVERY_VIEW) }), 'the delivery log') },
    },
  },
  retry: {
    method: 'POST',
    url: `${BASE}/deliveries/:id/retry`,
    schema: {
      ...op({
        operationId: 'retryWebhookDelivery',
        summary: 'Send a delivery again now, with the same webhook-id, on a fresh retry schedule',
        errors: ['NOT_FOUND'],
      }),
      params: ID,
      response: { 200: envelope(DELIVERY_VIEW, 'the delivery, pending') },
    },
  },
} as const satisfies RouteTable['routes'];

export const WEBHOOK_TABLE: RouteTable = { routes: WEBHOOK_ROUTES };

/** A new endpoint from a create body (its shape checked by the schema): the URL checked and
 * normalised, events without repeats. */
export function endpointFromBody(body: Static<typeof CREATE_ENDPOINT_BODY>, policy: OutboundPolicy): EndpointInput {
  return {
    url: webhookUrl(body.url, policy),
    events: [...new Set(body.events)],
    description: body.description ?? null,
    includeTranscript: body.includeTranscript ?? false,
  };
}

export function endpointChange(body: Static<typeof PATCH_ENDPOINT_BODY>, policy: OutboundPolicy): EndpointPatch {
  const patch: EndpointPatch = {};
  if (body.url !== undefined) patch.url = webhookUrl(body.url, policy);
  if (body.events !== undefined) patch.events = [...new Set(body.events)];
  if (body.description !== undefined) patch.description = body.description;
  if (body.includeTranscript !== undefined) patch.includeTranscript = body.includeTranscript;
  if (body.enabled !== undefined) patch.enabled = body.enabled;
  return patch;
}
