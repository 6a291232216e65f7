// The voice library (routes/voices.ts, docs/api.md): the request and response shapes, declared
// once. Uploads are multipart/form-data read as a stream (each file staged under its size limit
// as it arrives, the part count capped at the voice's room), so their body schemas are stated
// for the document only (servedWithout): the route's part reader checks them as the parts come,
// with today's answers. So is the list's modelId, whose refusal names the model asked for.
import { Type } from 'typebox';
import { KNOWN_MODEL_IDS, MAX_FILE_BYTES, MAX_FILES_PER_VOICE, MAX_VOICE_NAME_CODE_POINTS } from '../../core/voices.js';
import { API } from '../context.js';
import { envelope, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';
import { VOICE_ID_VIEW } from './voice-design.js';

const BASE = `${API}/voices`;
const TAG = 'Voices';
const MULTIPART = ['multipart/form-data'];

const VOICE_ITEM = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.String(),
  feature: Type.String(),
  channel: Type.String(),
  fileCount: Type.Integer(),
  totalFileSize: Type.Integer(),
});

const RECORDINGS = Type.Array(Type.String({ contentMediaType: 'application/octet-stream' }), {
  minItems: 1,
  maxItems: MAX_FILES_PER_VOICE,
  description: `mp3, wav or m4a (checked by content), each at most ${MAX_FILE_BYTES} bytes; a voice holds at most ${MAX_FILES_PER_VOICE}`,
});
const VOICE_NAME = Type.String({ minLength: 1, maxLength: MAX_VOICE_NAME_CODE_POINTS, pattern: '\\S' });

const op = (info: Omit<Parameters<typeof operation>[0], 'tag' | 'auth'>) => operation({ ...info, tag: TAG, auth: 'accessKey' });

export const VOICE_ROUTES = {
  list: {
    method: 'GET',
    url: BASE,
    schema: {
      ...op({ operationId: 'listVoices', summary: "The caller's voices and the prebuilt ones", errors: ['VALIDATION_FAILED'] }),
      querystring: Type.Object({
        modelId: Type.Optional(Type.Enum([...KNOWN_MODEL_IDS], { description: 'only the voices this model can take' })),
      }),
      response: { 200: envelope(Type.Array(VOICE_ITEM), 'the voices') },
    },
  },
  create: {
    method: 'POST',
    url: `${BASE}/tts`,
    schema: {
      ...op({
        operationId: 'createVoice',
        summary: 'Create a cloned text-to-speech voice from recordings',
        errors: ['VALIDATION_FAILED', 'VOICE_FILE_LIMIT', 'UNSUPPORTED_AUDIO'],
      }),
      consumes: MULTIPART,
      body: Type.Object({ name: VOICE_NAME, files: RECORDINGS }, { additionalProperties: false }),
      response: { 200: envelope(VOICE_ID_VIEW, 'the new voice') },
    },
  },
  improve: {
    method: 'PUT',
    url: `${BASE}/tts/:voiceId`,
    schema: {
      ...op({
        operationId: 'improveVoice',
        summary: 'Add recordings to a custom voice',
        errors: ['VALIDATION_FAILED', 'VOICE_PREBUILT', 'NOT_FOUND', 'VOICE_FILE_LIMIT', 'UNSUPPORTED_AUDIO'],
      }),
      params: Type.Object({ voiceId: PATH_PARAM }),
      consumes: MULTIPART,
      body: Type.Object({ files: RECORDINGS }, { additionalProperties: false }),
      response: {
        200: envelope(
          Type.Object({ id: Type.String({ pattern: '^vc_' }), fileCount: Type.Integer(), totalFileSize: Type.Integer() }),
          'the voice after the upload',
        ),
      },
    },
  },
  delete: {
    method: 'DELETE',
    url: `${BASE}/:id`,
    schema: {
      ...op({ operationId: 'deleteVoice', summary: 'Delete a custom voice and its recordings', errors: ['VOICE_PREBUILT', 'NOT_FOUND'] }),
      params: Type.Object({ id: PATH_PARAM }),
      response: { 200: envelope(Type.Null(), 'deleted') },
    },
  },
} as const satisfies RouteTable['routes'];

export const VOICE_TABLE: RouteTable = { routes: VOICE_ROUTES };
