// Deepgram's pre-recorded query parameters (POST /v1/listen), mapped onto a native batch
// request. Pure. Every parameter is in exactly one of three lists (docs/compat.md has the
// table): ACTING ones change what scribed does, IGNORED ones are accepted and have no effect
// (named so a client's defaults do not break), and any other is refused with a message naming
// it: scribed never silently drops a parameter that would change the result.
import { DeepgramError } from './errors.js';

export const RAW_ENCODINGS = ['linear16', 'mulaw', 'alaw'] as const;
export type RawEncoding = (typeof RAW_ENCODINGS)[number];

/** Parameters that act, and what they map to. */
export const ACTING = {
  encoding: 'headerless audio: linear16, mulaw or alaw (with sample_rate)',
  sample_rate: 'the rate of headerless audio (required with encoding)',
  channels: 'channels of headerless audio (1 or 2, interleaved)',
  multichannel: 'each of 2 channels transcribed as a leg of a call (native options.multichannel)',
  utterances: 'results.utterances: one per segment scribed cut at a pause',
  punctuate: 'readable text (native options.readableText)',
  smart_format: 'readable text (native options.readableText)',
  numerals: 'readable text (native options.readableText: spoken numbers as digits)',
  filler_words: 'false (the default) removes fillers (native removeDisfluencies); true keeps them',
  keywords: 'vocabulary hints (native options.vocabularyHints; intensifier dropped)',
  keyterm: 'vocabulary hints (native options.vocabularyHints)',
  language: 'the language (native languageHint, checked against the recognizer)',
  tag: 'the History row title',
} as const;

/** Parameters accepted and ignored. */
export const IGNORED = {
  model: 'scribed serves its own recognizer whatever model is named',
  version: 'always the latest',
  tier: 'no tiers',
  utt_split: 'segments are cut at pauses by scribed',
  mip_opt_out: 'nothing is sent to a model-improvement programme',
} as const;

/** Refused parameters with why (others are refused as unknown). */
export const REFUSED = {
  callback: 'asynchronous callbacks are not served; the request waits for the transcript',
  callback_method: 'asynchronous callbacks are not served',
  diarize: 'no speaker diarization; send stereo with multichannel=true for two parties',
  detect_language: 'the recognizer cannot name the spoken language',
  redact: 'redaction is not served on pre-recorded audio',
  summarize: 'no summaries',
  topics: 'no topic detection',
  intents: 'no intent detection',
  sentiment: 'no sentiment analysis',
  detect_entities: 'no entity detection in this API (the native API has entityCategories)',
  search: 'no phonetic search',
  replace: 'no term replacement',
  paragraphs: 'no paragraphs',
  profanity_filter: 'no profanity filter',
  dictation: 'no dictation commands',
  measurements: 'no measurement formatting',
  diarize_version: 'no speaker diarization',
} as const;

export interface ListenRequest {
  /** The native batch form fields (title, languageHint, options). */
  nativeFields: Record<string, string>;
  /** Headerless audio's format, or null for a container the file itself names. */
  raw: { encoding: RawEncoding; sampleRate: number; channels: number } | null;
  utterances: boolean;
  multichannel: boolean;
  model: string | null;
}

export type Query = Readonly<Record<string, string | string[] | undefined>>;

function bad(message: string): never {
  throw new DeepgramError(400, 'INVALID_QUERY_PARAMETER', message);
}

function all(q: Query, name: string): string[] {
  const v = q[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

function last(q: Query, name: string): string | undefined {
  const v = all(q, name);
  return v.length === 0 ? undefined : v[v.length - 1];
}

function bool(q: Query, name: string): boolean | undefined {
  const v = last(q, name);
  if (v === undefined) return undefined;
  if (v === 'true' || v === '') return true;
  if (v === 'false') return false;
  return bad(`${name}: must be true or false, not ${JSON.stringify(v)}`);
}

function integer(q: Query, name: string, min: number, max: number): number | undefined {
  const v = last(q, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) bad(`${name}: must be an integer from ${min} to ${max}`);
  return n;
}

/** A keyword without Deepgram's `:intensifier` suffix. */
function keywordTerm(k: string): string {
  const m = /^(.*?):-?\d+(?:\.\d+)?$/.exec(k);
  return (m ? m[1]! : k).trim();
}

export function mapListenQuery(q: Query): ListenRequest {
  for (const name of Object.keys(q)) {
    if (Object.hasOwn(ACTING, name) || Object.hasOwn(IGNORED, name)) continue;
    if (Object.hasOwn(REFUSED, name)) bad(`${name}: not supported by scribed (${REFUSED[name as keyof typeof REFUSED]})`);
    bad(`${name}: unknown or unsupported parameter`);
  }
  const encoding = last(q, 'encoding');
  const sampleRate = integer(q, 'sample_rate', 8000, 48000);
  const channels = integer(q, 'channels', 1, 2);
  let raw: ListenRequest['raw'] = null;
  if (encoding !== undefined) {
    if (!(RAW_ENCODINGS as readonly string[]).includes(encoding)) bad(`encoding: ${JSON.stringify(encoding)} is not supported; send linear16, mulaw or alaw, or a container (wav, mp3, flac, ogg, m4a ...) without encoding`);
    if (sampleRate === undefined) bad('sample_rate: required with encoding');
    raw = { encoding: encoding as RawEncoding, sampleRate, channels: channels ?? 1 };
  } else if (channels !== undefined && channels !== 1) {
    bad('channels: applies to headerless audio only (with encoding); a container names its channels');
  }
  const multichannel = bool(q, 'multichannel') ?? false;
  const readable = [bool(q, 'punctuate'), bool(q, 'smart_format'), bool(q, 'numerals')].some((b) => b === true);
  const keepFillers = bool(q, 'filler_words') ?? false;
  const hints = [...all(q, 'keywords').map(keywordTerm), ...all(q, 'keyterm').map((k) => k.trim())].filter((h) => h !== '');
  const options: Record<string, unknown> = {};
  if (readable) options.readableText = true;
  if (!keepFillers) options.removeDisfluencies = true;
  if (hints.length > 0) options.vocabularyHints = [...new Set(hints)];
  if (multichannel) options.multichannel = true;
  const tags = all(q, 'tag').map((t) => t.trim()).filter((t) => t !== '');
  const nativeFields: Record<string, string> = { title: tags.length > 0 ? `Deepgram: ${tags.join(', ')}`.slice(0, 200) : 'Deepgram transcription', options: JSON.stringify(options) };
  const language = last(q, 'language');
  if (language !== undefined && language.trim() !== '') nativeFields.languageHint = language.trim();
  return { nativeFields, raw, utterances: bool(q, 'utterances') ?? false, multichannel, model: last(q, 'model') ?? null };
}
