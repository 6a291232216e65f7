// An agent's figures over a range (docs/analytics.md, "Agents"): the calls whose create named
// the agent (agentId), and in each the agent's own leg, the one whose speaker is `agent` (the
// gateway's and the stereo split's label for the agent's side; a call without such a leg counts
// in `calls` and the hit rates, not in the leg figures).
import type { ConversationAnalytics } from './summary.js';

export const AGENT_SPEAKER = 'agent';

export interface AgentAggregate {
  agentId: string;
  from: string;
  to: string;
  calls: number;
  /** Calls with an `agent` leg that talked: the leg figures' denominator. */
  callsWithAgentLeg: number;
  averageDurationMs: number | null;
  averageTalkShare: number | null;
  /** Interruptions the agent made, all calls, and per call. */
  interruptionsMade: number;
  interruptionsPerCall: number | null;
  interruptionsReceived: number;
  /** Mean of the calls' agent words per minute. */
  averageWordsPerMinute: number | null;
  /** Each category matched at least once: in how many of the calls, and that share. */
  categories: Array<{ categoryId: string; name: string; calls: number; rate: number }>;
  /** The calls themselves, newest first: what the desk's agent view lists. */
  items: AgentCall[];
}

/** One call of the agent, with the agent leg's figures (null where the call has no agent leg). */
export interface AgentCall {
  callId: string;
  completedAt: string;
  durationMs: number;
  talkShare: number | null;
  wordsPerMinute: number | null;
  interruptionsMade: number | null;
  categories: string[];
}

export interface AgentCallRow {
  subjectId: string;
  completedAt: string;
  analytics: ConversationAnalytics;
}

const mean = (xs: number[]): number | null =>
  xs.length ? Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 10_000) / 10_000 : null;

export function aggregateAgent(agentId: string, range: { from: string; to: string }, rows: readonly AgentCallRow[]): AgentAggregate {
  const legs = rows.map((r) => r.analytics.figures.legs.find((l) => l.speaker === AGENT_SPEAKER)).filter((l) => l !== undefined);
  const talked = legs.filter((l) => l.talkMs > 0);
  const hits = new Map<string, { name: string; calls: number }>();
  for (const r of rows) {
    for (const c of r.analytics.categories) {
      const h = hits.get(c.categoryId) ?? { name: c.name, calls: 0 };
      h.calls++;
      hits.set(c.categoryId, h);
    }
  }
  const made = legs.reduce((a, l) => a + l.interruptionsMade, 0);
  return {
    agentId,
    from: range.from,
    to: range.to,
    calls: rows.length,
    callsWithAgentLeg: talked.length,
    averageDurationMs: rows.length ? Math.round(rows.reduce((a, r) => a + r.analytics.figures.durationMs, 0) / rows.length) : null,
    averageTalkShare: mean(talked.map((l) => l.talkShare)),
    interruptionsMade: made,
    interruptionsPerCall: legs.length ? Math.round((made / legs.length) * 100) / 100 : null,
    interruptionsReceived: legs.reduce((a, l) => a + l.interruptionsReceived, 0),
    averageWordsPerMinute: mean(talked.map((l) => l.wordsPerMinute ?? 0)),
    categories: [...hits]
      .map(([categoryId, h]) => ({ categoryId, name: h.name, calls: h.calls, rate: Math.round((h.calls / rows.length) * 10_000) / 10_000 }))
      .sort((a, b) => b.calls - a.calls || a.categoryId.localeCompare(b.categoryId)),
    items: rows.map(agentCall).sort((a, b) => b.completedAt.localeCompare(a.completedAt) || a.callId.localeCompare(b.callId)),
  };
}

function agentCall(r: AgentCallRow): AgentCall {
  const leg = r.analytics.figures.legs.find((l) => l.speaker === AGENT_SPEAKER);
  return {
    callId: r.subjectId,
    completedAt: r.completedAt,
    durationMs: r.analytics.figures.durationMs,
    talkShare: leg ? leg.talkShare : null,
    wordsPerMinute: leg ? leg.wordsPerMinute : null,
    interruptionsMade: leg ? leg.interruptionsMade : null,
    categories: r.analytics.categories.map((c) => c.name),
  };
}
