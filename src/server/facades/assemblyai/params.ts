// AssemblyAI's transcript parameters (the JSON body of POST /v2/transcript) mapped onto a
// native batch request. Pure. Every parameter is in exactly one list: acting ones change what
// scribed does, ignored ones are accepted and have no effect on the words, off-switches are
// features scribed does not serve, accepted when false or null, and anything else is refused
// with a message naming it: a parameter that would change the result is never silently
// dropped (docs/compat.md, "AssemblyAI async").
import type { RedactionPolicy } from '../../../core/session-options.js';
import { badRequest } from './errors.js';

export const ACTING = {
  audio_url: 'an upload URL of this server (POST /v2/upload)',
  punctuate: 'with format_text: readable text unless both are false',
  format_text: 'with punctuate: readable text unless both are false',
  disfluencies: 'false (the default) removes fillers; true keeps them',
  language_code: 'the native languageHint (its language part: en_us -> en)',
  speaker_labels: 'a stereo file as two legs, channel 0 speaker A, channel 1 speaker B',
  multichannel: 'as speaker_labels: one leg per channel of a stereo file',
  dual_channel: 'as multichannel (its old name)',
  speakers_expected: '2 (or null) with speaker_labels; another number is refused',
  redact_pii: 'native redaction with the policies below',
  redact_pii_policies: 'mapped to native redaction policies',
  redact_pii_sub: 'entity_name (the default): a span becomes a token naming its type; hash is refused',
  webhook_url: 'POSTed {transcript_id, status} when the job ends, through the webhook outbox',
  webhook_auth_header_name: 'a header sent with the webhook',
  webhook_auth_header_value: 'its value',
  word_boost: 'vocabulary hints (native vocabularyHints)',
  keyterms_prompt: 'vocabulary hints (native vocabularyHints)',
} as const;

export const IGNORED = {
  speech_model: 'scribed serves its own recognizer whatever is named',
  speech_models: 'scribed serves its own recognizer whatever is named',
  language_model: 'deprecated model names; scribed serves its own recognizer',
  acoustic_model: 'deprecated model names; scribed serves its own recognizer',
  boost_param: 'hints are applied as the recognizer applies them',
  temperature: 'the recognizer does not sample',
  language_confidence_threshold: 'no language detection: the language is the one asked for',
  remove_audio_tags: 'the recognizer writes no audio tags',
} as const;

/** Features scribed does not serve: accepted when false or null (clients send every switch). */
export const OFF_SWITCHES = {
  auto_chapters: 'no chapters',
  auto_highlights: 'no highlights',
  content_safety: 'no content safety model',
  custom_topics: 'no topic model',
  entity_detection: 'no named-entity model',
  filter_profanity: 'no profanity filter',
  iab_categories: 'no topic model',
  language_detection: 'the recognizer cannot name the spoken language',
  sentiment_analysis: 'no sentiment model',
  summarization: 'no summaries',
  redact_pii_audio: 'no redacted audio file',
  redact_pii_return_unredacted: 'the unredacted words are not kept',
} as const;

/** Refused whatever their value (other than null): each would change the result. */
export const REFUSED = {
  audio_start_from: 'the whole file is transcribed',
  audio_end_at: 'the whole file is transcribed',
  custom_spelling: 'no spelling replacement',
  topics: 'no topic model',
  summary_model: 'no summaries',
  summary_type: 'no summaries',
  content_safety_confidence: 'no content safety model',
  language_detection_options: 'the recognizer cannot name the spoken language',
  speaker_options: 'no diarization: send stereo, one speaker per channel',
  redact_pii_audio_quality: 'no redacted audio file',
  keyterms_prompt_options: 'hints are applied as the recognizer applies them',
  speech_threshold: 'no speech threshold: every file is transcribed',
  prompt: 'no prompting; use keyterms_prompt or word_boost for vocabulary',
  domain: 'no domain models',
  speech_understanding: 'no speech understanding models',
} as const;

/** AssemblyAI's PII policies scribed's digit and address readers honour, each mapped to the
 * native policy covering it (never a narrower one). Names, places, dates ... need a named-
 * entity model and are refused. */
export const PII_POLICIES: Readonly<Record<string, RedactionPolicy>> = {
  credit_card_number: 'pci',
  credit_card_expiration: 'pci',
  credit_card_cvv: 'pci',
  us_social_security_number: 'ssn',
  phone_number: 'phone',
  email_address: 'email',
  number_sequence: 'numbers',
  account_number: 'numbers',
  banking_information: 'numbers',
};

export const TRANSCRIPT_TITLE = 'AssemblyAI transcription';
/** Channel 0 and 1 of a stereo file: AssemblyAI's first speakers. */
export const CHANNEL_SPEAKERS = ['A', 'B'] as const;
const MAX_HINTS = 100;

export interface TranscriptRequest {
  audioUrl: string;
  /** The native batch form fields (title, languageHint, options). */
  nativeFields: Record<string, string>;
  webhook: { url: string; header: { name: string; value: string } | null } | null;
  /** The parameters as the answer echoes them. */
  echo: Record<string, unknown>;
}

type Body = Record<string, unknown>;

const refuse = (message: string): never => {
  throw badRequest(message);
};

function bool(b: Body, name: string): boolean | undefined {
  const v = b[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') refuse(`${name}: must be a boolean`);
  return v as boolean;
}

function text(b: Body, name: string, max: number): string | undefined {
  const v = b[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max) refuse(`${name}: must be a string of at most ${max} characters`);
  return v as string;
}

function strings(b: Body, name: string): string[] {
  const v = b[name];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > MAX_HINTS || v.some((s) => typeof s !== 'string' || s.length > 200))
    refuse(`${name}: must be a list of at most ${MAX_HINTS} strings`);
  return (v as string[]).map((s) => s.trim()).filter((s) => s !== '');
}

/** A header name a webhook may carry: an HTTP token, not one the delivery sets itself. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'user-agent',
  'expect',
  'te',
  'upgrade',
]);

function webhookHeader(b: Body): { name: string; value: string } | null {
  const name = text(b, 'webhook_auth_header_name', 100);
  const value = text(b, 'webhook_auth_header_value', 1000);
  if (name === undefined && value === undefined) return null;
  if (name === undefined || value === undefined)
    return refuse('webhook_auth_header_name and webhook_auth_header_value: give both or neither');
  if (!HEADER_NAME.test(name)) refuse('webhook_auth_header_name: must be an HTTP header name');
  const lower = name.toLowerCase();
  if (RESERVED_HEADERS.has(lower) || lower.startsWith('webhook-'))
    refuse(`webhook_auth_header_name: ${name} is set by the delivery itself`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) refuse('webhook_auth_header_value: must hold no control characters');
  return { name, value };
}

function redaction(b: Body): { policies: RedactionPolicy[]; asked: string[] } | null {
  const on = bool(b, 'redact_pii') ?? false;
  const asked = strings(b, 'redact_pii_policies');
  const sub = text(b, 'redact_pii_sub', 50);
  if (sub !== undefined && sub !== 'entity_name')
    refuse(`redact_pii_sub: ${JSON.stringify(sub)} is not served; scribed writes a token naming the type (entity_name)`);
  if (!on) {
    if (asked.length > 0) refuse('redact_pii_policies: applies with redact_pii: true');
    return null;
  }
  if (asked.length === 0) refuse('redact_pii_policies: required with redact_pii: true');
  const policies = new Set<RedactionPolicy>();
  for (const p of asked) {
    const native = PII_POLICIES[p];
    if (native === undefined)
      refuse(
        `redact_pii_policies: ${JSON.stringify(p)} is not served by scribed (no named-entity model runs here); use ${Object.keys(PII_POLICIES).join(', ')}`,
      );
    policies.add(native!);
  }
  return { policies: [...policies], asked };
}

/** The create body as a native request; a refusal names the parameter. */
export function mapTranscriptBody(body: unknown): TranscriptRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return refuse('the body must be a JSON object');
  const b = body as Body;
  for (const [name, value] of Object.entries(b)) {
    if (Object.hasOwn(ACTING, name) || Object.hasOwn(IGNORED, name)) continue;
    if (Object.hasOwn(OFF_SWITCHES, name)) {
      if (value === false || value === null) continue;
      refuse(`${name}: not supported by scribed (${OFF_SWITCHES[name as keyof typeof OFF_SWITCHES]})`);
    }
    if (Object.hasOwn(REFUSED, name)) {
      if (value === null || (Array.isArray(value) && value.length === 0)) continue;
      refuse(`${name}: not supported by scribed (${REFUSED[name as keyof typeof REFUSED]})`);
    }
    refuse(`${name}: unknown or unsupported parameter`);
  }
  const audioUrl = text(b, 'audio_url', 2048);
  if (audioUrl === undefined || audioUrl.trim() === '') return refuse('audio_url: required');
  const punctuate = bool(b, 'punctuate') ?? true;
  const formatText = bool(b, 'format_text') ?? true;
  const disfluencies = bool(b, 'disfluencies') ?? false;
  const speakerLabels = bool(b, 'speaker_labels') ?? false;
  const multichannel = (bool(b, 'multichannel') ?? false) || (bool(b, 'dual_channel') ?? false);
  const expected = b.speakers_expected;
  if (expected !== undefined && expected !== null) {
    if (!speakerLabels) refuse('speakers_expected: applies with speaker_labels: true');
    if (expected !== 2) refuse('speakers_expected: scribed labels the two channels of a stereo file; only 2 is served');
  }
  const language = text(b, 'language_code', 20);
  const hints = [...strings(b, 'word_boost'), ...strings(b, 'keyterms_prompt')];
  const redact = redaction(b);
  const webhookUrl = text(b, 'webhook_url', 2048);
  const header = webhookHeader(b);
  if (header !== null && webhookUrl === undefined) refuse('webhook_auth_header_name: applies with webhook_url');

  const options: Record<string, unknown> = {};
  const readable = punctuate || formatText;
  if (readable) options.readableText = true;
  if (!disfluencies) options.removeDisfluencies = true;
  if (hints.length > 0) options.vocabularyHints = [...new Set(hints)];
  if (speakerLabels || multichannel) {
    options.multichannel = true;
    options.channelSpeakers = [...CHANNEL_SPEAKERS];
  }
  if (redact !== null) options.redact = redact.policies;
  const nativeFields: Record<string, string> = { title: TRANSCRIPT_TITLE, options: JSON.stringify(options) };
  const languageHint = language?.trim().split(/[_-]/)[0]?.toLowerCase();
  if (languageHint) nativeFields.languageHint = languageHint;
  return {
    audioUrl: audioUrl.trim(),
    nativeFields,
    webhook: webhookUrl === undefined ? null : { url: webhookUrl, header },
    echo: {
      audio_url: audioUrl.trim(),
      punctuate,
      format_text: formatText,
      disfluencies,
      speaker_labels: speakerLabels,
      multichannel: multichannel || speakerLabels,
      language_code: language ?? null,
      redact_pii: redact !== null,
      redact_pii_policies: redact?.asked ?? null,
      webhook_url: webhookUrl ?? null,
      webhook_auth: header !== null,
      webhook_auth_header_name: header?.name ?? null,
      word_boost: hints,
    },
  };
}
