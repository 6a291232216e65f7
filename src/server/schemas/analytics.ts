// Conversation analytics (routes/analytics.ts, docs/analytics.md): the shapes, declared once.
// A range's times are checked in form here and as dates by parseRange
// (src/core/analytics/export.ts), which the handlers call first.
import { Type } from 'typebox';
import { SEARCH_TIME_PATTERN } from '../../core/search-query.js';
import { API } from '../context.js';
import { documented, emptyAbsent, envelope, invalid, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';
import { externalIdParam } from './search.js';
import { ANY_OBJECT, idOf, nullable, TIMESTAMP } from './shared.js';

const TAG = 'Analytics';
const CATEGORY_ID = idOf('cat', 'a category id');

const time = (description: string) =>
  Type.Optional(
    Type.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T',
      description,
      ...invalid('an ISO 8601 time'),
      ...documented({ pattern: SEARCH_TIME_PATTERN }),
    }),
  );
/** `to` first: parseRange reads it first, and from's default hangs on it. */
const RANGE = Type.Object(
  {
    to: time('finished before this time; default: now'),
    from: time('finished at or after this time; default: a week before to'),
  },
  emptyAbsent(),
);

const ANALYTICS_VIEW = Type.Object({
  subjectId: Type.String({ description: 'the call id, or the lone transcription id' }),
  callId: nullable(Type.String()),
  transcriptionId: nullable(Type.String()),
  agentId: nullable(Type.String()),
  completedAt: TIMESTAMP,
  figures: ANY_OBJECT('talk, non-talk, overtalk, interruptions, turns and per-leg figures with loudness (docs/analytics.md)'),
  categories: Type.Array(Type.Object({ categoryId: CATEGORY_ID, name: Type.String(), hits: Type.Array(ANY_OBJECT()) })),
  alerts: Type.Array(
    Type.Object({
      alertId: Type.String(),
      ruleId: Type.String(),
      ruleName: Type.String(),
      condition: Type.String({ description: 'phrases, pattern, entity, silence or talkOver' }),
      source: Type.Enum(['transcript', 'spotted'], { description: 'matched in the transcript, or spotted in the audio (phrase spotting)' }),
      transcriptionId: Type.String({ description: 'the leg it was raised on' }),
      speaker: nullable(Type.String()),
      startMs: Type.Integer({ minimum: 0, description: "on the leg's audio time line" }),
      endMs: Type.Integer({ minimum: 0 }),
      text: Type.String({ description: "what matched, or the segment's text" }),
      raisedAt: TIMESTAMP,
    }),
    { description: "the live rules' alerts raised during the call (or transcription), in time order (docs/rules.md)" },
  ),
});

const AGENT_VIEW = Type.Object({
  agentId: Type.String(),
  from: TIMESTAMP,
  to: TIMESTAMP,
  calls: Type.Integer({ minimum: 0 }),
  callsWithAgentLeg: Type.Integer({ minimum: 0 }),
  averageDurationMs: nullable(Type.Number()),
  averageTalkShare: nullable(Type.Number()),
  interruptionsMade: Type.Integer({ minimum: 0 }),
  interruptionsPerCall: nullable(Type.Number()),
  interruptionsReceived: Type.Integer({ minimum: 0 }),
  averageWordsPerMinute: nullable(Type.Number()),
  categories: Type.Array(Type.Object({ categoryId: CATEGORY_ID, name: Type.String(), calls: Type.Integer(), rate: Type.Number() })),
  items: Type.Array(
    Type.Object({
      callId: Type.String(),
      completedAt: TIMESTAMP,
      durationMs: Type.Integer({ minimum: 0 }),
      talkShare: nullable(Type.Number()),
      wordsPerMinute: nullable(Type.Number()),
      interruptionsMade: nullable(Type.Integer()),
      categories: Type.Array(Type.String()),
    }),
    { description: 'the calls, newest first; the agent leg figures are null where a call has no agent leg' },
  ),
});

export const ANALYTICS_ROUTES = {
  call: {
    method: 'GET',
    url: `${API}/stt/calls/:callId/analytics`,
    schema: {
      ...operation({
        operationId: 'getCallAnalytics',
        tag: TAG,
        auth: 'accessKey',
        summary: "A finished call's conversation figures and matched categories",
        description: 'Computed when the last leg ends; before that, 404 saying so.',
        errors: ['NOT_FOUND'],
      }),
      params: Type.Object({ callId: PATH_PARAM }),
      response: { 200: envelope(ANALYTICS_VIEW, 'the analytics') },
    },
  },
  transcription: {
    method: 'GET',
    url: `${API}/stt/transcriptions/:transcriptionId/analytics`,
    schema: {
      ...operation({
        operationId: 'getTranscriptionAnalytics',
        tag: TAG,
        auth: 'accessKey',
        summary: "A completed transcription's conversation figures (a leg of a call: its call's)",
        errors: ['NOT_FOUND'],
      }),
      params: Type.Object({ transcriptionId: PATH_PARAM }),
      response: { 200: envelope(ANALYTICS_VIEW, 'the analytics') },
    },
  },
  agent: {
    method: 'GET',
    url: `${API}/stt/agents/:agentId/analytics`,
    schema: {
      ...operation({
        operationId: 'getAgentAnalytics',
        tag: TAG,
        auth: 'accessKey',
        summary: "An agent's calls over a range: count, average talk share, interruptions, pace, category hit rates",
        description:
          "The calls created with this agentId and finished in [from, to); the agent's leg is the one whose speaker is agent. At most 10,000 calls.",
        errors: [],
      }),
      params: Type.Object({ agentId: externalIdParam("the agent's id, as calls were created with it") }),
      querystring: RANGE,
      response: { 200: envelope(AGENT_VIEW, "the agent's figures") },
    },
  },
  export: {
    method: 'GET',
    url: `${API}/stt/analytics/export`,
    schema: {
      ...operation({
        operationId: 'exportAnalytics',
        tag: TAG,
        auth: 'accessKey',
        summary: 'The analytics of calls and lone transcriptions finished in a range, as CSV',
        description: 'One row a call, oldest first; at most 10,000 rows (past that, 422 naming from: narrow the range).',
        errors: [],
      }),
      querystring: RANGE,
      produces: ['text/csv'],
      response: { 200: Type.String({ description: 'the CSV, as an attachment' }) },
    },
  },
} as const satisfies RouteTable['routes'];

export const ANALYTICS_TABLE: RouteTable = { routes: ANALYTICS_ROUTES };
