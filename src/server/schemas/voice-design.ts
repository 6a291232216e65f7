// Voice design (routes/voice-design.ts, docs/api.md): the request and response shapes, declared
// once. Checked in code after the shape: the callback URL (it must parse as an http(s) URL
// without credentials, and a host the outbound policy closes is CALLBACK_URL_FORBIDDEN, as for
// webhooks) and a voice name's length, whose refusal names the length found.
import type { Readable } from 'node:stream';
import { Type, type TSchema } from 'typebox';
import { MAX_VOICE_NAME_CODE_POINTS } from '../../core/voices.js';
import { API } from '../context.js';
import { documented, envelope, fieldNamed, invalid, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';

export const MAX_DESCRIPTION_CODE_POINTS = 1000;
export const MAX_PREVIEW_TEXT_CODE_POINTS = 500;
export const MAX_CALLBACK_URL_CHARS = 2048;

const BASE = `${API}/voices/design`;
const TAG = 'Voices';
const TIMESTAMP = Type.String({ description: 'ISO 8601 UTC time' });
const id = (prefix: string) => Type.String({ pattern: `^${prefix}_` });
const nullable = <T extends TSchema>(t: T, options: Record<string, unknown> = {}) => Type.Union([t, Type.Null()], options);
const text = (max: number, description?: string) =>
  Type.String({
    pattern: '\\S',
    maxLength: max,
    ...(description ? { description } : {}),
    ...documented({ minLength: 1 }),
    ...invalid({ maxLength: `at most ${max} characters`, default: 'required' }),
  });

export const CREATE_DESIGN_BODY = Type.Object(
  {
    description: text(MAX_DESCRIPTION_CODE_POINTS, 'what the voice sounds like'),
    previewText: text(MAX_PREVIEW_TEXT_CODE_POINTS),
    callbackUrl: Type.Optional(
      nullable(Type.String(), {
        description:
          'http(s), no credentials; loopback, private and metadata destinations are refused (CALLBACK_URL_FORBIDDEN, docs/security.md)',
        ...invalid('an http(s) URL'),
        ...documented({ format: 'uri', maxLength: MAX_CALLBACK_URL_CHARS, pattern: '^[hH][tT][tT][pP][sS]?://' }),
      }),
    ),
  },
  { additionalProperties: false, ...invalid('body must be a JSON object'), ...fieldNamed(false) },
);

/** A voice name: present and not blank here; its length is checked by validateVoiceName
 * (src/core/voices.ts), whose refusal names the length found. */
export const VOICE_NAME = Type.String({
  pattern: '\\S',
  ...invalid('required'),
  ...documented({ minLength: 1, maxLength: MAX_VOICE_NAME_CODE_POINTS }),
});

export const SAVE_DESIGN_BODY = Type.Object(
  { name: VOICE_NAME, designId: Type.String({ minLength: 1, ...invalid('required') }) },
  { ...invalid('name: required'), ...fieldNamed(false) },
);

const DESIGN_CREATED_VIEW = Type.Object({
  designId: id('vd'),
  status: Type.String(),
  callbackSecret: nullable(Type.String({ description: 'verifies the callback signature' })),
});

const DESIGN_VIEW = Type.Object({
  designId: id('vd'),
  status: Type.String({ description: 'PENDING, COMPLETED or FAILED' }),
  description: Type.String(),
  previewText: Type.String(),
  parameters: Type.Optional(Type.Object({})),
  preview: nullable(Type.Object({ url: Type.String(), format: Type.Literal('wav'), fileSize: Type.Optional(nullable(Type.Integer())) })),
  error: Type.Optional(nullable(Type.String())),
  callback: nullable(
    Type.Object({
      url: Type.String(),
      state: Type.String(),
      attempts: Type.Integer(),
      nextAttemptAt: Type.Optional(nullable(TIMESTAMP)),
    }),
  ),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
});

export const VOICE_ID_VIEW = Type.Object({ id: id('vc') });
const DESIGN = Type.Object({ designId: PATH_PARAM });
const op = (info: Omit<Parameters<typeof operation>[0], 'tag' | 'auth'>) => operation({ ...info, tag: TAG, auth: 'accessKey' });

export const VOICE_DESIGN_ROUTES = {
  create: {
    method: 'POST',
    url: BASE,
    schema: {
      ...op({
        operationId: 'createDesign',
        summary: 'Design a voice from a description (synthesized in the background; optional signed callback)',
        errors: ['VALIDATION_FAILED', 'CALLBACK_URL_FORBIDDEN', 'VOICE_DESIGN_QUEUE_FULL'],
      }),
      body: CREATE_DESIGN_BODY,
      response: { 200: envelope(DESIGN_CREATED_VIEW, 'the design, PENDING') },
    },
  },
  save: {
    method: 'POST',
    url: `${BASE}/save`,
    schema: {
      ...op({
        operationId: 'saveDesign',
        summary: 'Save a completed design as a custom voice',
        errors: ['VALIDATION_FAILED', 'NOT_FOUND', 'VOICE_DESIGN_NOT_READY'],
      }),
      body: SAVE_DESIGN_BODY,
      response: { 200: envelope(VOICE_ID_VIEW, 'the new voice') },
    },
  },
  get: {
    method: 'GET',
    url: `${BASE}/:designId`,
    schema: {
      ...op({ operationId: 'getDesign', summary: 'Read a design and its callback delivery', errors: ['NOT_FOUND'] }),
      params: DESIGN,
      response: { 200: envelope(DESIGN_VIEW, 'the design') },
    },
  },
  preview: {
    method: 'GET',
    url: `${BASE}/:designId/preview`,
    schema: {
      ...op({
        operationId: 'getDesignPreview',
        summary: "A completed design's preview audio (not enveloped)",
        errors: ['NOT_FOUND', 'VOICE_DESIGN_NOT_READY'],
      }),
      params: DESIGN,
      produces: ['audio/wav'],
      // The audio is sent as bytes: the schema describes it, the handler's type is what it sends.
      response: { 200: Type.Unsafe<Buffer | Readable>({ type: 'string', contentMediaType: 'audio/wav', description: 'WAV audio' }) },
    },
  },
} as const satisfies RouteTable['routes'];

export const VOICE_DESIGN_TABLE: RouteTable = { routes: VOICE_DESIGN_ROUTES };
