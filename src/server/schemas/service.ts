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
  drain: {
    method: 'POST',
    url: '/admin/drain',
    schema: {
      ...operation({
        operationId: 'drainNode',
        tag: TAG,
        auth: 'none',
        errors: ['UNAUTHORIZED'],
        summary: 'Drain this node, then stop it: what SIGTERM does (docs/operations.md, "Draining a node")',
        description:
          "Only to direct loopback requests (no proxy headers): the operator on the node's own host, as `scribed drain` does; else 401. " +
          'Answers 202 at once; a second request changes nothing (a second SIGTERM cuts a drain short, this does not).',
      }),
      response: {
        202: Type.Object(
          {
            status: Type.Enum(['draining', 'stopping'], {
              description:
                'draining: live calls move to other nodes first (shared store); stopping: no drain here (embedded store or a grace of 0), the node stops now',
            }),
            graceMs: Type.Integer({ description: 'the longest the drain keeps calls that have not moved (--drain-grace-ms)' }),
          },
          { description: 'the drain (or stop) has begun' },
        ),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const SERVICE_TABLE: RouteTable = { routes: SERVICE_ROUTES };
