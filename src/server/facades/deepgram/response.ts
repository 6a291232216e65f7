// Finished transcriptions (one per channel) as Deepgram's pre-recorded response. Pure.
// Times in seconds; a word's confidence is the recognizer's (0 where it gives none), and with
// readable text its punctuated_word is the readable form; an
// alternative's confidence is the mean of its words'. Each segment scribed cut at a pause is
// one utterance. request_id is the request's (the dg-request-id header); metadata also names
// the History rows (transcription_ids, one per channel), where the transcript is kept.
import { randomUUID } from 'node:crypto';
import { toJson, type TranscriptMeta, type TranscriptSegment } from '../../../core/transcript.js';

export interface ChannelTranscript {
  meta: TranscriptMeta;
  segments: readonly TranscriptSegment[];
}

export interface ListenMeta {
  requestId: string;
  sha256: string;
  created: string;
  model: string;
  utterances: boolean;
  /** Readable text was asked for (punctuate, smart_format, numerals): words carry
   * punctuated_word, the readable form (the words are rewritten with the text). */
  readable: boolean;
}

const mean = (xs: number[]) => (xs.length === 0 ? 0 : Number((xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(6)));

export function listenResponse(channels: readonly ChannelTranscript[], m: ListenMeta) {
  const docs = channels.map((c) => toJson(c.meta, c.segments));
  const duration = Math.max(0, ...docs.map((d) => d.durationMs)) / 1000;
  const word = (w: (typeof docs)[number]['segments'][number]['words'][number]) => ({
    word: w.word,
    start: w.startMs / 1000,
    end: w.endMs / 1000,
    confidence: w.confidence ?? 0,
    ...(m.readable ? { punctuated_word: w.word } : {}),
  });
  const wordsOf = (d: (typeof docs)[number]) => d.segments.flatMap((s) => s.words.map(word));
  const results: Record<string, unknown> = {
    channels: docs.map((d) => {
      const words = wordsOf(d);
      return { alternatives: [{ transcript: d.text, confidence: mean(words.map((w) => w.confidence)), words }] };
    }),
  };
  if (m.utterances) {
    results.utterances = docs
      .flatMap((d, channel) =>
        d.segments
          .filter((s) => s.text.trim() !== '')
          .map((s) => {
            const words = s.words.map(word);
            return {
              start: s.startMs / 1000,
              end: s.endMs / 1000,
              confidence: mean(words.map((w) => w.confidence)),
              channel,
              transcript: s.text,
              words,
              id: randomUUID(),
            };
          }),
      )
      .sort((a, b) => a.start - b.start || a.channel - b.channel);
  }
  return {
    metadata: {
      transaction_key: 'deprecated',
      request_id: m.requestId,
      sha256: m.sha256,
      created: m.created,
      duration,
      channels: channels.length,
      models: [m.model],
      model_info: { [m.model]: { name: m.model, version: '1', arch: 'scribed' } },
      transcription_ids: channels.map((c) => c.meta.transcriptionId),
    },
    results,
  };
}
