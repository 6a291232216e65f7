// The service's own routes (routes/health.ts, routes/openapi.ts): the probes, the metrics and the
// API document, open to anyone; their answers are documents of their own, not the envelope.
import { Type } from 'typebox';
import { operation, type RouteTable } from '../openapi/route-schema.js';

const TAG = 'Service';
const open = (o: Omit<Parameters<typeof operation>[0], 'tag' | 'auth' | 'errors'>) =>
  operation({ ...o, tag: TAG, auth: 'none', errors: [] });
const ANY_OBJECT = (description?: string) => Type.Object({}, { additionalProperties: true, ...(description ? { description } : {}) });

const readyView = (description: string) =>
  Type.Object(
    {
      status: Type.Enum(['ready', 'not_ready', 'draining']),
      checks: Type.Object({ store: Type.Boolean(), engine: Type.Boolean(), capacity: Type.Optional(Type.Literal(false)) }),
      engine: ANY_OBJECT('the recognizer: name, sample rate, languages'),
      capacity: Type.Optional(ANY_OBJECT()),
      realtimeCapacity: Type.Optional(ANY_OBJECT('how maxDecoders was decided (docs/scaling.md)')),
    },
    { description },
  );

export const SERVICE_ROUTES = {
  health: {
    method: 'GET',
    url: '/healthz',
    schema: {
      ...open({ operationId: 'health', summary: 'Liveness: the process answers' }),
      response: { 200: Type.Object({ status: Type.Literal('ok') }, { description: 'always 200 while the process runs' }) },
    },
  },
  ready: {
    method: 'GET',
    url: '/readyz',
    schema: {
      ...open({
        operationId: 'ready',
        summary: 'Readiness for a load balancer: store open, engine started, a decoder free',
        description:
          'Answers 503 with the same body when not ready; checks.capacity is false when the node is healthy but full (docs/operations.md).',
      }),
      response: {
        200: readyView('ready'),
        503: readyView('not ready (status not_ready), or draining while the node drains before it stops: the same body'),
      },
    },
  },
  metrics: {
    method: 'GET',
    url: '/metrics',
    schema: {
      ...open({
        operationId: 'metrics',
        summary: 'Prometheus metrics (docs/operations.md)',
        description:
          'With a metrics token set, only to `Authorization: Bearer <token>`; without one, only to direct loopback requests (no proxy headers): else 401 (docs/security.md).',
      }),
      produces: ['text/plain'],
      response: { 200: Type.String({ description: 'Prometheus text exposition' }) },
    },
  },
  openapi: {
    method: 'GET',
    url: '/openapi.json',
    schema: {
      ...open({
        operationId: 'openapi',
        summary: 'This document, as this node serves it',
        description: "Describes the routes and their rules, never data; languageHint lists this node's recognizer languages.",
      }),
      response: {
        200: Type.Object(
          { openapi: Type.String({ pattern: '^3\\.1\\.' }), info: ANY_OBJECT(), paths: ANY_OBJECT() },
          { description: 'the OpenAPI 3.1 document' },
        ),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const SERVICE_TABLE: RouteTable = { routes: SERVICE_ROUTES };
