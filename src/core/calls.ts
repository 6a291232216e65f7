// Calls (docs/calls.md): a call groups legs, one per party or channel, each leg a
// History row (a real-time session's, or a batch job's) labelled with its speaker. Pure: the
// validation of the create-call body and of the two call fields a create-session body may
// carry, the call's status from its legs, and the merged transcript of all legs in the four
// download formats (src/core/transcript.ts does the rendering).
import { createHash } from 'node:crypto';
import { ScribedError } from './errors.js';
import { isId } from './ids.js';
import { canonicalJson, MAX_TITLE_CHARS } from './session-options.js';
import { toJson, toSrt, toVtt, formatTimestamp, type TranscriptMeta, type TranscriptSegment } from './transcript.js';

export const DEFAULT_CALL_TITLE = 'Untitled call';
export const MAX_EXTERNAL_ID_CHARS = 128;
/** A speaker label: `agent`, `customer`, `inbound`, a PBX's channel name. */
export const SPEAKER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;
/** Legs one call may hold: two parties, or a conference's channels; a bound so one call's
 * transcript stays one bounded read. */
export const MAX_CALL_LEGS = 16;
export const CREATE_CALL_KEYS = ['title', 'externalId', 'agentId'] as const;
/** The create-session body's fields that join the session to a call. */
export const SESSION_CALL_KEYS = ['callId', 'speaker'] as const;

export interface ValidCallRequest {
  title: string;
  externalId: string | null;
  /** The agent on the call (the contact center's own id), for the agent's analytics; absent
   * or null: none. */
  agentId?: string | null;
}

export interface CallLink {
  callId: string;
  speaker: string;
}

function invalid(field: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `${field}: ${reason}`, { details: { field } });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function codePoints(s: string): number {
  return [...s].length;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The PBX's own id of a call (Twilio CallSid, AudioSocket UUID, FreeSWITCH uuid): 1 to 128
 * characters, no control characters. Shared by the create body and the list's query. */
/** An agent id as a call takes it (the create body's `agentId`), for adapters that read one
 * from a PBX's metadata and must refuse it in their own protocol rather than as a 422. */
export function isAgentId(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const n = codePoints(value);
  return n >= 1 && n <= MAX_EXTERNAL_ID_CHARS && !CONTROL.test(value);
}

export const AGENT_ID_RULE = `agentId must be 1 to ${MAX_EXTERNAL_ID_CHARS} characters without control characters`;

export function checkExternalId(value: unknown, field: string): string {
  if (typeof value !== 'string') invalid(field, 'must be a string');
  const n = codePoints(value);
  if (n < 1 || n > MAX_EXTERNAL_ID_CHARS) invalid(field, `must be 1 to ${MAX_EXTERNAL_ID_CHARS} characters`);
  if (CONTROL.test(value)) invalid(field, 'must not contain control characters');
  return value;
}

export function validateCreateCall(body: unknown): ValidCallRequest {
  const b = body ?? {};
  if (!isPlainObject(b)) invalid('body', 'must be a JSON object');
  for (const key of Object.keys(b)) {
    if (!(CREATE_CALL_KEYS as readonly string[]).includes(key)) invalid(key, `unknown field (allowed: ${CREATE_CALL_KEYS.join(', ')})`);
  }
  let title = DEFAULT_CALL_TITLE;
  if (b.title !== undefined && b.title !== null) {
    if (typeof b.title !== 'string') invalid('title', 'must be a string');
    if (codePoints(b.title) > MAX_TITLE_CHARS) invalid('title', `must be at most ${MAX_TITLE_CHARS} characters`);
    if (b.title !== '') title = b.title;
  }
  const externalId = b.externalId === undefined || b.externalId === null ? null : checkExternalId(b.externalId, 'externalId');
  // The agent's id follows the PBX id's rule: whatever the contact center calls its agents.
  const agentId = b.agentId === undefined || b.agentId === null ? null : checkExternalId(b.agentId, 'agentId');
  return { title, externalId, agentId };
}

/** The Idempotency-Key comparison hash of a create-call request (after validation, so an
 * omitted title and the default title are the same request). */
export function callRequestHash(v: ValidCallRequest): string {
  // agentId only when given: a create without one hashes as it did before agents existed.
  const fields =
    v.agentId === undefined || v.agentId === null
      ? { title: v.title, externalId: v.externalId }
      : { title: v.title, externalId: v.externalId, agentId: v.agentId };
  return createHash('sha256').update(canonicalJson(fields), 'utf8').digest('hex');
}

export function checkSpeaker(value: unknown, field = 'speaker'): string {
  if (typeof value !== 'string' || !SPEAKER_PATTERN.test(value))
    invalid(field, `must match ${SPEAKER_PATTERN.source} (e.g. agent, customer)`);
  return value;
}

/**
 * Take the call fields out of a create-session body: `session` is the body without them (for
 * the session-options validator, which knows nothing of calls), `call` the validated link or
 * null. Both fields or neither; a malformed callId is a validation failure, an unknown one is
 * the store's NOT_FOUND.
 */
export function splitSessionCallFields(body: unknown): { session: unknown; call: CallLink | null } {
  if (!isPlainObject(body)) return { session: body, call: null };
  const { callId, speaker, ...session } = body;
  const hasCall = callId !== undefined && callId !== null;
  const hasSpeaker = speaker !== undefined && speaker !== null;
  if (!hasCall && !hasSpeaker) return { session, call: null };
  if (!hasCall) invalid('callId', 'is required with speaker (give both or neither)');
  if (!hasSpeaker) invalid('speaker', 'is required with callId (give both or neither)');
  if (!isId(callId, 'call')) invalid('callId', 'must be a call id (call_ followed by 20 characters)');
  return { session, call: { callId, speaker: checkSpeaker(speaker) } };
}

/** The create-session request hash with the call link in it: a session outside any call keeps
 * the hash it had before calls existed; a leg's hash covers its callId and speaker too, so the
 * same key naming another call or speaker is a conflict. */
export function sessionRequestHashWithCall(sessionHash: string, call: CallLink | null): string {
  if (call === null) return sessionHash;
  return createHash('sha256')
    .update(canonicalJson({ session: sessionHash, callId: call.callId, speaker: call.speaker }), 'utf8')
    .digest('hex');
}

// ------------------------------------------------------------------ status

export type LegStatus = 'RECORDING' | 'PAUSED' | 'PROCESSING' | 'COMPLETED' | 'FAILED';
export type CallStatus = 'WAITING' | 'ACTIVE' | 'PROCESSING' | 'COMPLETED' | 'FAILED';

/**
 * A call's status from its legs' History status: WAITING before any leg joined; ACTIVE while
 * any leg still records (or is paused: its session is open and may resume); then PROCESSING
 * while any leg's transcription is being finished; then FAILED if any leg failed (the call's
 * transcript is incomplete), else COMPLETED.
 */
export function callStatus(legs: ReadonlyArray<{ status: LegStatus }>): CallStatus {
  if (legs.length === 0) return 'WAITING';
  const has = (s: LegStatus) => legs.some((l) => l.status === s);
  if (has('RECORDING') || has('PAUSED')) return 'ACTIVE';
  if (has('PROCESSING')) return 'PROCESSING';
  if (has('FAILED')) return 'FAILED';
  return 'COMPLETED';
}

// ------------------------------------------------------------------ merged transcript

export interface CallLegTranscript {
  speaker: string;
  meta: TranscriptMeta;
  segments: readonly TranscriptSegment[];
}

export interface CallTranscriptMeta {
  callId: string;
  externalId: string | null;
  title: string;
  status: string;
}

export type CallTranscriptSegment = ReturnType<typeof toJson>['segments'][number] & { speaker: string; transcriptionId: string };

export interface CallTranscriptJson extends CallTranscriptMeta {
  durationMs: number;
  legs: Array<{ speaker: string; transcriptionId: string; status: string; sampleRateHz: number; durationMs: number }>;
  segments: CallTranscriptSegment[];
}

/**
 * Every leg's segments on one time line, ordered by start time (ms), then by the leg's place
 * in the call, then by the segment's index. Each leg's time 0 is its own first sample: legs of
 * one call start together (a PBX forks both directions at once, a stereo file's channels are
 * aligned), so no clock offset is applied (docs/calls.md).
 */
export function mergeCallTranscript(meta: CallTranscriptMeta, legs: readonly CallLegTranscript[]): CallTranscriptJson {
  const merged: Array<{ seg: CallTranscriptSegment; leg: number }> = [];
  const legViews: CallTranscriptJson['legs'] = [];
  let durationMs = 0;
  legs.forEach((leg, legIndex) => {
    const json = toJson(leg.meta, leg.segments);
    durationMs = Math.max(durationMs, json.durationMs);
    legViews.push({
      speaker: leg.speaker,
      transcriptionId: leg.meta.transcriptionId,
      status: leg.meta.status,
      sampleRateHz: leg.meta.sampleRateHz,
      durationMs: json.durationMs,
    });
    for (const s of json.segments)
      merged.push({ seg: { speaker: leg.speaker, transcriptionId: leg.meta.transcriptionId, ...s }, leg: legIndex });
  });
  // Stable sort; each leg's segments are already in index order.
  merged.sort((a, b) => a.seg.startMs - b.seg.startMs || a.leg - b.leg);
  return { ...meta, durationMs, legs: legViews, segments: merged.map((m) => m.seg) };
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/** Segments to read (txt, srt, vtt): non-empty text, `speaker: text`, times in ms. Rendered by
 * transcript.ts at a rate of 1000 Hz, so a "sample" is a millisecond and each format keeps its
 * own rules (numbering, escaping, timestamps). */
function readableCues(t: CallTranscriptJson): TranscriptSegment[] {
  return t.segments
    .filter((s) => oneLine(s.text) !== '')
    .map((s, i) => ({
      index: i,
      startSample: BigInt(s.startMs),
      endSample: BigInt(s.endMs),
      text: `${s.speaker}: ${oneLine(s.text)}`,
      words: [],
    }));
}

/** One line per segment: `[HH:MM:SS.mmm] speaker: text`. */
export function callTranscriptText(t: CallTranscriptJson): string {
  return readableCues(t)
    .map((c) => `[${formatTimestamp(c.startSample, '.')}] ${c.text}\n`)
    .join('');
}

export function callTranscriptSrt(t: CallTranscriptJson): string {
  return toSrt(readableCues(t), 1000);
}

export function callTranscriptVtt(t: CallTranscriptJson): string {
  return toVtt(readableCues(t), 1000);
}

// ------------------------------------------------------------------ the list's query

export const DEFAULT_CALL_PAGE_SIZE = 20;
export const MAX_CALL_PAGE_SIZE = 100;

export interface CallListQuery {
  limit: number;
  externalId?: string;
  after?: { createdAt: string; id: string };
}

/** Opaque cursor: base64url of the last call's (createdAt, id), as History's. */
export function encodeCallCursor(p: { createdAt: string; id: string }): string {
  return Buffer.from(JSON.stringify([p.createdAt, p.id]), 'utf8').toString('base64url');
}

export function decodeCallCursor(cursor: string): { createdAt: string; id: string } {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    v = null;
  }
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'string' || !isId(v[1], 'call') || Number.isNaN(Date.parse(v[0]))) {
    invalid('cursor', 'not a cursor returned by this list');
  }
  return { createdAt: v[0] as string, id: v[1] as string };
}

/** `?externalId=&limit=&cursor=` of GET .../stt/calls. */
export function parseCallListQuery(q: { externalId?: unknown; limit?: unknown; cursor?: unknown }): CallListQuery {
  let limit = DEFAULT_CALL_PAGE_SIZE;
  if (q.limit !== undefined && q.limit !== '') {
    // A number when the route's schema has read it already (src/server/schemas/calls.ts).
    const n = typeof q.limit === 'string' ? Number(q.limit) : typeof q.limit === 'number' ? q.limit : NaN;
    if (!Number.isInteger(n) || n < 1 || n > MAX_CALL_PAGE_SIZE) invalid('limit', `must be an integer from 1 to ${MAX_CALL_PAGE_SIZE}`);
    limit = n;
  }
  const out: CallListQuery = { limit };
  if (q.externalId !== undefined) out.externalId = checkExternalId(q.externalId, 'externalId');
  if (q.cursor !== undefined && q.cursor !== '') {
    if (typeof q.cursor !== 'string') invalid('cursor', 'not a cursor returned by this list');
    out.after = decodeCallCursor(q.cursor);
  }
  return out;
}

export const CALL_TRANSCRIPT_FORMATS = ['json', 'txt', 'srt', 'vtt'] as const;
export type CallTranscriptFormat = (typeof CALL_TRANSCRIPT_FORMATS)[number];

export function parseTranscriptFormat(raw: unknown): CallTranscriptFormat {
  const f = raw === undefined ? 'json' : raw;
  if (typeof f !== 'string' || !(CALL_TRANSCRIPT_FORMATS as readonly string[]).includes(f))
    invalid('format', `must be one of ${CALL_TRANSCRIPT_FORMATS.join(', ')}`);
  return f as CallTranscriptFormat;
}
