// AssemblyAI Universal-Streaming's connection parameters (the query of GET /v3/ws, as the
// `assemblyai` SDK's streaming transcriber writes it) mapped onto the body of a native
// real-time session (POST .../stt/realtime/sessions) and the facade's own switches. Pure.
// Every parameter is in exactly one of the lists below (docs/compat.md, "AssemblyAI
// Universal-Streaming"): it acts, it is accepted and ignored (tuning of AssemblyAI's own models
// with no meaning here), or it is refused naming it, as is any unknown parameter. The native
// body is then validated by the same code as a native create.

export type Query = Record<string, string | string[] | undefined>;

/** A refused parameter: the socket is closed with 3006 (input validation) naming it. */
export class StreamingParamError extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(`${param}: ${message}`);
    this.name = 'StreamingParamError';
  }
}

export interface StreamingRequest {
  /** The native create-session body. */
  sessionBody: { title: string; languageHint?: string; options: Record<string, unknown> };
  sampleRate: number;
  /** Bytes of one sample on the wire: 2 for pcm_s16le, 1 for pcm_mulaw. */
  bytesPerSample: 1 | 2;
  /** format_turns: each end of turn is followed by its formatted Turn. */
  formatTurns: boolean;
}

/** Parameters that act (the mapping is in mapStreamingQuery). */
export const ACTING = [
  'sample_rate',
  'encoding',
  'format_turns',
  'max_turn_silence',
  'keyterms_prompt',
  'language_code',
  'language_codes',
] as const;

/** Accepted and ignored, with the reason docs/compat.md gives. */
export const IGNORED: Record<string, string> = {
  token: 'the temporary token: read as the credential, never as an option',
  speech_model: "scribed's own recognizer serves every model name",
  end_of_turn_confidence_threshold: 'the recognizer makes no end-of-turn confidence prediction: a turn ends on silence',
  min_turn_silence: 'applies to confident end-of-turn predictions, which the recognizer does not make',
  min_end_of_turn_silence_when_confident: 'as min_turn_silence',
  vad_threshold: "tuning of AssemblyAI's voice detector",
  inactivity_timeout: 'a silent socket is never timed out',
  mode: "tuning of AssemblyAI's models",
  interruption_delay: "tuning of AssemblyAI's models",
  turn_left_pad_ms: "tuning of AssemblyAI's models",
  voice_focus: "AssemblyAI's noise suppression",
  voice_focus_threshold: "AssemblyAI's noise suppression",
  domain: "AssemblyAI's model selection",
  prompt: "a prompt to AssemblyAI's model",
  agent_context: "a prompt to AssemblyAI's model",
  customer_support_audio_capture: "tuning of AssemblyAI's models",
  continuous_partials: 'partial Turns are sent whenever the recognizer revises its hypothesis',
  include_partial_turns: 'partial Turns are always sent',
};

/** Off-switches accepted when false (their `true` asks for output scribed does not make). */
export const OFF_SWITCHES: Record<string, string> = {
  session_heartbeat: 'Heartbeat messages are not sent',
  acknowledge_silence: 'Silence messages are not sent',
  filter_profanity: 'no profanity filter',
  speaker_labels: 'no live speaker labels (a call with one socket per party gives each its speaker: docs/calls.md)',
  language_detection: 'no language detection on the live socket',
  redact_pii: "the account's redaction policies apply to every session (docs/redaction.md); per-socket PII policies are not mapped",
};

/** Refused whatever their value. */
export const REFUSED: Record<string, string> = {
  max_speakers: 'no live speaker labels',
  speaker_labels_revision_interval_ms: 'no live speaker labels',
  redact_pii_policies: OFF_SWITCHES.redact_pii!,
  redact_pii_sub: OFF_SWITCHES.redact_pii!,
  llm_gateway: 'no LLM gateway',
  webhook_url: "results come on the socket; the account's webhooks (docs/webhooks.md) see every session",
  webhook_auth_header_name: 'as webhook_url',
  webhook_auth_header_value: 'as webhook_url',
};

/** The served sample rates of pcm_s16le (the native inputEncoding names). */
const PCM_RATES = [8000, 16000, 22050, 24000, 44100, 48000];

function last(q: Query, name: string): string | undefined {
  const v = q[name];
  return Array.isArray(v) ? v[v.length - 1] : v;
}

function bool(q: Query, name: string): boolean | undefined {
  const v = last(q, name);
  if (v === undefined) return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new StreamingParamError(name, 'true or false');
}

function integer(q: Query, name: string, min: number, max: number): number | undefined {
  const v = last(q, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new StreamingParamError(name, `an integer from ${min} to ${max}`);
  return Number(v);
}

function stringList(q: Query, name: string): string[] | undefined {
  const v = last(q, name);
  if (v === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw new StreamingParamError(name, 'a JSON array of strings');
  }
  if (!Array.isArray(parsed) || !parsed.every((s) => typeof s === 'string')) throw new StreamingParamError(name, 'a JSON array of strings');
  return parsed as string[];
}

export function mapStreamingQuery(q: Query): StreamingRequest {
  for (const name of Object.keys(q)) {
    if ((ACTING as readonly string[]).includes(name) || Object.hasOwn(IGNORED, name)) continue;
    if (Object.hasOwn(OFF_SWITCHES, name)) {
      if (bool(q, name) === true) throw new StreamingParamError(name, `not served by scribed (${OFF_SWITCHES[name]})`);
      continue;
    }
    if (Object.hasOwn(REFUSED, name)) throw new StreamingParamError(name, `not served by scribed (${REFUSED[name]})`);
    throw new StreamingParamError(name, 'unknown or unsupported parameter');
  }
  const encoding = last(q, 'encoding') ?? 'pcm_s16le';
  const sampleRate = integer(q, 'sample_rate', 1, 192_000);
  if (sampleRate === undefined) throw new StreamingParamError('sample_rate', 'required (8000 for pcm_mulaw)');
  let inputEncoding: string;
  if (encoding === 'pcm_s16le') {
    if (!PCM_RATES.includes(sampleRate))
      throw new StreamingParamError('sample_rate', `pcm_s16le is served at ${PCM_RATES.join(', ')} Hz (not resampled)`);
    inputEncoding = `pcm_s16le_${sampleRate}`;
  } else if (encoding === 'pcm_mulaw') {
    if (sampleRate !== 8000) throw new StreamingParamError('sample_rate', 'pcm_mulaw is served at 8000 Hz');
    inputEncoding = 'mulaw_8000';
  } else {
    throw new StreamingParamError('encoding', `${JSON.stringify(encoding)} is not served: send pcm_s16le or pcm_mulaw`);
  }
  const formatTurns = bool(q, 'format_turns') ?? false;
  const options: Record<string, unknown> = {
    inputEncoding,
    segmentCommitMode: 'vad',
    // format_turns: the formatted Turn's text is the native readable text; the unformatted
    // one is the recognizer's words (rawText).
    readableText: formatTurns,
  };
  const silence = integer(q, 'max_turn_silence', 0, 60_000);
  if (silence !== undefined) options.commitSilenceMs = silence;
  const terms = stringList(q, 'keyterms_prompt')
    ?.map((t) => t.trim())
    .filter((t) => t !== '');
  if (terms && terms.length > 0) options.vocabularyHints = [...new Set(terms)];

  const sessionBody: StreamingRequest['sessionBody'] = { title: 'AssemblyAI streaming', options };
  const codes = stringList(q, 'language_codes');
  if (codes !== undefined && codes.length > 1)
    throw new StreamingParamError('language_codes', 'one language per socket (the recognizer does not switch languages)');
  const language = (codes?.[0] ?? last(q, 'language_code'))?.trim();
  if (language) sessionBody.languageHint = language;
  return { sessionBody, sampleRate, bytesPerSample: encoding === 'pcm_mulaw' ? 1 : 2, formatTurns };
}

/** UpdateConfiguration's fields (all accepted and ignored: the native session's options are
 * fixed when it is created); any other field is refused. */
export const UPDATE_FIELDS = [
  'end_of_turn_confidence_threshold',
  'min_end_of_turn_silence_when_confident',
  'min_turn_silence',
  'max_turn_silence',
  'vad_threshold',
  'format_turns',
  'session_heartbeat',
  'acknowledge_silence',
  'keyterms_prompt',
  'prompt',
  'agent_context',
  'filter_profanity',
  'interruption_delay',
  'turn_left_pad_ms',
  'language_codes',
] as const;
