// A finished transcription as OpenAI's transcription response, in each response_format. Pure.
// text, srt and vtt are the native transcript downloads (src/core/transcript.ts); json and
// verbose_json are built from the native JSON transcript. What differs from OpenAI
// (docs/compat.md): segment ids count segments with text; `tokens` is empty (the recognizer
// has no tokenizer); `temperature` is 0 (it does not sample); `avg_logprob` is the mean log
// of the segment's word confidences (0 when the recognizer gives none); `no_speech_prob` is 0
// (segments are cut at speech); `compression_ratio` is the text's bytes over its deflated
// bytes, the quantity OpenAI reports.
import { deflateRawSync } from 'node:zlib';
import { toJson, toSrt, toText, toVtt, type TranscriptMeta, type TranscriptSegment } from '../../../core/transcript.js';
import type { Granularity, ResponseFormat } from './request.js';

export interface OpenAiBody {
  contentType: string;
  body: string;
}

export interface FinishedAudio {
  meta: TranscriptMeta;
  segments: readonly TranscriptSegment[];
  /** The language asked for, else the recognizer's first (BCP-47). */
  language: string;
}

const englishNames = new Intl.DisplayNames(['en'], { type: 'language' });

/** OpenAI names the language in English, lower case ("english"). */
export function languageName(tag: string): string {
  try {
    return (englishNames.of(tag.split('-')[0]!) ?? tag).toLowerCase();
  } catch {
    return tag.toLowerCase();
  }
}

function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length === 0) return 0;
  return Number((bytes.length / deflateRawSync(bytes).length).toFixed(6));
}

function avgLogprob(confidences: Array<number | null>): number {
  const known = confidences.filter((c): c is number => c !== null && c > 0);
  if (known.length === 0) return 0;
  return Number((known.reduce((s, c) => s + Math.log(Math.min(1, c)), 0) / known.length).toFixed(6));
}

const seconds = (ms: number) => ms / 1000;

export function openAiTranscription(audio: FinishedAudio, format: ResponseFormat, granularities: readonly Granularity[]): OpenAiBody {
  const rate = audio.meta.sampleRateHz;
  switch (format) {
    case 'text':
      return { contentType: 'text/plain; charset=utf-8', body: toText(audio.segments) };
    case 'srt':
      return { contentType: 'text/plain; charset=utf-8', body: toSrt(audio.segments, rate) };
    case 'vtt':
      return { contentType: 'text/plain; charset=utf-8', body: toVtt(audio.segments, rate) };
    default:
      break;
  }
  const t = toJson(audio.meta, audio.segments);
  const usage = { type: 'duration', seconds: Math.ceil(t.durationMs / 1000) };
  if (format === 'json') return { contentType: 'application/json', body: JSON.stringify({ text: t.text, usage }) };
  const spoken = t.segments.filter((s) => s.text.trim() !== '');
  const verbose: Record<string, unknown> = {
    task: 'transcribe',
    language: languageName(audio.language),
    duration: seconds(t.durationMs),
    text: t.text,
  };
  if (granularities.includes('segment')) {
    verbose.segments = spoken.map((s, id) => ({
      id,
      seek: 0,
      start: seconds(s.startMs),
      end: seconds(s.endMs),
      text: s.text,
      tokens: [],
      temperature: 0,
      avg_logprob: avgLogprob(s.words.map((w) => w.confidence)),
      compression_ratio: compressionRatio(s.text),
      no_speech_prob: 0,
    }));
  }
  if (granularities.includes('word')) {
    verbose.words = spoken.flatMap((s) => s.words.map((w) => ({ word: w.word, start: seconds(w.startMs), end: seconds(w.endMs) })));
  }
  verbose.usage = usage;
  return { contentType: 'application/json', body: JSON.stringify(verbose) };
}

/** `stream: true`: the transcript as OpenAI's server-sent events, one `transcript.text.delta`
 * per segment with words (their deltas add up to the text of the `done` event), then
 * `transcript.text.done` with the text and usage. Sent once the job is done: a batch job's
 * segments are not released one by one (docs/compat.md). */
export function openAiTranscriptStream(audio: FinishedAudio): string {
  const t = toJson(audio.meta, audio.segments);
  const events: object[] = [];
  let sent = '';
  t.segments.forEach((seg, i) => {
    const text = seg.text.trim();
    if (text === '') return;
    // The text joins segments with one space; each delta carries its separator.
    const at = t.text.indexOf(text, sent.length);
    const delta = at >= 0 ? t.text.slice(sent.length, at + text.length) : `${sent === '' ? '' : ' '}${text}`;
    sent += delta;
    events.push({ type: 'transcript.text.delta', delta, segment_id: `seg_${i}` });
  });
  if (sent !== t.text) events.push({ type: 'transcript.text.delta', delta: t.text.slice(sent.length) });
  events.push({ type: 'transcript.text.done', text: t.text, usage: { type: 'duration', seconds: Math.ceil(t.durationMs / 1000) } });
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
}
