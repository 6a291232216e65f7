// Conversation characteristics of a call or a lone session (docs/analytics.md): talk time and
// share, non-talk time, interruptions, overtalk, talk speed, turns and loudness, per leg and
// for the whole call. Pure: computed from the legs' recognized words (times in ms on the
// call's time line, docs/calls.md "Time line") and each leg's level track (levels.ts).
//
// Speech is read as runs: a leg's words joined while the pause between two is under
// RUN_JOIN_MS, the join the live talk-over rule uses (rules-match.ts speechRuns), so a run is
// what a listener hears as one stretch of speech.
import { ruleWords } from '../rules.js';
import { summariseLoudness, type Interval, type LevelTrack, type LoudnessSummary } from './levels.js';

export const DEFAULT_SILENCE_SECONDS = 5;
export const RUN_JOIN_MS = 300;
/** A backchannel is a run this short or shorter, */
export const BACKCHANNEL_MAX_MS = 1000;
/** of at most this many words, */
export const BACKCHANNEL_MAX_WORDS = 3;
/** made only of these (each a whole phrase, repeats allowed: "yeah yeah", "okay uh huh"). */
export const BACKCHANNEL_PHRASES: readonly string[] = [
  'yeah',
  'yes',
  'yep',
  'yup',
  'okay',
  'ok',
  'mhm',
  'mm',
  'mmm',
  'hmm',
  'uh huh',
  'mm hmm',
  'right',
  'sure',
  'alright',
  'all right',
  'i see',
  'got it',
  'exactly',
  'oh',
  'ah',
];

export interface AnalyticsWord {
  word: string;
  startMs: number;
  endMs: number;
}

export interface AnalyticsSegment {
  startMs: number;
  endMs: number;
  text: string;
  words: AnalyticsWord[];
}

/** A leg keeps at most this many spotted phrases (a phrase a second for over an hour). */
export const MAX_SPOTS_PER_LEG = 5000;

/** A phrase the leg's keyphrase search detected in its audio (phrase spotting), leg ms. */
export interface SpottedPhrase {
  phrase: string;
  startMs: number;
  endMs: number;
}

export interface AnalyticsLeg {
  /** The leg's speaker label; null for a session outside a call. */
  speaker: string | null;
  transcriptionId: string;
  /** Phrases spotted in its audio (absent or empty: none, or nothing asked to spot). */
  spots?: SpottedPhrase[];
  durationMs: number;
  segments: AnalyticsSegment[];
  levels: LevelTrack | null;
}

export interface SpeechRun extends Interval {
  leg: number;
  words: number;
  backchannel: boolean;
}

export interface Interruption {
  /** When the interrupting run started (inside the interrupted leg's run). */
  atMs: number;
  /** How long both spoke: from `atMs` to the first of the two runs' ends. */
  overlapMs: number;
  by: string | null;
  of: string | null;
}

export interface LegFigures {
  speaker: string | null;
  transcriptionId: string;
  durationMs: number;
  talkMs: number;
  /** This leg's talk time over the sum of every leg's talk time (0 when nobody talked). */
  talkShare: number;
  words: number;
  /** Words per minute of this leg's own talk time; null when it did not talk. */
  wordsPerMinute: number | null;
  turns: number;
  interruptionsMade: number;
  interruptionsReceived: number;
  backchannels: number;
  loudness: LoudnessSummary | null;
}

export interface ConversationFigures {
  durationMs: number;
  /** Time in which any leg talks (the union of the legs' runs). */
  talkMs: number;
  nonTalk: { thresholdMs: number; totalMs: number; longestMs: number; spans: Interval[] };
  overtalk: { totalMs: number; share: number; spans: Interval[] };
  interruptions: Interruption[];
  turns: number;
  legs: LegFigures[];
}

export interface CharacteristicsOptions {
  silenceSeconds?: number;
}

function isSpokenWord(w: AnalyticsWord): boolean {
  return w.endMs > w.startMs && ruleWords(w.word).length > 0;
}

/** Whether the words of a run are only backchannel phrases. */
export function isBackchannel(words: readonly string[], durationMs: number): boolean {
  if (durationMs > BACKCHANNEL_MAX_MS || words.length === 0 || words.length > BACKCHANNEL_MAX_WORDS) return false;
  const tokens = words.flatMap(ruleWords);
  const phrases = BACKCHANNEL_PHRASES.map((p) => p.split(' '));
  // Greedy cover by whole phrases, longest first at each place (the list has no phrase that is
  // a prefix of a longer one that could then fail).
  phrases.sort((a, b) => b.length - a.length);
  let i = 0;
  while (i < tokens.length) {
    const p = phrases.find((ph) => ph.every((w, k) => tokens[i + k] === w));
    if (!p) return false;
    i += p.length;
  }
  return true;
}

/** A leg's words joined into runs of speech. */
export function legRuns(leg: AnalyticsLeg, index: number): SpeechRun[] {
  const words = leg.segments
    .flatMap((s) => s.words)
    .filter(isSpokenWord)
    .sort((a, b) => a.startMs - b.startMs);
  const runs: SpeechRun[] = [];
  let current: { startMs: number; endMs: number; words: string[] } | null = null;
  const close = () => {
    if (current)
      runs.push({
        leg: index,
        startMs: current.startMs,
        endMs: current.endMs,
        words: current.words.length,
        backchannel: isBackchannel(current.words, current.endMs - current.startMs),
      });
  };
  for (const w of words) {
    if (current && w.startMs - current.endMs < RUN_JOIN_MS) {
      current.endMs = Math.max(current.endMs, w.endMs);
      current.words.push(w.word);
    } else {
      close();
      current = { startMs: w.startMs, endMs: w.endMs, words: [w.word] };
    }
  }
  close();
  return runs;
}

/** Intervals merged where they touch or overlap. */
export function union(intervals: readonly Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a.startMs - b.startMs);
  const out: Interval[] = [];
  for (const i of sorted) {
    const last = out[out.length - 1];
    if (last && i.startMs <= last.endMs) last.endMs = Math.max(last.endMs, i.endMs);
    else out.push({ startMs: i.startMs, endMs: i.endMs });
  }
  return out;
}

const total = (xs: readonly Interval[]) => xs.reduce((a, x) => a + (x.endMs - x.startMs), 0);

/** Where two or more legs talk at once. */
function overlaps(perLeg: readonly Interval[][]): Interval[] {
  const edges: Array<[number, number]> = [];
  for (const runs of perLeg) for (const r of union(runs)) edges.push([r.startMs, 1], [r.endMs, -1]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: Interval[] = [];
  let open = 0;
  let since = 0;
  for (const [t, d] of edges) {
    if (open < 2 && open + d >= 2) since = t;
    if (open >= 2 && open + d < 2 && t > since) out.push({ startMs: since, endMs: t });
    open += d;
  }
  return union(out);
}

function silences(talk: readonly Interval[], durationMs: number, thresholdMs: number): Interval[] {
  const out: Interval[] = [];
  let from = 0;
  for (const t of talk) {
    if (t.startMs - from > thresholdMs) out.push({ startMs: from, endMs: t.startMs });
    from = Math.max(from, t.endMs);
  }
  if (durationMs - from > thresholdMs) out.push({ startMs: from, endMs: durationMs });
  return out;
}

function interruptions(runs: readonly SpeechRun[], legs: readonly AnalyticsLeg[]): Interruption[] {
  const out: Interruption[] = [];
  const real = runs.filter((r) => !r.backchannel);
  for (const r of real) {
    const cut = real
      .filter((x) => x.leg !== r.leg && x.startMs < r.startMs && r.startMs < x.endMs)
      .sort((a, b) => a.startMs - b.startMs)[0];
    if (!cut) continue;
    out.push({
      atMs: r.startMs,
      overlapMs: Math.min(r.endMs, cut.endMs) - r.startMs,
      by: legs[r.leg]!.speaker,
      of: legs[cut.leg]!.speaker,
    });
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}

const ratio = (x: number, y: number) => (y > 0 ? Math.round((x / y) * 10_000) / 10_000 : 0);

export function computeCharacteristics(legs: readonly AnalyticsLeg[], options: CharacteristicsOptions = {}): ConversationFigures {
  const thresholdMs = Math.round((options.silenceSeconds ?? DEFAULT_SILENCE_SECONDS) * 1000);
  const perLeg = legs.map(legRuns);
  const runs = perLeg.flat();
  const durationMs = Math.max(0, ...legs.map((l) => l.durationMs), ...runs.map((r) => r.endMs));
  const talk = union(runs);
  const over = overlaps(perLeg);
  const cuts = interruptions(runs, legs);
  const legTalk = perLeg.map((r) => total(union(r)));
  const allTalk = legTalk.reduce((a, b) => a + b, 0);

  // A turn is a stretch of one leg's runs not broken by another leg's (backchannels aside).
  const turnsOf = legs.map(() => 0);
  let turns = 0;
  let last = -1;
  for (const r of runs.filter((x) => !x.backchannel).sort((a, b) => a.startMs - b.startMs)) {
    if (r.leg === last) continue;
    turns++;
    turnsOf[r.leg]!++;
    last = r.leg;
  }

  const quiet = silences(talk, durationMs, thresholdMs);
  return {
    durationMs,
    talkMs: total(talk),
    nonTalk: { thresholdMs, totalMs: total(quiet), longestMs: quiet.reduce((a, s) => Math.max(a, s.endMs - s.startMs), 0), spans: quiet },
    overtalk: { totalMs: total(over), share: ratio(total(over), durationMs), spans: over },
    interruptions: cuts,
    turns,
    legs: legs.map((leg, i) => {
      const words = perLeg[i]!.reduce((a, r) => a + r.words, 0);
      return {
        speaker: leg.speaker,
        transcriptionId: leg.transcriptionId,
        durationMs: leg.durationMs,
        talkMs: legTalk[i]!,
        talkShare: ratio(legTalk[i]!, allTalk),
        words,
        wordsPerMinute: legTalk[i]! > 0 ? Math.round((words / (legTalk[i]! / 60_000)) * 10) / 10 : null,
        turns: turnsOf[i]!,
        interruptionsMade: cuts.filter((c) => c.by === leg.speaker).length,
        interruptionsReceived: cuts.filter((c) => c.of === leg.speaker).length,
        backchannels: perLeg[i]!.filter((r) => r.backchannel).length,
        loudness: summariseLoudness(leg.levels, union(perLeg[i]!)),
      };
    }),
  };
}
