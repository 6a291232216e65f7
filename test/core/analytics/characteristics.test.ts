// Conversation characteristics from words at known times: talk time and share, silences over
// the threshold with their spans, interruptions (not backchannels), overtalk, pace, turns and
// loudness; categories with windows, speakers and negation; validation naming the field.
import { describe, expect, it } from 'vitest';
import { computeCharacteristics, isBackchannel, type AnalyticsLeg } from '../../../src/core/analytics/characteristics.js';
import { LevelTrackBuilder, mergeLevelTracks, summariseLoudness } from '../../../src/core/analytics/levels.js';
import { validateCreateCategory, validatePatchCategory } from '../../../src/core/analytics/categories.js';
import { evaluateCategory, windowSpan } from '../../../src/core/analytics/category-match.js';
import { ScribedError } from '../../../src/core/errors.js';
import type { TextMatchers } from '../../../src/core/rules-match.js';

/** Words evenly spread over [startMs, endMs). */
function said(text: string, startMs: number, endMs: number) {
  const ws = text.split(' ');
  const step = (endMs - startMs) / ws.length;
  return {
    startMs,
    endMs,
    text,
    words: ws.map((word, i) => ({ word, startMs: Math.round(startMs + i * step), endMs: Math.round(startMs + (i + 1) * step - 50) })),
  };
}

// agent: 0-4 s, 10-14 s; customer: 3-6 s (interrupts at 3 s, 1 s of overtalk), "yeah" at 11-11.4 s
// (a backchannel inside the agent's run), 20-22 s. Silence 6-10 s (4 s) and 14-20 s (6 s).
const agent: AnalyticsLeg = {
  speaker: 'agent',
  transcriptionId: 'stt_a',
  durationMs: 25_000,
  segments: [said('thank you for calling this call may be recorded', 0, 4000), said('let me check that for you now', 10_000, 14_000)],
  levels: { frameMs: 1000, dbfs: Array.from({ length: 25 }, (_, i) => (i < 4 || (i >= 10 && i < 14) ? -20 : -60)) },
};
const customer: AnalyticsLeg = {
  speaker: 'customer',
  transcriptionId: 'stt_c',
  durationMs: 25_000,
  segments: [said('i want to cancel my subscription', 3000, 6000), said('yeah', 11_000, 11_400), said('thank you goodbye', 20_000, 22_000)],
  levels: null,
};
const matchers: TextMatchers = {
  pattern: (p, cs, text) => {
    const m = new RegExp(p, cs ? '' : 'i').exec(text);
    return m ? { start: m.index, end: m.index + m[0].length } : null;
  },
  entities: () => [],
};

describe('characteristics', () => {
  const f = computeCharacteristics([agent, customer]);
  it('talk time, share, silences, overtalk, interruptions, turns and pace', () => {
    expect(f.durationMs).toBe(25_000);
    const [a, c] = f.legs;
    expect(a!.talkMs).toBe(3950 + 3950);
    expect(c!.talkMs).toBe(2950 + 350 + 1950);
    expect(a!.talkShare + c!.talkShare).toBeCloseTo(1, 3);
    expect(f.nonTalk.spans).toEqual([{ startMs: 14_000 - 50, endMs: 20_000 }]);
    expect(f.nonTalk.longestMs).toBe(6050);
    expect(f.overtalk.spans).toEqual([
      { startMs: 3000, endMs: 3950 },
      { startMs: 11_000, endMs: 11_350 },
    ]);
    expect(f.interruptions).toEqual([{ atMs: 3000, overlapMs: 950, by: 'customer', of: 'agent' }]);
    expect([a!.interruptionsMade, c!.interruptionsMade, c!.interruptionsReceived, a!.interruptionsReceived]).toEqual([0, 1, 0, 1]);
    expect(c!.backchannels).toBe(1);
    // agent, customer, agent, customer: the backchannel does not take a turn.
    expect(f.turns).toBe(4);
    expect(a!.words).toBe(9 + 7);
    expect(a!.wordsPerMinute).toBeCloseTo(16 / (7900 / 60_000), 0);
    expect(a!.loudness).toMatchObject({ talkDbfs: -20, peakDbfs: -20 });
    expect(c!.loudness).toBeNull();
  });

  it('a silence threshold of 3 s finds the 4 s gap and the end of the call too', () => {
    expect(computeCharacteristics([agent, customer], { silenceSeconds: 3 }).nonTalk.spans.map((s) => s.startMs)).toEqual([
      6000 - 50,
      14_000 - 50,
      22_000 - 50,
    ]);
  });

  it('backchannels: a bounded list and a bounded length', () => {
    expect(isBackchannel(['uh-huh'], 400)).toBe(true);
    expect(isBackchannel(['Okay', 'yeah'], 800)).toBe(true);
    expect(isBackchannel(['yeah'], 1500)).toBe(false);
    expect(isBackchannel(['yeah', 'but', 'no'], 800)).toBe(false);
    expect(isBackchannel(['all'], 300)).toBe(false);
  });
});

describe('levels', () => {
  it('RMS per second in dBFS, fed in pieces at their sample positions; merged with the newer winning', () => {
    const b = new LevelTrackBuilder(8000);
    const sine = new Int16Array(8000 * 2).map((_, i) => Math.round(16384 * Math.sin((2 * Math.PI * 440 * i) / 8000)));
    b.add(0n, sine.subarray(0, 3000));
    b.add(3000n, sine.subarray(3000));
    const t = b.track();
    // Half scale sine: -6.02 - 3.01 dB.
    expect(t.dbfs).toEqual([-9, -9]);
    const later = new LevelTrackBuilder(8000);
    later.add(16_000n, new Int16Array(8000));
    expect(mergeLevelTracks(t, later.track()).dbfs).toEqual([-9, -9, -100]);
    expect(summariseLoudness(t, [{ startMs: 0, endMs: 600 }])).toMatchObject({ talkDbfs: -9, meanDbfs: -9, peakDbfs: -9 });
  });
});

describe('categories', () => {
  const f = computeCharacteristics([agent, customer]);
  const cat = (conditions: unknown[]) => ({ id: 'cat_1', ...validateCreateCategory({ name: 'c', conditions }, () => null) });

  it('a phrase in a window, by a speaker; negation; all-of', () => {
    const disclosure = cat([{ phrases: ['call may be recorded'], speaker: 'agent', window: { first: 30 } }]);
    expect(evaluateCategory(disclosure, [agent, customer], f, matchers)?.hits).toEqual([
      { condition: 0, startMs: 2222, endMs: 3950, speaker: 'agent', text: 'call may be recorded' },
    ]);
    const notInFirst = cat([{ phrases: ['let me check'], speaker: 'agent', window: { first: 5 }, negate: true }]);
    expect(evaluateCategory(notInFirst, [agent, customer], f, matchers)?.hits).toEqual([
      { condition: 0, startMs: 0, endMs: 5000, speaker: 'agent', negated: true },
    ]);
    const saidIt = cat([{ phrases: ['call may be recorded'], speaker: 'agent', window: { first: 1 }, negate: true }]);
    expect(evaluateCategory(saidIt, [agent, customer], f, matchers)).not.toBeNull();
    expect(evaluateCategory(cat([{ phrases: ['call may be recorded'], speaker: 'customer' }]), [agent, customer], f, matchers)).toBeNull();
    expect(
      evaluateCategory(cat([{ phrases: ['cancel', 'goodbye'], match: 'all', window: { lastShare: 0.5 } }]), [agent, customer], f, matchers),
    ).toBeNull();
    expect(
      evaluateCategory(cat([{ phrases: ['cancel', 'goodbye'], match: 'all' }]), [agent, customer], f, matchers)?.hits.map((h) => h.text),
    ).toEqual(['cancel', 'goodbye']);
  });

  it('pattern, silence, interruptions and talk share; every condition must hold', () => {
    expect(evaluateCategory(cat([{ pattern: 'subscri\\w+', speaker: 'customer' }]), [agent, customer], f, matchers)?.hits[0]).toMatchObject(
      { text: 'subscription', startMs: 3000 },
    );
    expect(evaluateCategory(cat([{ silenceSeconds: 5 }]), [agent, customer], f, matchers)?.hits).toEqual([
      { condition: 0, startMs: 13_950, endMs: 20_000, speaker: null },
    ]);
    expect(evaluateCategory(cat([{ silenceSeconds: 5, window: { first: 12 } }]), [agent, customer], f, matchers)).toBeNull();
    expect(evaluateCategory(cat([{ interruptions: 1, speaker: 'customer' }]), [agent, customer], f, matchers)?.hits).toHaveLength(1);
    expect(evaluateCategory(cat([{ interruptions: 1, speaker: 'agent' }]), [agent, customer], f, matchers)).toBeNull();
    expect(evaluateCategory(cat([{ talkShare: { min: 0.5 }, speaker: 'agent' }]), [agent, customer], f, matchers)).not.toBeNull();
    expect(
      evaluateCategory(cat([{ talkShare: { min: 0.5 }, speaker: 'agent' }, { interruptions: 2 }]), [agent, customer], f, matchers),
    ).toBeNull();
  });

  it('windows are clipped to the call', () => {
    expect(windowSpan({ first: 60 }, 25_000)).toEqual({ startMs: 0, endMs: 25_000 });
    expect(windowSpan({ last: 5 }, 25_000)).toEqual({ startMs: 20_000, endMs: 25_000 });
    expect(windowSpan({ firstShare: 0.2 }, 25_000)).toEqual({ startMs: 0, endMs: 5000 });
  });

  it('bad input: 422 naming the field', () => {
    const refused = (body: unknown) => {
      try {
        validateCreateCategory(body, () => null);
      } catch (err) {
        expect(err).toBeInstanceOf(ScribedError);
        expect((err as ScribedError).code).toBe('VALIDATION_FAILED');
        return (err as ScribedError).details?.field;
      }
      throw new Error('accepted');
    };
    expect(refused({ name: 'x', conditions: [] })).toBe('conditions');
    expect(refused({ name: 'x' })).toBe('conditions');
    expect(refused({ name: 'x', conditions: [{ negate: true }] })).toBe('conditions[0].negate');
    expect(refused({ name: 'x', conditions: [{ phrases: ['a'], window: { first: -5 } }] })).toBe('conditions[0].window.first');
    expect(refused({ name: 'x', conditions: [{ phrases: ['a'], window: { lastShare: 1.5 } }] })).toBe('conditions[0].window.lastShare');
    expect(refused({ name: 'x', conditions: [{ phrases: ['a'], window: { first: 5, last: 5 } }] })).toBe('conditions[0].window');
    expect(refused({ name: 'x', conditions: [{ talkShare: { min: 0.5 } }] })).toBe('conditions[0].speaker');
    expect(refused({ name: 'x', conditions: [{ silenceSeconds: 5, speaker: 'agent' }] })).toBe('conditions[0].speaker');
    expect(refused({ name: 'x', conditions: [{ phrases: ['a'], pattern: 'b' }] })).toBe('conditions[0].pattern');
    expect(refused({ conditions: [{ phrases: ['a'] }] })).toBe('name');
    expect(() => validatePatchCategory({}, () => null)).toThrow(/body/);
  });
});
