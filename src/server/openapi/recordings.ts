// The recording downloads (src/server/routes/recordings.ts, docs/recordings.md).
import { API } from '../context.js';
import type { Endpoint } from './endpoint.js';

const AUDIO = ['audio/flac'] as const;
const RANGES =
  'Byte ranges are served (`Range: bytes=a-b`, 206 with Content-Range; 416 past the end), so a player seeks. Recorded in the audit trail.';

export const RECORDING_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: `${API}/stt/transcriptions/{transcriptionId}/audio`,
    operationId: 'getRecording',
    tag: 'History and batch',
    auth: 'accessKey',
    summary: 'Download the recording of a row made with recordAudio: FLAC, redacted spans masked by a tone (not enveloped)',
    description: `Stored when the session closes or the job ends (409 before). ${RANGES}`,
    response: { kind: 'raw', contentTypes: AUDIO, description: 'the recording (FLAC, mono, the input rate)' },
    errors: ['NOT_FOUND', 'TRANSCRIPTION_IN_PROGRESS'],
  },
  {
    method: 'get',
    path: `${API}/stt/calls/{callId}/audio`,
    operationId: 'getCallRecording',
    tag: 'Calls',
    auth: 'accessKey',
    summary: "A leg's recording, or both legs as stereo (agent left, customer right), from the call's time 0 (not enveloped)",
    description: `leg=stereo needs a call of exactly two legs, each recorded. ${RANGES}`,
    query: { leg: { schema: { type: 'string', default: 'stereo' }, description: 'a speaker of the call, or stereo' } },
    response: { kind: 'raw', contentTypes: AUDIO, description: 'the recording (FLAC)' },
    errors: ['VALIDATION_FAILED', 'NOT_FOUND', 'TRANSCRIPTION_IN_PROGRESS'],
  },
];
