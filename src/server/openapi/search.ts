// The search endpoint (src/server/routes/search.ts, docs/search.md) in the API document: its
// query and hit schemas from the limits src/core/search-query.ts validates with, spread into
// ENDPOINTS (endpoints.ts).
import { MAX_EXTERNAL_ID_CHARS, SPEAKER_PATTERN } from '../../core/calls.js';
import { ID_BODY_CHARS } from '../../core/ids.js';
import {
  SEARCH_TIME_PATTERN,
  DEFAULT_SEARCH_PAGE_SIZE,
  MAX_SEARCH_PAGE_SIZE,
  MAX_SEARCH_QUERY_CHARS,
  MAX_SEARCH_TERMS,
  MAX_SEARCH_TITLE_CHARS,
} from '../../core/search-query.js';
import { API } from '../context.js';
import { ANALYTICS_SEARCH_FILTERS } from './analytics.js';
import type { Endpoint } from './endpoint.js';
import { nullable, object, text, type JsonSchema } from './json-schema.js';

const STRING: JsonSchema = { type: 'string' };
const TIMESTAMP: JsonSchema = { type: 'string', pattern: SEARCH_TIME_PATTERN, description: 'ISO 8601 time' };
const CALL_ID: JsonSchema = { type: 'string', pattern: `^call_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$` };

const SEARCH_HIT: JsonSchema = object(
  {
    transcriptionId: { type: 'string', pattern: '^stt_', description: 'the History row the segment is a final of' },
    segmentId: { type: 'string', pattern: '^seg_', description: "the final's id, as in the transcript and on the socket" },
    callId: nullable(CALL_ID),
    speaker: nullable({ type: 'string', description: "the leg's speaker; null outside a call" }),
    startMs: { type: 'integer', minimum: 0, description: 'where the segment starts in its recording' },
    endMs: { type: 'integer', minimum: 0 },
    text: STRING,
    highlights: {
      type: 'array',
      description: 'the text in runs; the runs joined are the text, and match marks the runs the query found',
      items: object({ text: STRING, match: { type: 'boolean' } }, ['text', 'match']),
    },
    createdAt: { ...TIMESTAMP, description: 'when the final was stored; the order of hits (newest first) and what from and to compare' },
  },
  ['transcriptionId', 'segmentId', 'callId', 'speaker', 'startMs', 'endMs', 'text', 'highlights', 'createdAt'],
);

const SEARCH_PAGE: JsonSchema = object({ items: { type: 'array', items: SEARCH_HIT }, nextCursor: nullable(STRING) }, [
  'items',
  'nextCursor',
]);

export const SEARCH_ENDPOINTS: readonly Endpoint[] = [
  {
    method: 'get',
    path: `${API}/stt/search`,
    operationId: 'searchSegments',
    tag: 'Search',
    auth: 'accessKey',
    summary: "Full-text search over the account's final segments, newest first",
    description:
      'Web-search syntax: words (all must occur), "quoted phrases", OR between alternatives, -word or -"phrase" to exclude. Case-insensitive, whole words, no stemming; punctuation is ignored. An exclusion cannot be an OR alternative, and a query of exclusions only is refused. docs/search.md.',
    query: {
      q: {
        schema: { ...text(1, MAX_SEARCH_QUERY_CHARS), pattern: '[\\p{L}\\p{N}]' },
        description: `what to find: a word of letters or digits at least, at most ${MAX_SEARCH_TERMS} words or phrases`,
        required: true,
      },
      from: { schema: TIMESTAMP, description: 'only finals stored at or after this time' },
      to: { schema: TIMESTAMP, description: 'only finals stored before this time' },
      callId: { schema: CALL_ID, description: "only this call's legs" },
      externalId: {
        schema: { ...text(1, MAX_EXTERNAL_ID_CHARS), pattern: '^[^\\u0000-\\u001f\\u007f]*$' },
        description: 'only the call with this PBX id',
      },
      speaker: { schema: { type: 'string', pattern: SPEAKER_PATTERN.source }, description: 'only legs with this speaker label' },
      title: { schema: text(1, MAX_SEARCH_TITLE_CHARS), description: 'only History rows or calls with this title, exactly' },
      limit: {
        schema: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_PAGE_SIZE, default: DEFAULT_SEARCH_PAGE_SIZE },
        description: 'hits per page',
      },
      cursor: { schema: STRING, description: 'nextCursor of the previous page (with the same q and filters)' },
      ...ANALYTICS_SEARCH_FILTERS,
    },
    response: { kind: 'envelope', data: SEARCH_PAGE, description: 'one page of hits' },
    errors: ['VALIDATION_FAILED'],
  },
];
