// Arrangement plan: the song's structure derived from a brief. Tempo comes from the genre
// and is nudged by the moods; the section sequence comes from the genre (and the length);
// sections are laid out in whole bars, and the last section absorbs rounding so section
// times run contiguously from 0 to exactly durationSec.
import type { Brief } from './music-brief.js';

export interface Section {
  name: string;
  startSec: number;
  endSec: number;
  bars: number;
  vocals: boolean;
}

export interface ArrangementPlan {
  tempoBpm: number;
  timeSignature: '4/4' | '3/4';
  key: string;
  durationSec: number;
  sections: Section[];
}

const GENRE: Record<string, { bpm: number; meter: '4/4' | '3/4'; form: [string, number][] }> = {
  pop: {
    bpm: 112,
    meter: '4/4',
    form: [
      ['intro', 1],
      ['verse', 2],
      ['pre-chorus', 1],
      ['chorus', 2],
      ['verse', 2],
      ['chorus', 2],
      ['bridge', 1],
      ['chorus', 2],
      ['outro', 1],
    ],
  },
  rock: {
    bpm: 124,
    meter: '4/4',
    form: [
      ['intro', 1],
      ['verse', 2],
      ['chorus', 2],
      ['verse', 2],
      ['chorus', 2],
      ['solo', 2],
      ['chorus', 2],
      ['outro', 1],
    ],
  },
  'hip-hop': {
    bpm: 92,
    meter: '4/4',
    form: [
      ['intro', 1],
      ['hook', 2],
      ['verse', 4],
      ['hook', 2],
      ['verse', 4],
      ['hook', 2],
      ['outro', 1],
    ],
  },
  electronic: {
    bpm: 126,
    meter: '4/4',
    form: [
      ['intro', 2],
      ['build', 2],
      ['drop', 3],
      ['breakdown', 2],
      ['build', 2],
      ['drop', 3],
      ['outro', 2],
    ],
  },
  jazz: {
    bpm: 132,
    meter: '4/4',
    form: [
      ['intro', 1],
      ['head', 2],
      ['solo', 3],
      ['solo', 2],
      ['head', 2],
      ['outro', 1],
    ],
  },
  classical: {
    bpm: 84,
    meter: '3/4',
    form: [
      ['exposition', 3],
      ['development', 3],
      ['recapitulation', 3],
      ['coda', 1],
    ],
  },
  folk: {
    bpm: 100,
    meter: '3/4',
    form: [
      ['intro', 1],
      ['verse', 2],
      ['chorus', 2],
      ['verse', 2],
      ['chorus', 2],
      ['outro', 1],
    ],
  },
  rnb: {
    bpm: 88,
    meter: '4/4',
    form: [
      ['intro', 1],
      ['verse', 2],
      ['chorus', 2],
      ['verse', 2],
      ['chorus', 2],
      ['bridge', 1],
      ['chorus', 2],
      ['outro', 1],
    ],
  },
  cinematic: {
    bpm: 90,
    meter: '4/4',
    form: [
      ['opening', 2],
      ['rise', 3],
      ['climax', 3],
      ['resolution', 2],
    ],
  },
  lofi: {
    bpm: 78,
    meter: '4/4',
    form: [
      ['intro', 1],
      ['loop A', 3],
      ['loop B', 3],
      ['loop A', 3],
      ['outro', 1],
    ],
  },
};

const MOOD_BPM: Record<string, number> = {
  energetic: 12,
  happy: 6,
  playful: 6,
  epic: 4,
  tense: 4,
  calm: -10,
  sad: -10,
  romantic: -6,
  nostalgic: -4,
  dark: -2,
};
const INSTRUMENTAL_SECTIONS = new Set([
  'intro',
  'outro',
  'solo',
  'build',
  'drop',
  'breakdown',
  'opening',
  'rise',
  'climax',
  'resolution',
  'coda',
  'loop A',
  'loop B',
  'development',
  'exposition',
  'recapitulation',
]);
const KEYS_MAJOR = ['C major', 'G major', 'D major', 'A major', 'E major', 'F major', 'B♭ major'];
const KEYS_MINOR = ['A minor', 'E minor', 'D minor', 'B minor', 'F♯ minor', 'C minor', 'G minor'];
const MINOR_MOODS = new Set(['sad', 'dark', 'tense', 'nostalgic']);

/** Deterministic small hash so the same brief always gets the same key. */
function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h;
}

export function planArrangement(brief: Brief): ArrangementPlan {
  const g = GENRE[brief.genre] ?? GENRE.pop!;
  const nudge = brief.moods.reduce((sum, m) => sum + (MOOD_BPM[m] ?? 0), 0) / brief.moods.length;
  const tempoBpm = Math.round(Math.min(180, Math.max(60, g.bpm + nudge)));
  const beatsPerBar = g.meter === '4/4' ? 4 : 3;
  const barSec = (60 / tempoBpm) * beatsPerBar;
  const totalBars = Math.max(1, Math.round(brief.durationSec / barSec));

  // Short pieces drop the middle repeats so each section still gets at least 2 bars.
  let form = g.form;
  while (form.length > 3 && totalBars / form.reduce((s, [, w]) => s + w, 0) < 2) {
    form = [...form.slice(0, Math.floor(form.length / 2) - 1), ...form.slice(Math.floor(form.length / 2))];
  }
  const weight = form.reduce((s, [, w]) => s + w, 0);
  // Largest-remainder apportionment of bars by weight.
  const exact = form.map(([, w]) => (totalBars * w) / weight);
  const bars = exact.map(Math.floor);
  let left = totalBars - bars.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0]);
  for (const [, i] of order) {
    if (left-- <= 0) break;
    bars[i]!++;
  }

  const instrumental = brief.vocalStyle === 'instrumental';
  const sections: Section[] = [];
  let bar = 0;
  form.forEach(([name], i) => {
    const start = bar;
    bar += bars[i]!;
    const last = i === form.length - 1;
    sections.push({
      name,
      startSec: round3((start / totalBars) * brief.durationSec),
      endSec: last ? brief.durationSec : round3((bar / totalBars) * brief.durationSec),
      bars: bars[i]!,
      vocals: !instrumental && !INSTRUMENTAL_SECTIONS.has(name),
    });
  });
  for (let i = 1; i < sections.length; i++) sections[i]!.startSec = sections[i - 1]!.endSec;

  const minor = brief.moods.filter((m) => MINOR_MOODS.has(m)).length * 2 > brief.moods.length;
  const keys = minor ? KEYS_MINOR : KEYS_MAJOR;
  const key = keys[hash(brief.description) % keys.length]!;
  return { tempoBpm, timeSignature: g.meter, key, durationSec: brief.durationSec, sections: sections.filter((s) => s.bars > 0) };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
