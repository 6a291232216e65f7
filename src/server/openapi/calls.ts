// The create-session body's call fields and a session's leg fields in the hand-written API
// document (the calls routes declare theirs in src/server/schemas/calls.ts).
import { MAX_CALL_LEGS, SPEAKER_PATTERN } from '../../core/calls.js';
import { ID_BODY_CHARS } from '../../core/ids.js';
import { nullable, type JsonSchema } from './json-schema.js';

const CALL_ID: JsonSchema = {
  type: 'string',
  pattern: `^call_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$`,
  description: 'a call id (POST .../stt/calls)',
};
const SPEAKER: JsonSchema = {
  type: 'string',
  pattern: SPEAKER_PATTERN.source,
  description: "the leg's speaker label: agent, customer, inbound, outbound, a PBX channel name",
};

/** The create-session body's fields that make the session a leg of a call: both or neither. */
export const SESSION_CALL_FIELDS: Record<string, JsonSchema> = {
  callId: { ...CALL_ID, description: `join this call (another account's or unknown: NOT_FOUND); with speaker` },
  speaker: {
    ...SPEAKER,
    description: `the leg's speaker in the call, unique there (CALL_SPEAKER_TAKEN); with callId; at most ${MAX_CALL_LEGS} legs a call`,
  },
};
/** dependentRequired for SESSION_CALL_FIELDS. */
export const SESSION_CALL_DEPENDENCIES = { callId: ['speaker'], speaker: ['callId'] };

/** callId and speaker on a session and a History row: null outside any call. */
export const LEG_FIELDS: Record<string, JsonSchema> = { callId: nullable(CALL_ID), speaker: nullable(SPEAKER) };
