// Transcript rendering in json, txt, srt and vtt, checked against exact expected output.
import { describe, expect, it } from 'vitest';
import { formatTimestamp, toJson, toSrt, toText, toVtt, type TranscriptSegment } from '../../src/core/transcript.js';

const RATE = 16000;
const HOUR = 3600n * 16000n;

// Deliberately out of order, with an empty (silent) segment in the middle.
const SEGMENTS: TranscriptSegment[] = [
  { index: 2, startSample: HOUR + 61n * 16000n + 8n, endSample: HOUR + 62n * 16000n + 16n, text: 'a <b> & c\nd', words: [] },
  {
    index: 0,
    startSample: 0n,
    endSample: 24000n,
    text: 'hello world',
    words: [
      { word: 'hello', startSample: '0', endSample: '8000', confidence: 0.9 },
      { word: 'world', startSample: '8000', endSample: '23999', confidence: null },
    ],
  },
  { index: 1, startSample: 24000n, endSample: 32000n, text: '  ', words: [] },
];

const META = { transcriptionId: 'stt_x', title: 'Call', status: 'COMPLETED', sampleRateHz: RATE };

describe('toJson', () => {
  it('renders every segment in order with times on both scales', () => {
    expect(toJson(META, SEGMENTS)).toEqual({
      transcriptionId: 'stt_x',
      title: 'Call',
      status: 'COMPLETED',
      sampleRateHz: 16000,
      durationMs: 3662001,
      text: 'hello world a <b> & c d',
      segments: [
        {
          id: 'seg_0',
          startMs: 0,
          endMs: 1500,
          startSample: '0',
          endSample: '24000',
          text: 'hello world',
          words: [
            { word: 'hello', startMs: 0, endMs: 500, confidence: 0.9 },
            { word: 'world', startMs: 500, endMs: 1499, confidence: null },
          ],
        },
        { id: 'seg_1', startMs: 1500, endMs: 2000, startSample: '24000', endSample: '32000', text: '  ', words: [] },
        {
          id: 'seg_2',
          startMs: 3661000,
          endMs: 3662001,
          startSample: String(HOUR + 61n * 16000n + 8n),
          endSample: String(HOUR + 62n * 16000n + 16n),
          text: 'a <b> & c\nd',
          words: [],
        },
      ],
    });
  });

  it('uses the audio length for the duration when it is longer than the last segment', () => {
    expect(toJson({ ...META, audioSamples: 160000n }, SEGMENTS.slice(1, 2)).durationMs).toBe(10000);
    expect(toJson(META, []).durationMs).toBe(0);
    expect(toJson(META, []).text).toBe('');
  });

  it('serialises to JSON (no bigints left)', () => {
    expect(() => JSON.stringify(toJson(META, SEGMENTS))).not.toThrow();
  });
});

describe('toText', () => {
  it('writes one line per non-empty segment', () => {
    expect(toText(SEGMENTS)).toBe('hello world\na <b> & c d\n');
    expect(toText([])).toBe('');
  });
});

describe('toSrt', () => {
  it('numbers cues from 1, skips empty segments, uses HH:MM:SS,mmm', () => {
    expect(toSrt(SEGMENTS, RATE)).toBe('1\n00:00:00,000 --> 00:00:01,500\nhello world\n\n2\n01:01:01,000 --> 01:01:02,001\na <b> & c d\n');
    expect(toSrt([], RATE)).toBe('');
  });

  it('converts at the session rate', () => {
    const seg = [{ index: 0, startSample: 4000n, endSample: 12000n, text: 'x', words: [] }];
    expect(toSrt(seg, 8000)).toBe('1\n00:00:00,500 --> 00:00:01,500\nx\n');
  });
});

describe('toVtt', () => {
  it('writes the header and escaped cues with HH:MM:SS.mmm', () => {
    expect(toVtt(SEGMENTS, RATE)).toBe(
      'WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nhello world\n\n01:01:01.000 --> 01:01:02.001\na &lt;b&gt; &amp; c d\n',
    );
    expect(toVtt([], RATE)).toBe('WEBVTT\n');
  });
});

describe('formatTimestamp', () => {
  it('pads fields and lets hours grow', () => {
    expect(formatTimestamp(0n, ',')).toBe('00:00:00,000');
    expect(formatTimestamp(59_999n, '.')).toBe('00:00:59.999');
    expect(formatTimestamp(3_600_000n, ',')).toBe('01:00:00,000');
    expect(formatTimestamp(100n * 3_600_000n + 61_001n, '.')).toBe('100:01:01.001');
  });
});
