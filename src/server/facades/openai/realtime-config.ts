// OpenAI Realtime transcription sessions: the session configuration a client sends
// (`session.update` with `session.type: "transcription"`, the GA shape the current SDK
// sends; `transcription_session.update`, the beta shape) mapped onto the options of a native
// real-time session, and the session as OpenAI's events show it. Pure. What each field does
// (docs/compat.md, "OpenAI Realtime"):
// - audio format: pcm16 / audio/pcm at 24 kHz (the default), g711_ulaw / audio/pcmu and
//   g711_alaw / audio/pcma at 8 kHz (telephony): the native input encodings;
// - turn_detection: server_vad (the default) and semantic_vad are the native VAD commit mode,
//   silence_duration_ms its commit silence; null is manual commit (input_audio_buffer.commit);
//   threshold, prefix_padding_ms, eagerness, idle_timeout_ms are accepted and ignored;
// - transcription: model one of the served names, language the native languageHint, prompt
//   vocabulary hints (as on the file API);
// - noise_reduction and include are accepted and ignored.
// Anything else is refused by name. The format, language and prompt are fixed once audio has
// been sent (the native session is created with them).
import { OPENAI_MODEL_ALIASES } from './names.js';
import { promptTerms } from './request.js';

export type RealtimeFormat = 'pcm16' | 'g711_ulaw' | 'g711_alaw';

export interface TurnDetection {
  type: 'server_vad' | 'semantic_vad';
  silenceMs: number | null;
}

export interface RealtimeConfig {
  format: RealtimeFormat;
  /** null: manual commit. */
  turnDetection: TurnDetection | null;
  model: string;
  language: string | null;
  prompt: string | null;
}

/** A configuration the client asked for that scribed refuses: OpenAI's `invalid_request_error`
 * naming the parameter. */
export class RealtimeConfigError extends Error {
  constructor(
    message: string,
    readonly param: string,
    readonly code: string = 'invalid_value',
  ) {
    super(message);
    this.name = 'RealtimeConfigError';
  }
}

export const DEFAULT_SILENCE_MS = 500;

export function defaultConfig(engineName: string): RealtimeConfig {
  return {
    format: 'pcm16',
    turnDetection: { type: 'server_vad', silenceMs: null },
    model: `scribed-${engineName}`,
    language: null,
    prompt: null,
  };
}

export function servedRealtimeModels(engineName: string): string[] {
  return [`scribed-${engineName}`, ...OPENAI_MODEL_ALIASES];
}

/** Sample rate and bytes per sample of a format. */
export function formatShape(format: RealtimeFormat): { sampleRate: number; bytesPerSample: 1 | 2 } {
  return format === 'pcm16' ? { sampleRate: 24000, bytesPerSample: 2 } : { sampleRate: 8000, bytesPerSample: 1 };
}

const NATIVE_ENCODING: Record<RealtimeFormat, string> = { pcm16: 'pcm_s16le_24000', g711_ulaw: 'mulaw_8000', g711_alaw: 'alaw_8000' };

/** The native create-session body of a configuration. */
export function nativeSessionBody(c: RealtimeConfig): { title: string; languageHint?: string; options: Record<string, unknown> } {
  const options: Record<string, unknown> = {
    inputEncoding: NATIVE_ENCODING[c.format],
    segmentCommitMode: c.turnDetection ? 'vad' : 'manual',
  };
  if (c.turnDetection?.silenceMs != null) options.commitSilenceMs = c.turnDetection.silenceMs;
  if (c.prompt !== null && c.prompt.trim() !== '') options.vocabularyHints = promptTerms(c.prompt);
  return { title: 'OpenAI realtime transcription', ...(c.language ? { languageHint: c.language } : {}), options };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function only(o: Obj, path: string, known: readonly string[]): void {
  for (const k of Object.keys(o))
    if (!known.includes(k)) throw new RealtimeConfigError(`Unknown parameter: '${path}${k}'.`, `${path}${k}`, 'unknown_parameter');
}

function parseFormat(v: unknown, param: string): RealtimeFormat {
  if (v === 'pcm16' || v === 'g711_ulaw' || v === 'g711_alaw') return v;
  if (isObj(v)) {
    if (v.type === 'audio/pcm') {
      if (v.rate !== undefined && v.rate !== 24000)
        throw new RealtimeConfigError(`${param}.rate: audio/pcm is served at 24000 Hz only`, `${param}.rate`);
      return 'pcm16';
    }
    if (v.type === 'audio/pcmu') return 'g711_ulaw';
    if (v.type === 'audio/pcma') return 'g711_alaw';
  }
  throw new RealtimeConfigError(`${param}: send pcm16 (audio/pcm at 24000 Hz), g711_ulaw (audio/pcmu) or g711_alaw (audio/pcma)`, param);
}

function parseTurnDetection(v: unknown, param: string): TurnDetection | null {
  if (v === null) return null;
  if (!isObj(v)) throw new RealtimeConfigError(`${param}: an object or null`, param);
  only(v, `${param}.`, [
    'type',
    'threshold',
    'prefix_padding_ms',
    'silence_duration_ms',
    'create_response',
    'interrupt_response',
    'eagerness',
    'idle_timeout_ms',
  ]);
  const type = v.type ?? 'server_vad';
  if (type !== 'server_vad' && type !== 'semantic_vad')
    throw new RealtimeConfigError(`${param}.type: server_vad, semantic_vad or turn_detection null (manual commit)`, `${param}.type`);
  const s = v.silence_duration_ms;
  if (s !== undefined && (typeof s !== 'number' || !Number.isInteger(s) || s < 0 || s > 60_000))
    throw new RealtimeConfigError(`${param}.silence_duration_ms: an integer from 0 to 60000`, `${param}.silence_duration_ms`);
  return { type, silenceMs: typeof s === 'number' ? s : null };
}

function parseTranscription(v: unknown, param: string, models: readonly string[], into: RealtimeConfig): void {
  if (v === null) return;
  if (!isObj(v)) throw new RealtimeConfigError(`${param}: an object`, param);
  only(v, `${param}.`, ['model', 'language', 'prompt']);
  if (v.model !== undefined) {
    if (typeof v.model !== 'string' || !models.includes(v.model))
      throw new RealtimeConfigError(
        `The model \`${String(v.model)}\` does not exist; GET /v1/models lists the models this server serves`,
        `${param}.model`,
        'model_not_found',
      );
    into.model = v.model;
  }
  if (v.language !== undefined && v.language !== null) {
    if (typeof v.language !== 'string') throw new RealtimeConfigError(`${param}.language: a language code`, `${param}.language`);
    into.language = v.language.trim() === '' ? null : v.language.trim();
  }
  if (v.prompt !== undefined && v.prompt !== null) {
    if (typeof v.prompt !== 'string' || v.prompt.length > 4096)
      throw new RealtimeConfigError(`${param}.prompt: a string of at most 4096 characters`, `${param}.prompt`);
    into.prompt = v.prompt;
  }
}

/** `session` of a GA `session.update` (type transcription) applied to `current`. */
export function applySessionUpdate(current: RealtimeConfig, session: unknown, models: readonly string[]): RealtimeConfig {
  if (!isObj(session)) throw new RealtimeConfigError('session: an object', 'session');
  only(session, 'session.', ['type', 'audio', 'include', 'id', 'object']);
  if (session.type !== undefined && session.type !== 'transcription') {
    throw new RealtimeConfigError(
      'session.type: this server serves transcription sessions only (open the socket with intent=transcription)',
      'session.type',
    );
  }
  const next = { ...current };
  if (session.audio !== undefined) {
    if (!isObj(session.audio)) throw new RealtimeConfigError('session.audio: an object', 'session.audio');
    only(session.audio, 'session.audio.', ['input']);
    const input = session.audio.input;
    if (input !== undefined) {
      if (!isObj(input)) throw new RealtimeConfigError('session.audio.input: an object', 'session.audio.input');
      only(input, 'session.audio.input.', ['format', 'transcription', 'turn_detection', 'noise_reduction']);
      if (input.format !== undefined) next.format = parseFormat(input.format, 'session.audio.input.format');
      if (input.turn_detection !== undefined)
        next.turnDetection = parseTurnDetection(input.turn_detection, 'session.audio.input.turn_detection');
      if (input.transcription !== undefined) parseTranscription(input.transcription, 'session.audio.input.transcription', models, next);
    }
  }
  return next;
}

/** `session` of a beta `transcription_session.update` applied to `current`. */
export function applyTranscriptionSessionUpdate(current: RealtimeConfig, session: unknown, models: readonly string[]): RealtimeConfig {
  if (!isObj(session)) throw new RealtimeConfigError('session: an object', 'session');
  only(session, 'session.', [
    'input_audio_format',
    'input_audio_transcription',
    'turn_detection',
    'input_audio_noise_reduction',
    'include',
    'client_secret',
    'modalities',
  ]);
  const next = { ...current };
  if (session.input_audio_format !== undefined) next.format = parseFormat(session.input_audio_format, 'session.input_audio_format');
  if (session.turn_detection !== undefined) next.turnDetection = parseTurnDetection(session.turn_detection, 'session.turn_detection');
  if (session.input_audio_transcription !== undefined)
    parseTranscription(session.input_audio_transcription, 'session.input_audio_transcription', models, next);
  return next;
}

/** What changes once the native session exists (it was created with them). */
export function fixedFieldChanged(a: RealtimeConfig, b: RealtimeConfig): string | null {
  if (a.format !== b.format) return 'format';
  if ((a.turnDetection === null) !== (b.turnDetection === null) || a.turnDetection?.silenceMs !== b.turnDetection?.silenceMs)
    return 'turn_detection';
  if (a.language !== b.language) return 'transcription.language';
  if (a.prompt !== b.prompt) return 'transcription.prompt';
  return null;
}

const GA_FORMAT: Record<RealtimeFormat, Obj> = {
  pcm16: { type: 'audio/pcm', rate: 24000 },
  g711_ulaw: { type: 'audio/pcmu' },
  g711_alaw: { type: 'audio/pcma' },
};

function turnDetectionView(t: TurnDetection | null): Obj | null {
  return t === null
    ? null
    : { type: t.type, threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: t.silenceMs ?? DEFAULT_SILENCE_MS };
}

/** The session as a GA `session.created` / `session.updated` shows it. */
export function sessionView(id: string, c: RealtimeConfig): Obj {
  return {
    type: 'transcription',
    object: 'realtime.transcription_session',
    id,
    audio: {
      input: {
        format: GA_FORMAT[c.format],
        transcription: { model: c.model, language: c.language, prompt: c.prompt ?? '' },
        turn_detection: turnDetectionView(c.turnDetection),
        noise_reduction: null,
      },
    },
    include: null,
  };
}

/** The session as a beta `transcription_session.updated` shows it. */
export function betaSessionView(id: string, c: RealtimeConfig): Obj {
  return {
    id,
    object: 'realtime.transcription_session',
    input_audio_format: c.format,
    input_audio_transcription: { model: c.model, language: c.language, prompt: c.prompt ?? '' },
    turn_detection: turnDetectionView(c.turnDetection),
    input_audio_noise_reduction: null,
    include: null,
  };
}
