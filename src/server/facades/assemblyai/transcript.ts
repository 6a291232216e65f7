// A History row (or a stereo call's two legs) as AssemblyAI's transcript object. Pure.
// Times in milliseconds, confidences the recognizer's (0 where it gives none). A stereo
// transcript's channel 0 is speaker A / channel "1", channel 1 speaker B / channel "2"; each
// segment scribed cut at a pause is one utterance. What the answer says of the request is
// read back from the stored job (readable text, fillers, channels, redaction, language):
// audio_url and webhook_url are echoed by the create answer only (not kept).
import { toJson, type TranscriptSegment } from '../../../core/transcript.js';
import type { BatchJobRecord, TranscriptionRecord } from '../../../store/store.js';
import { CHANNEL_SPEAKERS, PII_POLICIES } from './params.js';

export type AaiStatus = 'queued' | 'processing' | 'completed' | 'error';

export interface Leg {
  row: TranscriptionRecord;
  job: BatchJobRecord | null;
  segments: readonly TranscriptSegment[];
}

/** The transcript's status from its jobs: any failed is error; all done is completed. */
export function statusOf(legs: readonly Leg[]): { status: AaiStatus; error: string | null } {
  const failed = legs.find((l) => l.job?.state === 'FAILED' || (l.job === null && l.row.status === 'FAILED'));
  if (failed) return { status: 'error', error: `the transcription failed: ${failed.job?.error ?? 'unknown reason'}; nothing was charged` };
  const done = (l: Leg) => (l.job === null ? l.row.status === 'COMPLETED' : l.job.state === 'DONE');
  if (legs.every(done)) return { status: 'completed', error: null };
  if (legs.some((l) => l.job?.state === 'RUNNING' || done(l))) return { status: 'processing', error: null };
  return { status: 'queued', error: null };
}

const mean = (xs: number[]) => (xs.length === 0 ? 0 : Number((xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(6)));

/** The request as the stored job says it was made. */
function requestOf(legs: readonly Leg[]): Record<string, unknown> {
  const o = legs[0]?.job?.options ?? {};
  const readable = o.readableText === true;
  const redact = Array.isArray(o.redact) ? (o.redact as string[]) : [];
  const stereo = legs.length > 1;
  return {
    punctuate: readable,
    format_text: readable,
    disfluencies: o.removeDisfluencies !== true,
    speaker_labels: stereo,
    multichannel: stereo,
    audio_channels: stereo ? legs.length : null,
    language_code: legs[0]?.row.languageHint ?? null,
    redact_pii: redact.length > 0,
    redact_pii_policies: redact.length > 0 ? Object.keys(PII_POLICIES).filter((p) => redact.includes(PII_POLICIES[p]!)) : null,
    word_boost: Array.isArray(o.vocabularyHints) ? o.vocabularyHints : [],
  };
}

/** The features scribed does not serve, as AssemblyAI answers when they were not asked for. */
const NOT_SERVED = {
  auto_chapters: false,
  chapters: null,
  auto_highlights: false,
  auto_highlights_result: null,
  content_safety: false,
  content_safety_labels: null,
  iab_categories: false,
  iab_categories_result: null,
  entity_detection: false,
  entities: null,
  sentiment_analysis: false,
  sentiment_analysis_results: null,
  summarization: false,
  summary: null,
  filter_profanity: false,
  language_detection: false,
  custom_spelling: null,
  redact_pii_audio: false,
  speech_threshold: null,
  throttled: false,
};

/** The transcript object; `echo` (the create answer) overrides what is read back. */
export function transcriptObject(
  id: string,
  legs: readonly Leg[],
  model: string,
  echo: Record<string, unknown> = {},
): Record<string, unknown> {
  const { status, error } = statusOf(legs);
  const stereo = legs.length > 1;
  const base: Record<string, unknown> = {
    id,
    status,
    audio_url: null,
    webhook_url: null,
    webhook_auth: false,
    webhook_auth_header_name: null,
    webhook_status_code: null,
    speech_model: null,
    speech_model_used: model,
    language_model: 'assemblyai_default',
    acoustic_model: 'assemblyai_default',
    ...NOT_SERVED,
    ...requestOf(legs),
    ...echo,
    text: null,
    words: null,
    utterances: null,
    confidence: null,
    audio_duration: null,
  };
  if (error !== null) base.error = error;
  if (status !== 'completed') return base;
  const docs = legs.map((l) =>
    toJson(
      {
        transcriptionId: l.row.id,
        title: l.row.title,
        status: l.row.status,
        sampleRateHz: l.row.sampleRateHz,
        audioSamples: l.row.audioSamples,
      },
      l.segments,
    ),
  );
  const wordOf = (channel: number) => (w: (typeof docs)[number]['segments'][number]['words'][number]) => ({
    text: w.word,
    start: w.startMs,
    end: w.endMs,
    confidence: w.confidence ?? 0,
    speaker: stereo ? CHANNEL_SPEAKERS[channel]! : null,
    ...(stereo ? { channel: String(channel + 1) } : {}),
  });
  const words = docs
    .flatMap((d, c) => d.segments.flatMap((s) => s.words.map(wordOf(c))))
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const utterances = stereo
    ? docs
        .flatMap((d, c) =>
          d.segments
            .filter((s) => s.text.trim() !== '')
            .map((s) => {
              const uw = s.words.map(wordOf(c));
              return {
                speaker: CHANNEL_SPEAKERS[c]!,
                channel: String(c + 1),
                text: s.text,
                start: s.startMs,
                end: s.endMs,
                confidence: mean(uw.map((w) => w.confidence)),
                words: uw,
              };
            }),
        )
        .sort((a, b) => a.start - b.start || a.channel.localeCompare(b.channel))
    : null;
  const text = stereo ? (utterances ?? []).map((u) => u.text.trim()).join(' ') : docs[0]!.text;
  return {
    ...base,
    text,
    words,
    utterances,
    confidence: mean(words.map((w) => w.confidence)),
    audio_duration: Math.round(Math.max(0, ...docs.map((d) => d.durationMs)) / 1000),
  };
}

/** A transcript as AssemblyAI's delete answers it: its words gone. */
export function deletedObject(id: string, legs: readonly Leg[], model: string): Record<string, unknown> {
  return {
    ...transcriptObject(id, legs, model),
    audio_url: 'http://deleted_by_user',
    text: 'Deleted by user.',
    words: null,
    utterances: null,
    confidence: null,
  };
}

/** One entry of GET /v2/transcript. */
export function listItem(id: string, legs: readonly Leg[], resourceUrl: string): Record<string, unknown> {
  const { status, error } = statusOf(legs);
  return {
    id,
    resource_url: resourceUrl,
    status,
    created: legs[0]!.row.createdAt,
    completed:
      status === 'completed' || status === 'error'
        ? (legs
            .map((l) => l.row.completedAt ?? l.row.updatedAt)
            .sort()
            .at(-1) ?? null)
        : null,
    audio_url: null,
    error,
  };
}
