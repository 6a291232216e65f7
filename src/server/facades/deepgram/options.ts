// Deepgram's pre-recorded query parameters (POST /v1/listen), mapped onto a native batch
// request. Pure. Every parameter is in exactly one of the lists of parameters.ts: acting ones
// change what scribed does, ignored ones are accepted and have no effect, and any other is
// refused with a message naming it: scribed never silently drops a parameter that would
// change the result.
import { ACTING, IGNORED, OFF_SWITCHES, RAW_ENCODINGS, REFUSED, type RawEncoding } from './parameters.js';
import { redactPolicies } from './redact.js';
import { all, bad, last, switchedOff, type Query } from './query.js';

export { all, bad, last, type Query };

export interface ListenRequest {
  /** The native batch form fields (title, languageHint, options). */
  nativeFields: Record<string, string>;
  /** Headerless audio's format, or null for a container the file itself names. */
  raw: { encoding: RawEncoding; sampleRate: number; channels: number } | null;
  utterances: boolean;
  /** punctuate, smart_format or numerals: readable text. */
  readable: boolean;
  multichannel: boolean;
  model: string | null;
  /** Where the response is POSTed when the job ends (the request answers at once), or null. */
  callback: string | null;
}

export function bool(q: Query, name: string): boolean | undefined {
  const v = last(q, name);
  if (v === undefined) return undefined;
  if (v === 'true' || v === '') return true;
  if (v === 'false') return false;
  return bad(`${name}: must be true or false, not ${JSON.stringify(v)}`);
}

export function integer(q: Query, name: string, min: number, max: number): number | undefined {
  const v = last(q, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) bad(`${name}: must be an integer from ${min} to ${max}`);
  return n;
}

/** A keyword without Deepgram's `:intensifier` suffix. */
export function keywordTerm(k: string): string {
  const m = /^(.*?):-?\d+(?:\.\d+)?$/.exec(k);
  return (m ? m[1]! : k).trim();
}

export function mapListenQuery(q: Query): ListenRequest {
  for (const name of Object.keys(q)) {
    if (Object.hasOwn(ACTING, name) || Object.hasOwn(IGNORED, name) || switchedOff(q, name, OFF_SWITCHES)) continue;
    if (Object.hasOwn(REFUSED, name)) bad(`${name}: not supported by scribed (${REFUSED[name as keyof typeof REFUSED]})`);
    bad(`${name}: unknown or unsupported parameter`);
  }
  const encoding = last(q, 'encoding');
  const sampleRate = integer(q, 'sample_rate', 8000, 48000);
  const channels = integer(q, 'channels', 1, 2);
  let raw: ListenRequest['raw'] = null;
  if (encoding !== undefined) {
    if (!(RAW_ENCODINGS as readonly string[]).includes(encoding))
      bad(
        `encoding: ${JSON.stringify(encoding)} is not supported; send linear16, mulaw or alaw, or a container (wav, mp3, flac, ogg, m4a ...) without encoding`,
      );
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
  const redact = redactPolicies(q);
  if (redact.length > 0) options.redact = redact;
  const tags = all(q, 'tag')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const nativeFields: Record<string, string> = {
    title: tags.length > 0 ? `Deepgram: ${tags.join(', ')}`.slice(0, 200) : 'Deepgram transcription',
    options: JSON.stringify(options),
  };
  const language = last(q, 'language');
  if (language !== undefined && language.trim() !== '') nativeFields.languageHint = language.trim();
  const method = last(q, 'callback_method')?.toLowerCase();
  if (method !== undefined && method !== 'post')
    bad(`callback_method: ${JSON.stringify(method)} is not supported; scribed POSTs callbacks`);
  const callback = last(q, 'callback') ?? null;
  if (method !== undefined && callback === null) bad('callback_method: applies with callback only');
  return {
    nativeFields,
    raw,
    utterances: bool(q, 'utterances') ?? false,
    readable,
    multichannel,
    model: last(q, 'model') ?? null,
    callback,
  };
}
