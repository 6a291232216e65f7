// Full-text search (routes/search.ts, docs/search.md): the query string and the page of hits,
// declared once. The schema checks each parameter's form with the parser's own words; what it
// cannot say is left to parseSearchRequest (src/core/search-query.ts), which the handler calls
// first: the query's syntax (exclusions, OR, phrase and term counts), whether a time is a real
// date, and a cursor this search issued.
import { Type, type TSchema } from 'typebox';
import { MAX_EXTERNAL_ID_CHARS, SPEAKER_PATTERN } from '../../core/calls.js';
import { FIGURE_NAMES, MAX_FIGURE_FILTER } from '../../core/analytics/search-filters.js';
import {
  DEFAULT_SEARCH_PAGE_SIZE,
  MAX_SEARCH_PAGE_SIZE,
  MAX_SEARCH_QUERY_CHARS,
  MAX_SEARCH_TERMS,
  MAX_SEARCH_TITLE_CHARS,
  SEARCH_TIME_PATTERN,
} from '../../core/search-query.js';
import { API } from '../context.js';
import { documented, emptyAbsent, envelope, invalid, operation, type RouteTable } from '../openapi/route-schema.js';
import { CALL_ID, idPattern, nullable, prefixed } from './shared.js';

/** A time as the parsers take it: an ISO 8601 date and time (the date checked in code); the
 * document states the full form. */
const isoTime = (message: string, description: string) =>
  Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T', description, ...invalid(message), ...documented({ pattern: SEARCH_TIME_PATTERN }) });

/** `externalId` and `agentId`: the PBX's or the contact center's own id (checkExternalId). */
export const externalIdParam = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: MAX_EXTERNAL_ID_CHARS,
    pattern: '^[^\\u0000-\\u001f\\u007f]*$',
    description,
    ...invalid({
      type: 'must be a string',
      minLength: `must be 1 to ${MAX_EXTERNAL_ID_CHARS} characters`,
      maxLength: `must be 1 to ${MAX_EXTERNAL_ID_CHARS} characters`,
      default: 'must not contain control characters',
    }),
  });

/** The post-call analytics filters search takes (docs/analytics.md), as parseAnalyticsFilters words them. */
export const ANALYTICS_FILTERS: Record<string, TSchema> = {
  category: Type.Optional(
    Type.String({
      pattern: idPattern('cat'),
      description: 'only calls (and lone transcriptions) that matched this post-call category',
      ...invalid('not a category id'),
    }),
  ),
  ...Object.fromEntries(
    FIGURE_NAMES.flatMap((figure) => {
      const unit = figure === 'interruptions' ? 'interruptions' : 'seconds';
      const bound = (description: string) =>
        Type.Optional(
          Type.Number({
            minimum: 0,
            maximum: MAX_FIGURE_FILTER,
            description,
            ...invalid(`a number from 0 to ${MAX_FIGURE_FILTER} (${figure === 'interruptions' ? 'a count' : 'seconds'})`),
          }),
        );
      return [
        [`${figure}Over`, bound(`only calls whose ${figure} figure is over this many ${unit} (docs/analytics.md)`)],
        [`${figure}Under`, bound(`only calls whose ${figure} figure is under this many ${unit}`)],
      ];
    }),
  ),
};

export const SEARCH_QUERY = Type.Object(
  {
    q: Type.String({
      minLength: 1,
      maxLength: MAX_SEARCH_QUERY_CHARS,
      description: `what to find: a word of letters or digits at least, at most ${MAX_SEARCH_TERMS} words or phrases`,
      ...invalid({ maxLength: `at most ${MAX_SEARCH_QUERY_CHARS} characters`, default: 'a search query is required' }),
      ...documented({ pattern: '[\\p{L}\\p{N}]' }),
    }),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_SEARCH_PAGE_SIZE,
        default: DEFAULT_SEARCH_PAGE_SIZE,
        description: 'hits per page',
        ...invalid(`must be an integer from 1 to ${MAX_SEARCH_PAGE_SIZE}`),
      }),
    ),
    from: Type.Optional(isoTime('must be an ISO 8601 time', 'only finals stored at or after this time')),
    to: Type.Optional(isoTime('must be an ISO 8601 time', 'only finals stored before this time')),
    callId: Type.Optional(Type.String({ pattern: idPattern('call'), description: "only this call's legs", ...invalid('not a call id') })),
    externalId: Type.Optional(externalIdParam('only the call with this PBX id')),
    speaker: Type.Optional(
      Type.String({ pattern: SPEAKER_PATTERN.source, description: 'only legs with this speaker label', ...invalid('not a speaker label') }),
    ),
    title: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_SEARCH_TITLE_CHARS,
        description: 'only History rows or calls with this title, exactly',
        ...invalid(`at most ${MAX_SEARCH_TITLE_CHARS} characters`),
      }),
    ),
    ...ANALYTICS_FILTERS,
    cursor: Type.Optional(
      Type.String({
        description: 'nextCursor of the previous page (with the same q and filters)',
        ...invalid('not a cursor returned by this search'),
      }),
    ),
  },
  emptyAbsent(),
);

const SEARCH_HIT = Type.Object({
  transcriptionId: prefixed('stt', 'the History row the segment is a final of'),
  segmentId: prefixed('seg', "the final's id, as in the transcript and on the socket"),
  callId: nullable(CALL_ID),
  speaker: nullable(Type.String({ description: "the leg's speaker; null outside a call" })),
  startMs: Type.Integer({ minimum: 0, description: 'where the segment starts in its recording' }),
  endMs: Type.Integer({ minimum: 0 }),
  text: Type.String(),
  highlights: Type.Array(Type.Object({ text: Type.String(), match: Type.Boolean() }), {
    description: 'the text in runs; the runs joined are the text, and match marks the runs the query found',
  }),
  createdAt: Type.String({
    pattern: SEARCH_TIME_PATTERN,
    description: 'when the final was stored; the order of hits (newest first) and what from and to compare',
  }),
});

export const SEARCH_ROUTES = {
  search: {
    method: 'GET',
    url: `${API}/stt/search`,
    schema: {
      ...operation({
        operationId: 'searchSegments',
        tag: 'Search',
        auth: 'accessKey',
        summary: "Full-text search over the account's final segments, newest first",
        description:
          'Web-search syntax: words (all must occur), "quoted phrases", OR between alternatives, -word or -"phrase" to exclude. Case-insensitive, whole words, no stemming; punctuation is ignored. An exclusion cannot be an OR alternative, and a query of exclusions only is refused. docs/search.md.',
        errors: [],
      }),
      querystring: SEARCH_QUERY,
      response: {
        200: envelope(Type.Object({ items: Type.Array(SEARCH_HIT), nextCursor: nullable(Type.String()) }), 'one page of hits'),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const SEARCH_TABLE: RouteTable = { routes: SEARCH_ROUTES };
