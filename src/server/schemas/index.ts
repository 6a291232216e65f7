// Every resource's declared routes (one table a resource, in this folder): the API document is
// generated from this list (src/server/openapi/document.ts). A new resource adds its table here.
import type { RouteTable } from '../openapi/route-schema.js';
import { ACCOUNT_TABLE } from './account.js';
import { BATCH_TABLE } from './batch.js';
import { INTERPRETATION_TABLE } from './interpretation.js';
import { MUSIC_TABLE } from './music.js';
import { ANALYTICS_TABLE } from './analytics.js';
import { CALL_TABLE } from './calls.js';
import { CATEGORY_TABLE } from './categories.js';
import { DESK_TABLE } from './desk.js';
import { RECORDING_TABLE } from './recordings.js';
import { RULE_TABLE } from './rules.js';
import { SEARCH_TABLE } from './search.js';
import { SESSION_TABLE } from './sessions.js';
import { SOCKET_TABLE } from './sockets.js';
import { PAGE_TABLE } from './pages.js';
import { SERVICE_TABLE } from './service.js';
import { USER_GROUP_TABLE } from './user-groups.js';
import { VOICE_DESIGN_TABLE } from './voice-design.js';
import { VOICE_TABLE } from './voices.js';
import { TRANSCRIPTION_TABLE } from './transcriptions.js';
import { WEBHOOK_TABLE } from './webhooks.js';
import { ASSEMBLYAI_TABLE } from '../facades/assemblyai/schemas.js';
import { ASSEMBLYAI_STREAMING_TABLE } from '../facades/assemblyai/streaming/schemas.js';
import { AUDIOHOOK_TABLE } from './audiohook.js';
import { DEEPGRAM_LIVE_TABLE, DEEPGRAM_TABLE } from './deepgram.js';
import { OPENAI_REALTIME_TABLE, OPENAI_TABLE } from './openai.js';

export const DECLARED_ROUTES: readonly RouteTable[] = [
  SERVICE_TABLE,
  ACCOUNT_TABLE,
  RULE_TABLE,
  WEBHOOK_TABLE,
  USER_GROUP_TABLE,
  MUSIC_TABLE,
  INTERPRETATION_TABLE,
  VOICE_DESIGN_TABLE,
  VOICE_TABLE,
  BATCH_TABLE,
  TRANSCRIPTION_TABLE,
  RECORDING_TABLE,
  SEARCH_TABLE,
  CATEGORY_TABLE,
  ANALYTICS_TABLE,
  CALL_TABLE,
  DESK_TABLE,
  SESSION_TABLE,
  SOCKET_TABLE,
  PAGE_TABLE,
  OPENAI_TABLE,
  DEEPGRAM_TABLE,
  DEEPGRAM_LIVE_TABLE,
  OPENAI_REALTIME_TABLE,
  AUDIOHOOK_TABLE,
  ASSEMBLYAI_TABLE,
  ASSEMBLYAI_STREAMING_TABLE,
];
