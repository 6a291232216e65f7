// Voice library rules: the prebuilt catalog shipped with the service, limits on custom
// voices, and which voices the accent model (svc_v3_accent_enhance) can take.
import { ScribedError } from './errors.js';
import { codePoints } from './interpretation.js';

export const MAX_FILE_BYTES = 10 * 1024 * 1024;
export const MAX_FILES_PER_VOICE = 25;
export const MAX_VOICE_NAME_CODE_POINTS = 32;
export const ACCENT_MODEL_ID = 'svc_v3_accent_enhance';
export const KNOWN_MODEL_IDS = [ACCENT_MODEL_ID] as const;
export type RecordingFormat = 'mp3' | 'wav' | 'm4a';

export interface VoiceItem {
  id: string;
  name: string;
  type: string;
  feature: string;
  channel: string;
  fileCount: number;
  totalFileSize: number;
}

interface PrebuiltVoice extends VoiceItem {
  /** Whether the accent model was trained with this voice (a catalog fact). */
  accentModel: boolean;
}

/** Prebuilt voices: available to every key, never deletable, no recordings of the caller's. */
export const PREBUILT_VOICES: readonly PrebuiltVoice[] = Object.freeze([
  {
    id: 'pv_en_us_ava',
    name: 'Ava',
    type: 'prebuilt',
    feature: 'text-to-speech',
    channel: 'system',
    fileCount: 0,
    totalFileSize: 0,
    accentModel: true,
  },
  {
    id: 'pv_en_gb_oliver',
    name: 'Oliver',
    type: 'prebuilt',
    feature: 'text-to-speech',
    channel: 'system',
    fileCount: 0,
    totalFileSize: 0,
    accentModel: true,
  },
  {
    id: 'pv_es_es_lucia',
    name: 'Lucía',
    type: 'prebuilt',
    feature: 'text-to-speech',
    channel: 'system',
    fileCount: 0,
    totalFileSize: 0,
    accentModel: false,
  },
  {
    id: 'pv_en_us_narrator',
    name: 'Narrator',
    type: 'prebuilt',
    feature: 'voice-over',
    channel: 'system',
    fileCount: 0,
    totalFileSize: 0,
    accentModel: false,
  },
]);

export function prebuiltItem(v: PrebuiltVoice): VoiceItem {
  const { accentModel: _ignored, ...item } = v;
  return item;
}

export function isPrebuiltId(id: string): boolean {
  return PREBUILT_VOICES.some((v) => v.id === id);
}

/** The accent model conditions on reference speech of a text-to-speech voice: a custom
 * voice qualifies when it serves text-to-speech and holds at least one recording; a prebuilt
 * voice when the catalog says the model was trained with it. A selection aid only. */
export function accentCompatible(v: VoiceItem & { accentModel?: boolean }): boolean {
  if (v.type === 'prebuilt') return v.accentModel === true;
  return v.feature === 'text-to-speech' && v.fileCount >= 1;
}

export function validateVoiceName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ScribedError('VALIDATION_FAILED', `${field}: required`);
  const n = codePoints(value);
  if (n > MAX_VOICE_NAME_CODE_POINTS)
    throw new ScribedError('VALIDATION_FAILED', `${field}: at most ${MAX_VOICE_NAME_CODE_POINTS} characters, got ${n}`);
  return value;
}
