// Transcript rendering from stored segments, in the four download formats. Sample positions
// are session-wide at the input rate; they become milliseconds by floor(sample*1000/rate)
// in bigint (same rule as time points on the socket), so every format agrees to the ms.
//
// Decisions: segments render in index order whatever order they are given; a segment whose
// text is empty or only whitespace (a commit with silence) appears in JSON, which is the
// complete record, but not in txt, srt or vtt, which are for reading. Line breaks inside a
// segment's text become spaces, so one segment is always one line / one cue text line.
import { samplesToMs } from './capture-cursor.js';
import { segmentId } from './protocol.js';

export interface TranscriptWord {
  word: string;
  startSample: string;
  endSample: string;
  confidence: number | null;
}

export interface TranscriptSegment {
  index: number;
  startSample: bigint;
  endSample: bigint;
  text: string;
  words: TranscriptWord[];
  /** Text-option results: `rawText` and `entities` are copied into the JSON segment. */
  annotations?: Record<string, unknown>;
}

export interface TranscriptMeta {
  transcriptionId: string;
  title: string;
  status: string;
  sampleRateHz: number;
  /** Total audio held; when absent, the duration is the last segment's end. */
  audioSamples?: bigint;
}

export interface TranscriptJson {
  transcriptionId: string;
  title: string;
  status: string;
  sampleRateHz: number;
  durationMs: number;
  text: string;
  segments: Array<{
    id: string;
    startMs: number;
    endMs: number;
    startSample: string;
    endSample: string;
    text: string;
    words: Array<{ word: string; startMs: number; endMs: number; confidence: number | null }>;
    rawText?: string;
    entities?: unknown[];
    /** The redact option's spans: type and times, never a value. */
    redactions?: Array<{ type: string; startMs: number; endMs: number }>;
  }>;
}

function ordered<T extends { index: number }>(segments: readonly T[]): T[] {
  return [...segments].sort((a, b) => a.index - b.index);
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

function readable<T extends TranscriptSegment>(segments: readonly T[]): T[] {
  return ordered(segments).filter((s) => oneLine(s.text) !== '');
}

function ms(samples: bigint, rate: number): number {
  return Number(samplesToMs(samples, rate));
}

export function toJson(meta: TranscriptMeta, segments: readonly TranscriptSegment[]): TranscriptJson {
  const rate = meta.sampleRateHz;
  const segs = ordered(segments);
  let durationSamples = meta.audioSamples ?? 0n;
  for (const s of segs) if (s.endSample > durationSamples) durationSamples = s.endSample;
  return {
    transcriptionId: meta.transcriptionId,
    title: meta.title,
    status: meta.status,
    sampleRateHz: rate,
    durationMs: ms(durationSamples, rate),
    text: segs
      .map((s) => oneLine(s.text))
      .filter((t) => t !== '')
      .join(' '),
    segments: segs.map((s) => ({
      id: segmentId(s.index),
      startMs: ms(s.startSample, rate),
      endMs: ms(s.endSample, rate),
      startSample: s.startSample.toString(),
      endSample: s.endSample.toString(),
      text: s.text,
      words: s.words.map((w) => ({
        word: w.word,
        startMs: ms(BigInt(w.startSample), rate),
        endMs: ms(BigInt(w.endSample), rate),
        confidence: w.confidence,
      })),
      ...(typeof s.annotations?.rawText === 'string' ? { rawText: s.annotations.rawText } : {}),
      ...(Array.isArray(s.annotations?.entities) ? { entities: s.annotations.entities as unknown[] } : {}),
      ...(Array.isArray(s.annotations?.redactions)
        ? {
            redactions: (s.annotations.redactions as Array<{ type: string; startSample: string; endSample: string }>).map((r) => ({
              type: r.type,
              startMs: ms(BigInt(r.startSample), rate),
              endMs: ms(BigInt(r.endSample), rate),
            })),
          }
        : {}),
    })),
  };
}

/** Plain text: one line per non-empty segment. */
export function toText(segments: readonly TranscriptSegment[]): string {
  return readable(segments)
    .map((s) => `${oneLine(s.text)}\n`)
    .join('');
}

/** `HH:MM:SS<sep>mmm`; hours grow past two digits rather than wrapping. */
export function formatTimestamp(totalMs: bigint, separator: ',' | '.'): string {
  const msPart = totalMs % 1000n;
  const totalSeconds = totalMs / 1000n;
  const seconds = totalSeconds % 60n;
  const minutes = (totalSeconds / 60n) % 60n;
  const hours = totalSeconds / 3600n;
  const pad = (v: bigint, n: number) => v.toString().padStart(n, '0');
  return `${pad(hours, 2)}:${pad(minutes, 2)}:${pad(seconds, 2)}${separator}${pad(msPart, 3)}`;
}

/** SubRip: cues numbered from 1, `HH:MM:SS,mmm`, a blank line between cues. */
export function toSrt(segments: readonly TranscriptSegment[], sampleRateHz: number): string {
  return readable(segments)
    .map((s, i) => {
      const start = formatTimestamp(samplesToMs(s.startSample, sampleRateHz), ',');
      const end = formatTimestamp(samplesToMs(s.endSample, sampleRateHz), ',');
      return `${i + 1}\n${start} --> ${end}\n${oneLine(s.text)}\n`;
    })
    .join('\n');
}

/** WebVTT cue text may not contain raw `&`, `<` or `>` (they start entities and tags). */
function vttEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** WebVTT: `WEBVTT` header, a blank line, then cues with `HH:MM:SS.mmm` times. */
export function toVtt(segments: readonly TranscriptSegment[], sampleRateHz: number): string {
  const cues = readable(segments).map((s) => {
    const start = formatTimestamp(samplesToMs(s.startSample, sampleRateHz), '.');
    const end = formatTimestamp(samplesToMs(s.endSample, sampleRateHz), '.');
    return `${start} --> ${end}\n${vttEscape(oneLine(s.text))}\n`;
  });
  return ['WEBVTT\n', ...cues].join('\n');
}
