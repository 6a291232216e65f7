// Recording downloads (routes/recordings.ts, docs/recordings.md): the shapes, declared once.
// The answer is the FLAC file itself, not the envelope.
import { Type } from 'typebox';
import { API } from '../context.js';
import { invalid, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';

const RANGES =
  'Byte ranges are served (`Range: bytes=a-b`, 206 with Content-Range; 416 past the end), so a player seeks. Recorded in the audit trail.';
const FLAC = ['audio/flac'];

export const RECORDING_ROUTES = {
  transcription: {
    method: 'GET',
    url: `${API}/stt/transcriptions/:transcriptionId/audio`,
    schema: {
      ...operation({
        operationId: 'getRecording',
        tag: 'History and batch',
        auth: 'accessKey',
        summary: 'Download the recording of a row made with recordAudio: FLAC, redacted spans masked by a tone (not enveloped)',
        description: `Stored when the session closes or the job ends (409 before). ${RANGES}`,
        errors: ['NOT_FOUND', 'TRANSCRIPTION_IN_PROGRESS'],
      }),
      params: Type.Object({ transcriptionId: PATH_PARAM }),
      produces: FLAC,
      response: { 200: Type.String({ description: 'the recording (FLAC, mono, the input rate)' }) },
    },
  },
  call: {
    method: 'GET',
    url: `${API}/stt/calls/:callId/audio`,
    schema: {
      ...operation({
        operationId: 'getCallRecording',
        tag: 'Calls',
        auth: 'accessKey',
        summary: "A leg's recording, or both legs as stereo (agent left, customer right), from the call's time 0 (not enveloped)",
        description: `leg=stereo needs a call of exactly two legs, each recorded. ${RANGES}`,
        errors: ['NOT_FOUND', 'TRANSCRIPTION_IN_PROGRESS'],
      }),
      params: Type.Object({ callId: PATH_PARAM }),
      querystring: Type.Object({
        leg: Type.Optional(
          Type.String({
            default: 'stereo',
            description: 'a speaker of the call, or stereo',
            ...invalid('must be a speaker of the call or stereo'),
          }),
        ),
      }),
      produces: FLAC,
      response: { 200: Type.String({ description: 'the recording (FLAC)' }) },
    },
  },
} as const satisfies RouteTable['routes'];

export const RECORDING_TABLE: RouteTable = { routes: RECORDING_ROUTES };
