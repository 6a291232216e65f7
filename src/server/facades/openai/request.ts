// OpenAI's POST /v1/audio/transcriptions form fields, mapped onto a native batch request
// (the form fields of src/batch/request.ts). Pure. What each field does (docs/compat.md):
// - file: the audio, any format the native batch upload takes (by content);
// - model: one of the models GET /v1/models lists (the node's own, or an OpenAI name served
//   as an alias of it); anything else is refused, as OpenAI refuses an unknown model;
// - language: the native languageHint (checked against the recognizer's languages);
// - prompt: vocabulary hints (comma- or line-separated terms), as native vocabularyHints;
// - response_format: json (default), text, srt, vtt, verbose_json;
// - timestamp_granularities[]: segment (default) and/or word, with verbose_json only;
// - temperature: accepted (0 to 1) and ignored: the recognizer does not sample;
// - stream: true answers server-sent transcript.text.delta/done events (json only), for every
//   served model name.
// Any other field is refused by name (OpenAI's `unknown_parameter`), never silently dropped.
import { OpenAiError } from './errors.js';
import { RESPONSE_FORMATS, type Granularity, type ResponseFormat } from './names.js';

export type { Granularity, ResponseFormat } from './names.js';

const KNOWN_FIELDS = [
  'model',
  'language',
  'prompt',
  'response_format',
  'temperature',
  'timestamp_granularities[]',
  'timestamp_granularities',
  'stream',
] as const;

export interface TranscriptionRequest {
  model: string;
  format: ResponseFormat;
  granularities: Granularity[];
  /** The native batch form fields (title, languageHint, options). */
  nativeFields: Record<string, string>;
  /** The language named in verbose_json: the one asked for, or the recognizer's first. */
  language: string | null;
  /** Answer as server-sent events (`stream: true`). */
  stream: boolean;
}

function bad(param: string, message: string, code: string | null = null): never {
  throw new OpenAiError(400, 'invalid_request_error', message, param, code);
}

/** Terms of a prompt: split at commas, semicolons and line breaks, trimmed, deduplicated. */
export function promptTerms(prompt: string): string[] {
  const seen = new Set<string>();
  for (const t of prompt.split(/[,;\r\n]+/)) {
    const term = t.trim();
    if (term !== '') seen.add(term);
  }
  return [...seen];
}

/**
 * `fields`: the form's text fields; repeated ones (timestamp_granularities[]) as arrays.
 * `models`: the model ids GET /v1/models lists.
 */
export function mapTranscriptionRequest(fields: Readonly<Record<string, string[]>>, models: readonly string[]): TranscriptionRequest {
  for (const [name, values] of Object.entries(fields)) {
    if (!(KNOWN_FIELDS as readonly string[]).includes(name))
      bad(name, `Unrecognized request argument supplied: ${name}`, 'unknown_parameter');
    if (values.length > 1 && !name.startsWith('timestamp_granularities')) bad(name, `${name} was given more than once`);
  }
  const one = (name: string): string | undefined => fields[name]?.[0];
  const model = one('model');
  if (model === undefined || model.trim() === '') bad('model', 'you must provide a model parameter');
  if (!models.includes(model))
    bad('model', `The model \`${model}\` does not exist; GET /v1/models lists the models this server serves`, 'model_not_found');

  const format = (one('response_format') ?? 'json') as ResponseFormat;
  if (!(RESPONSE_FORMATS as readonly string[]).includes(format))
    bad('response_format', `response_format must be one of ${RESPONSE_FORMATS.join(', ')}`);

  const granularities = [...(fields['timestamp_granularities[]'] ?? []), ...(fields.timestamp_granularities ?? [])] as Granularity[];
  for (const g of granularities)
    if (g !== 'word' && g !== 'segment')
      bad('timestamp_granularities', `timestamp_granularities must be word or segment, not ${JSON.stringify(g)}`);
  if (granularities.length > 0 && format !== 'verbose_json')
    bad('timestamp_granularities', 'timestamp_granularities needs response_format verbose_json');

  const temperature = one('temperature');
  if (temperature !== undefined && temperature.trim() !== '') {
    const t = Number(temperature);
    if (!Number.isFinite(t) || t < 0 || t > 1) bad('temperature', 'temperature must be a number from 0 to 1');
  }

  const streamField = one('stream');
  if (streamField !== undefined && streamField !== 'true' && streamField !== 'false') bad('stream', 'stream must be true or false');
  // Every model streams here (all are the node's recognizer; OpenAI's whisper-1 ignores the
  // flag, which leaves its SDK reading a stream that never comes). Streaming answers json only.
  const stream = streamField === 'true';
  if (stream && format !== 'json') bad('response_format', 'with stream, response_format must be json');
  const options: Record<string, unknown> = {};
  const prompt = one('prompt');
  if (prompt !== undefined && prompt.trim() !== '') options.vocabularyHints = promptTerms(prompt);
  const language = one('language');
  const nativeFields: Record<string, string> = { title: 'OpenAI transcription', options: JSON.stringify(options) };
  if (language !== undefined && language.trim() !== '') nativeFields.languageHint = language.trim();
  return {
    model,
    format,
    granularities: granularities.length === 0 ? ['segment'] : [...new Set(granularities)],
    nativeFields,
    language: nativeFields.languageHint ?? null,
    stream,
  };
}
