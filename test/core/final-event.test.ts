import { describe, expect, it } from 'vitest';
import { beginEpoch, initialCursor, placeFrame } from '../../src/core/capture-cursor.js';
import { finalEvent } from '../../src/core/final-event.js';
import { parseServerEvent } from '../../src/core/protocol.js';

// 1 s of audio in epoch 1, then a resume: epoch 2 starts at session sample 16000.
const cursor = beginEpoch(placeFrame(initialCursor(), { epoch: 1, sampleOffset: 0, samples: 16000 }, 0).next);

const shaped = {
  text: 'hello world',
  words: [
    { word: 'hello', startSample: '16000', endSample: '20000', confidence: 0.9 },
    { word: 'world', startSample: '20000', endSample: '24000', confidence: null },
  ],
  annotations: { rawText: 'um hello world' },
};

describe('finalEvent', () => {
  it('times the segment, its words and characters on both clocks, with the annotations', () => {
    const e = finalEvent(cursor, 16000, {
      segmentId: 'seg_3',
      trigger: 'vad',
      startSample: 16000n,
      endSample: 24000n,
      shaped,
      redactions: [],
      suppressedWords: 0,
      aligned: true,
    });
    expect(e).toMatchObject({ type: 'final', segmentId: 'seg_3', text: 'hello world', rawText: 'um hello world', trigger: 'vad' });
    expect(e.start).toEqual({ sample: '16000', ms: 1000, epoch: 2, epochSample: 0, epochMs: 0 });
    expect(e.end).toEqual({ sample: '24000', ms: 1500, epoch: 2, epochSample: 8000, epochMs: 500 });
    expect(e.words?.map((w) => [w.word, w.confidence, w.start.epochMs, w.end.ms])).toEqual([
      ['hello', 0.9, 0, 1250],
      ['world', null, 250, 1500],
    ]);
    expect(e.characters?.map((c) => c.char).join('')).toBe('hello world');
    expect(e).not.toHaveProperty('suppressedWords');
    expect(parseServerEvent(JSON.stringify(e)).ok).toBe(true);
  });

  it('without alignment no word or character times; suppressed words are counted when there are any', () => {
    const e = finalEvent(cursor, 16000, {
      segmentId: 'seg_0',
      trigger: 'commit',
      startSample: 16000n,
      endSample: 24000n,
      shaped,
      redactions: [],
      suppressedWords: 2,
      aligned: false,
    });
    expect(e).not.toHaveProperty('words');
    expect(e).not.toHaveProperty('characters');
    expect(e.suppressedWords).toBe(2);
  });
});
