import { describe, expect, it } from 'vitest';
import { transcriptEntity, utteranceId } from '../../../src/core/audiohook/transcript.js';
import type { FinalEvent, PartialEvent } from '../../../src/core/protocol.js';

const tp = (ms: number) => ({ sample: String(ms * 8), ms, epoch: 1, epochSample: ms * 8, epochMs: ms });
const ctx = { legKey: 'stt_1', channel: 'internal' as const, channelId: 1, originUs: 1_000_000, language: 'en-US' };

describe('AudioHook transcript entities', () => {
  it('a final: offsets on the session position, tokens with confidences, the same id as its partials', () => {
    const final: FinalEvent = {
      type: 'final',
      segmentId: 'seg_3',
      text: 'hello there',
      trigger: 'vad',
      start: tp(1500),
      end: tp(2750),
      words: [
        { word: 'hello', confidence: 0.9, start: tp(1500), end: tp(2000) },
        { word: 'there', confidence: null, start: tp(2100), end: tp(2750) },
      ],
    };
    const e = transcriptEntity(final, ctx)!;
    expect(e).toEqual({
      type: 'transcript',
      data: {
        id: utteranceId('stt_1', 'seg_3'),
        channel: 'internal',
        channelId: 1,
        isFinal: true,
        offset: 'PT0.5S',
        duration: 'PT1.25S',
        alternatives: [
          {
            confidence: 0.9,
            languages: ['en-US'],
            interpretations: [
              {
                type: 'display',
                transcript: 'hello there',
                tokens: [
                  { type: 'word', value: 'hello', confidence: 0.9, offset: 'PT0.5S', duration: 'PT0.5S', language: 'en-US' },
                  { type: 'word', value: 'there', confidence: 1, offset: 'PT1.1S', duration: 'PT0.65S', language: 'en-US' },
                ],
              },
            ],
          },
        ],
      },
    });
    expect(e.data.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const partial: PartialEvent = { type: 'partial', segmentId: 'seg_3', text: 'hello', start: tp(1500), end: tp(2000) };
    const p = transcriptEntity(partial, ctx)!;
    expect(p.data).toMatchObject({ id: e.data.id, isFinal: false, offset: 'PT0.5S' });
    expect(p.data.alternatives[0]!.interpretations[0]!.tokens).toBeUndefined();
    expect(utteranceId('stt_2', 'seg_3')).not.toBe(e.data.id);
    expect(transcriptEntity({ ...partial, text: '  ' }, ctx)).toBeNull();
  });
});
