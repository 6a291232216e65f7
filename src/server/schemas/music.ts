// Music projects (routes/music.ts, docs/api.md): the request and response shapes, declared once.
// The brief is checked by validateBrief (src/core/music-brief.ts), not by Fastify: the same
// check re-reads a stored brief when a quote is priced, its refusals name the length found
// ("got 801"), and replacing a brief looks the project up before it reads the body (another
// account's project reads as missing whatever the body). Its schema is stated for the
// document (servedWithout), built from the same constants.
import { Type, type TSchema } from 'typebox';
import { BRIEF_FIELDS, CAPABILITIES, DURATIONS_SEC, LIMITS, LYRICS_MODES } from '../../core/music-brief.js';
import { API } from '../context.js';
import { envelope, fieldNamed, invalid, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';

const BASE = `${API}/music/projects`;
const TAG = 'Music';
const TIMESTAMP = Type.String({ description: 'ISO 8601 UTC time' });
const DECIMAL = Type.String({ pattern: '^[0-9]+$', description: 'a 64-bit count as a decimal string' });
const id = (prefix: string) => Type.String({ pattern: `^${prefix}_` });
const nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const text = (min: number, max: number, notBlank: boolean) =>
  Type.String({ ...(min > 0 ? { minLength: min } : {}), maxLength: max, ...(notBlank ? { pattern: '\\S' } : {}) });

const BRIEF_PROPERTIES = {
  description: text(LIMITS.description[0]!, LIMITS.description[1]!, true),
  genre: Type.Enum([...CAPABILITIES.genres]),
  styleNotes: Type.Optional(nullable(text(LIMITS.styleNotes[0]!, LIMITS.styleNotes[1]!, false))),
  moods: Type.Array(Type.Enum([...CAPABILITIES.moods]), { minItems: LIMITS.moods[0], maxItems: LIMITS.moods[1], uniqueItems: true }),
  vocalLanguage: Type.Enum(CAPABILITIES.supportedVocalLanguages.map((l) => l.code)),
  durationSec: Type.Enum([...DURATIONS_SEC]),
  lyricsMode: Type.Enum([...LYRICS_MODES]),
  customLyrics: Type.Optional(
    nullable(
      Type.String({
        maxLength: LIMITS.customLyrics[1],
        description: `with CUSTOM: required, ${LIMITS.customLyrics[0]} to ${LIMITS.customLyrics[1]} code points; with AUTO: absent, null or empty`,
      }),
    ),
  ),
  vocalStyle: Type.Enum([...CAPABILITIES.vocalStyles]),
} satisfies Record<(typeof BRIEF_FIELDS)[number], TSchema>;

export const BRIEF = Type.Object(BRIEF_PROPERTIES, {
  additionalProperties: false,
  description: 'the creative brief (GET /music/capabilities lists the values)',
  allOf: [
    {
      if: { properties: { lyricsMode: { const: 'CUSTOM' } } },
      then: { required: ['customLyrics'], properties: { customLyrics: text(LIMITS.customLyrics[0]!, LIMITS.customLyrics[1]!, true) } },
      else: { properties: { customLyrics: { enum: [null, ''] } } },
    },
  ],
});

const GENERATE_BODY = Type.Object(
  { quoteId: Type.String({ minLength: 1, description: "the project's active quote", ...invalid('required string') }) },
  { ...invalid('quoteId: required string'), ...fieldNamed(false) },
);

const CAPABILITIES_VIEW = Type.Object({
  genres: Type.Array(Type.String()),
  moods: Type.Array(Type.String()),
  supportedVocalLanguages: Type.Array(Type.Object({ code: Type.String(), name: Type.String() })),
  vocalStyles: Type.Array(Type.String()),
});

const QUOTE = {
  quoteId: id('mq'),
  characters: DECIMAL,
  arrangementVersion: Type.Integer(),
  expiresAt: TIMESTAMP,
  createdAt: Type.Optional(TIMESTAMP),
};

const PROJECT_VIEW = Type.Object({
  projectId: id('mup'),
  projectStatus: Type.String({ description: 'ARRANGEMENT_GENERATING, ARRANGEMENT_READY, ARRANGEMENT_FAILED or GENERATION_QUEUED' }),
  arrangementVersion: Type.Integer(),
  activeQuote: nullable(Type.Object(QUOTE)),
  requestId: id('req'),
  brief: Type.Object({}),
  arrangement: Type.Optional(nullable(Type.Object({}))),
  generation: Type.Optional(nullable(Type.Object({}))),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
});

const PROJECT = Type.Object({ projectId: PATH_PARAM });
const op = (info: Omit<Parameters<typeof operation>[0], 'tag' | 'auth'>) => operation({ ...info, tag: TAG, auth: 'accessKey' });

export const MUSIC_ROUTES = {
  capabilities: {
    method: 'GET',
    url: `${API}/music/capabilities`,
    schema: {
      ...op({ operationId: 'getMusicCapabilities', summary: 'The values a creative brief may use', errors: [] }),
      response: { 200: envelope(CAPABILITIES_VIEW, 'the catalog') },
    },
  },
  create: {
    method: 'POST',
    url: BASE,
    schema: {
      ...op({
        operationId: 'createMusicProject',
        summary: 'Create a music project from a brief (its arrangement is generated in the background)',
        errors: ['MUSIC_BRIEF_INVALID'],
        validationError: 'MUSIC_BRIEF_INVALID',
      }),
      body: BRIEF,
      response: { 200: envelope(PROJECT_VIEW, 'the project, ARRANGEMENT_GENERATING') },
    },
  },
  get: {
    method: 'GET',
    url: `${BASE}/:projectId`,
    schema: {
      ...op({ operationId: 'getMusicProject', summary: 'Read a music project', errors: ['MUSIC_PROJECT_NOT_FOUND'] }),
      params: PROJECT,
      response: { 200: envelope(PROJECT_VIEW, 'the project') },
    },
  },
  replaceBrief: {
    method: 'PUT',
    url: `${BASE}/:projectId/brief`,
    schema: {
      ...op({
        operationId: 'replaceBrief',
        summary: 'Replace the whole brief (the active quote becomes stale)',
        errors: ['MUSIC_BRIEF_INVALID', 'MUSIC_PROJECT_NOT_FOUND', 'MUSIC_PROJECT_BUSY'],
        validationError: 'MUSIC_BRIEF_INVALID',
      }),
      params: PROJECT,
      body: BRIEF,
      response: { 200: envelope(PROJECT_VIEW, 'the project, ARRANGEMENT_GENERATING, arrangementVersion + 1') },
    },
  },
  quote: {
    method: 'POST',
    url: `${BASE}/:projectId/quotes`,
    schema: {
      ...op({
        operationId: 'createQuote',
        summary: 'Quote the generation of the current arrangement',
        errors: ['MUSIC_PROJECT_NOT_FOUND', 'MUSIC_PROJECT_BUSY'],
      }),
      params: PROJECT,
      response: { 200: envelope(Type.Object({ ...QUOTE, projectId: id('mup') }), 'the active quote') },
    },
  },
  generate: {
    method: 'POST',
    url: `${BASE}/:projectId/generate`,
    schema: {
      ...op({
        operationId: 'generateMusic',
        summary: 'Start generation under the active quote (charges it)',
        errors: ['VALIDATION_FAILED', 'MUSIC_PROJECT_NOT_FOUND', 'MUSIC_PROJECT_BUSY', 'MUSIC_QUOTE_STALE', 'INSUFFICIENT_CHARACTERS'],
      }),
      params: PROJECT,
      body: GENERATE_BODY,
      response: { 200: envelope(PROJECT_VIEW, 'the project, GENERATION_QUEUED') },
    },
  },
} as const satisfies RouteTable['routes'];

export const MUSIC_TABLE: RouteTable = { routes: MUSIC_ROUTES };
