import { describe, expect, it } from 'vitest';
import { toJson, toText } from '../../src/core/transcript.js';

const meta = { transcriptionId: 'stt_x', title: 't', status: 'COMPLETED', sampleRateHz: 16000 };
const entity = { category: 'money', text: 'five dollars', value: 'USD 5.00', start: 4, end: 16 };

describe('transcript annotations', () => {
  it('copies rawText and entities into JSON segments, and nothing else from annotations', () => {
    const doc = toJson(meta, [
      {
        index: 0,
        startSample: 0n,
        endSample: 16000n,
        text: 'pay five dollars',
        words: [],
        annotations: { rawText: 'um pay five dollars', entities: [entity], text: 'not this' },
      },
      { index: 1, startSample: 16000n, endSample: 32000n, text: 'plain', words: [] },
    ]);
    expect(doc.segments[0]).toMatchObject({ text: 'pay five dollars', rawText: 'um pay five dollars', entities: [entity] });
    expect(doc.segments[1]).not.toHaveProperty('rawText');
    expect(doc.segments[1]).not.toHaveProperty('entities');
    expect(doc.text).toBe('pay five dollars plain');
    expect(toText([{ index: 0, startSample: 0n, endSample: 1n, text: 'pay', words: [], annotations: { rawText: 'um pay' } }])).toBe(
      'pay\n',
    );
  });
});
