// A leg's partials and finals as AudioHook `transcript` entities (the `event` message Genesys
// shows): one utterance id per segment (partials and the final share it), offsets and
// durations as ISO-8601 durations on the AudioHook session's position, the text as a
// `display` interpretation with a `word` token per word and its confidence.
import { createHash } from 'node:crypto';
import type { FinalEvent, PartialEvent } from '../protocol.js';
import { formatDuration } from './duration.js';
import type { MediaChannel } from './messages.js';

export interface TranscriptToken {
  type: 'word';
  value: string;
  confidence: number;
  offset: string;
  duration: string;
  language?: string;
}

export interface TranscriptEntity {
  type: 'transcript';
  data: {
    id: string;
    channel: MediaChannel;
    channelId: number;
    isFinal: boolean;
    offset: string;
    duration: string;
    alternatives: Array<{
      confidence: number;
      languages?: string[];
      interpretations: Array<{ type: 'display'; transcript: string; tokens?: TranscriptToken[] }>;
    }>;
  };
}

export interface TranscriptContext {
  /** Stable per leg (its transcription id): utterance ids derive from it and the segment. */
  legKey: string;
  channel: MediaChannel;
  channelId: number;
  /** Microseconds to take off the leg's own time to get the AudioHook position (the leg's
   * time at this connection's open, less the position the client opened at). */
  originUs: number;
  language: string | null;
}

/** A UUID derived from the leg and segment (SHA-1 name-based layout), so a partial and its
 * final carry the same id on every node, and a reconnect keeps them. */
export function utteranceId(legKey: string, segmentId: string): string {
  const h = createHash('sha1').update(`${legKey}\u0000${segmentId}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

const clamp01 = (n: number) => Math.min(1, Math.max(0, n));

/** The entity of a partial or final; null for an empty text (nothing to show). */
export function transcriptEntity(event: PartialEvent | FinalEvent, ctx: TranscriptContext): TranscriptEntity | null {
  const text = event.text.trim();
  if (text === '') return null;
  const at = (ms: number) => formatDuration(ms * 1000 - ctx.originUs);
  const span = (startMs: number, endMs: number) => formatDuration(Math.max(0, endMs - startMs) * 1000);
  const words = event.type === 'final' ? (event.words ?? []) : [];
  const tokens: TranscriptToken[] = words.map((w) => ({
    type: 'word',
    value: w.word,
    // The recognizer may give no confidence for a word: 1, as Genesys needs a number and the
    // word is what it heard.
    confidence: clamp01(w.confidence ?? 1),
    offset: at(w.start.ms),
    duration: span(w.start.ms, w.end.ms),
    ...(ctx.language ? { language: ctx.language } : {}),
  }));
  const known = words.map((w) => w.confidence).filter((c): c is number => c !== null);
  const confidence = known.length > 0 ? clamp01(known.reduce((a, b) => a + b, 0) / known.length) : 1;
  return {
    type: 'transcript',
    data: {
      id: utteranceId(ctx.legKey, event.segmentId),
      channel: ctx.channel,
      channelId: ctx.channelId,
      isFinal: event.type === 'final',
      offset: at(event.start.ms),
      duration: span(event.start.ms, event.end.ms),
      alternatives: [
        {
          confidence,
          ...(ctx.language ? { languages: [ctx.language] } : {}),
          interpretations: [{ type: 'display', transcript: text, ...(tokens.length > 0 ? { tokens } : {}) }],
        },
      ],
    },
  };
}
