// The creative brief of a music project: the capability catalog and the one validation
// used by project creation and by the whole-brief replace (PUT brief). Lengths are counted
// in Unicode code points, not UTF-16 units, as the spec says. Every failure is 47001
// (MUSIC_BRIEF_INVALID) naming the field.
import { ScribedError } from './errors.js';
import { codePoints } from './interpretation.js';

export const CAPABILITIES = Object.freeze({
  genres: ['pop', 'rock', 'hip-hop', 'electronic', 'jazz', 'classical', 'folk', 'rnb', 'cinematic', 'lofi'],
  moods: ['happy', 'sad', 'energetic', 'calm', 'dark', 'romantic', 'epic', 'playful', 'nostalgic', 'tense'],
  supportedVocalLanguages: [
    { code: 'en', name: 'English' },
    { code: 'es', name: 'Spanish' },
    { code: 'fr', name: 'French' },
    { code: 'de', name: 'German' },
    { code: 'pt', name: 'Portuguese' },
    { code: 'ja', name: 'Japanese' },
    { code: 'ko', name: 'Korean' },
    { code: 'zh', name: 'Chinese' },
  ],
  vocalStyles: ['male', 'female', 'duet', 'choir', 'rap', 'instrumental'],
});

export const DURATIONS_SEC = [60, 90, 120, 180] as const;
export const LIMITS = Object.freeze({
  description: [1, 800],
  styleNotes: [0, 120],
  customLyrics: [20, 2800],
  moods: [1, 3],
});

export const LYRICS_MODES = ['AUTO', 'CUSTOM'] as const;

export interface Brief {
  description: string;
  genre: string;
  styleNotes: string | null;
  moods: string[];
  vocalLanguage: string;
  durationSec: (typeof DURATIONS_SEC)[number];
  lyricsMode: 'AUTO' | 'CUSTOM';
  customLyrics: string | null;
  vocalStyle: string;
}

export const BRIEF_FIELDS = [
  'description',
  'genre',
  'styleNotes',
  'moods',
  'vocalLanguage',
  'durationSec',
  'lyricsMode',
  'customLyrics',
  'vocalStyle',
];

function invalid(field: string, rule: string): never {
  throw new ScribedError('MUSIC_BRIEF_INVALID', `${field}: ${rule}`);
}

function text(b: Record<string, unknown>, field: string, [min, max]: readonly number[], required: boolean): string | null {
  const v = b[field];
  if (v === undefined || v === null) {
    if (required) invalid(field, 'required');
    return null;
  }
  if (typeof v !== 'string') invalid(field, 'must be a string');
  const n = codePoints(v);
  if (n < min! || n > max!) invalid(field, `${min} to ${max} characters (code points), got ${n}`);
  // A required text of whitespace alone says nothing.
  if (required && v.trim() === '') invalid(field, 'must not be blank');
  return v;
}

function oneOf(b: Record<string, unknown>, field: string, allowed: readonly string[]): string {
  const v = b[field];
  if (v === undefined || v === null) invalid(field, 'required');
  if (typeof v !== 'string' || !allowed.includes(v)) invalid(field, `one of ${allowed.join(', ')}`);
  return v;
}

export function validateBrief(body: unknown): Brief {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) invalid('brief', 'must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (!BRIEF_FIELDS.includes(k)) invalid(k, 'unknown field');

  const description = text(b, 'description', LIMITS.description, true)!;
  const genre = oneOf(b, 'genre', CAPABILITIES.genres);
  const styleNotes = text(b, 'styleNotes', LIMITS.styleNotes, false);

  const moods = b.moods;
  if (moods === undefined || moods === null) invalid('moods', 'required');
  if (!Array.isArray(moods) || moods.length < LIMITS.moods[0]! || moods.length > LIMITS.moods[1]!) invalid('moods', '1 to 3 values');
  for (const m of moods)
    if (typeof m !== 'string' || !CAPABILITIES.moods.includes(m)) invalid('moods', `values from ${CAPABILITIES.moods.join(', ')}`);
  if (new Set(moods).size !== moods.length) invalid('moods', 'values must be distinct');

  const vocalLanguage = oneOf(
    b,
    'vocalLanguage',
    CAPABILITIES.supportedVocalLanguages.map((l) => l.code),
  );
  const d = b.durationSec;
  if (d === undefined || d === null) invalid('durationSec', 'required');
  if (typeof d !== 'number' || !(DURATIONS_SEC as readonly number[]).includes(d)) invalid('durationSec', 'one of 60, 90, 120, 180');
  const lyricsMode = oneOf(b, 'lyricsMode', LYRICS_MODES) as Brief['lyricsMode'];
  let customLyrics: string | null = null;
  if (lyricsMode === 'CUSTOM') {
    customLyrics = text(b, 'customLyrics', LIMITS.customLyrics, true);
  } else if (b.customLyrics !== undefined && b.customLyrics !== null && b.customLyrics !== '') {
    // Used only with CUSTOM: refusing beats silently dropping lyrics the caller wrote.
    invalid('customLyrics', 'only allowed with lyricsMode CUSTOM');
  }
  const vocalStyle = oneOf(b, 'vocalStyle', CAPABILITIES.vocalStyles);
  return {
    description,
    genre,
    styleNotes,
    moods: moods as string[],
    vocalLanguage,
    durationSec: d as Brief['durationSec'],
    lyricsMode,
    customLyrics,
    vocalStyle,
  };
}

/** Price of generating a track from this brief: 10 Characters per second, +20% with custom
 * lyrics (they are set to the melody rather than written). */
export function quoteCharacters(brief: Brief): bigint {
  const base = BigInt(brief.durationSec) * 10n;
  return brief.lyricsMode === 'CUSTOM' ? (base * 12n) / 10n : base;
}
