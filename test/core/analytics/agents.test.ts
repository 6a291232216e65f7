// An agent's figures over a range (src/core/analytics/agents.ts): the aggregate and the list of
// calls the desk's agent view shows.
import { describe, expect, it } from 'vitest';
import { aggregateAgent } from '../../../src/core/analytics/agents.js';
import type { ConversationAnalytics } from '../../../src/core/analytics/summary.js';

function analytics(durationMs: number, legs: Array<{ speaker: string; talkShare: number; wpm: number; made: number }>, hit?: string) {
  return {
    figures: {
      durationMs,
      legs: legs.map((l) => ({
        speaker: l.speaker,
        talkShare: l.talkShare,
        talkMs: l.talkShare * durationMs,
        wordsPerMinute: l.wpm,
        interruptionsMade: l.made,
        interruptionsReceived: 0,
      })),
    },
    categories: hit ? [{ categoryId: `cat_${hit}`, name: hit, hits: [] }] : [],
  } as unknown as ConversationAnalytics;
}

describe('aggregateAgent', () => {
  const range = { from: '2026-12-01T00:00:00.000Z', to: '2026-12-08T00:00:00.000Z' };
  const rows = [
    {
      subjectId: 'call_a',
      completedAt: '2026-12-02T10:00:00.000Z',
      analytics: analytics(
        60_000,
        [
          { speaker: 'agent', talkShare: 0.4, wpm: 150, made: 1 },
          { speaker: 'customer', talkShare: 0.6, wpm: 170, made: 0 },
        ],
        'greeting',
      ),
    },
    {
      subjectId: 'call_b',
      completedAt: '2026-12-03T10:00:00.000Z',
      analytics: analytics(30_000, [{ speaker: 'customer', talkShare: 1, wpm: 120, made: 0 }]),
    },
    {
      subjectId: 'call_c',
      completedAt: '2026-12-04T10:00:00.000Z',
      analytics: analytics(90_000, [{ speaker: 'agent', talkShare: 0.6, wpm: 130, made: 3 }], 'greeting'),
    },
  ];

  it('averages the agent legs, rates the categories over all calls, and lists the calls newest first', () => {
    const agg = aggregateAgent('agent-1', range, rows);
    expect(agg).toMatchObject({ calls: 3, callsWithAgentLeg: 2, averageDurationMs: 60_000, averageTalkShare: 0.5, interruptionsMade: 4 });
    expect(agg.categories).toEqual([{ categoryId: 'cat_greeting', name: 'greeting', calls: 2, rate: 0.6667 }]);
    expect(agg.items).toEqual([
      {
        callId: 'call_c',
        completedAt: rows[2]!.completedAt,
        durationMs: 90_000,
        talkShare: 0.6,
        wordsPerMinute: 130,
        interruptionsMade: 3,
        categories: ['greeting'],
      },
      {
        callId: 'call_b',
        completedAt: rows[1]!.completedAt,
        durationMs: 30_000,
        talkShare: null,
        wordsPerMinute: null,
        interruptionsMade: null,
        categories: [],
      },
      {
        callId: 'call_a',
        completedAt: rows[0]!.completedAt,
        durationMs: 60_000,
        talkShare: 0.4,
        wordsPerMinute: 150,
        interruptionsMade: 1,
        categories: ['greeting'],
      },
    ]);
  });

  it('has no calls and no averages for an empty range', () => {
    expect(aggregateAgent('agent-1', range, [])).toMatchObject({ calls: 0, averageDurationMs: null, averageTalkShare: null, items: [] });
  });
});
