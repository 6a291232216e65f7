// Speech clips whose recognized text contains what a text option acts on, made at test time
// from Debian packages (scripts/setup.sh): espeak-ng for a sentence with hesitations (the
// recognizer hears fillers in it), and the Allison prompts of asterisk-core-sounds-en-wav
// (a human voice, 8 kHz) for an amount of money. Also ffmpeg conversions to other formats.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { tempDir } from './service.js';

const ALLISON = '/usr/share/asterisk/sounds/en_US_f_Allison/digits';
const dir = tempDir('scribed-fixtures-');

/** espeak-ng speaking hesitations between words (22.05 kHz WAV). */
export function fillerClip(): string {
  const out = path.join(dir, 'fillers.wav');
  execFileSync('espeak-ng', [
    '-w',
    out,
    'um, I would like to pay twenty five dollars. uh, my number is four one five, five five five, one two one two.',
  ]);
  return out;
}

/** "twenty five dollars" from Allison's prompts, joined (8 kHz WAV). */
export function moneyClip(): string {
  const out = path.join(dir, 'money.wav');
  const parts = ['20', '5', 'dollars'].map((p) => path.join(ALLISON, `${p}.wav`));
  execFileSync('ffmpeg', [
    '-v',
    'error',
    '-y',
    ...parts.flatMap((p) => ['-i', p]),
    '-filter_complex',
    `concat=n=${parts.length}:v=0:a=1`,
    out,
  ]);
  return out;
}

/** `input` re-encoded by ffmpeg into `ext` (mp3, flac, ogg, m4a). */
export function convert(input: string, ext: string): string {
  const out = path.join(dir, `${path.basename(input, path.extname(input))}.${ext}`);
  execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', input, out]);
  return out;
}

/** Raw s16le mono PCM of `input` at `rate`, as a real-time client would send it. */
export function rawPcm(input: string, rate: number): Buffer {
  return execFileSync('ffmpeg', ['-v', 'error', '-i', input, '-ac', '1', '-ar', String(rate), '-f', 's16le', '-acodec', 'pcm_s16le', '-'], {
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** Several inputs joined with `gapSeconds` of silence between them, as 16 kHz WAV. */
export function joined(inputs: string[], gapSeconds: number): string {
  const out = path.join(dir, `joined-${inputs.length}.wav`);
  const filters = inputs.map((_, i) => `[${i}:a]aresample=16000,apad=pad_dur=${gapSeconds}[a${i}]`).join(';');
  const labels = inputs.map((_, i) => `[a${i}]`).join('');
  execFileSync('ffmpeg', [
    '-v',
    'error',
    '-y',
    ...inputs.flatMap((p) => ['-i', p]),
    '-filter_complex',
    `${filters};${labels}concat=n=${inputs.length}:v=0:a=1`,
    '-ac',
    '1',
    out,
  ]);
  return out;
}

/** Raw G.711 A-law of `input` at 8 kHz mono, converted by ffmpeg (`-c:a pcm_alaw`), as a
 * European PBX sends it. */
export function rawAlaw(input: string): Buffer {
  return execFileSync('ffmpeg', ['-v', 'error', '-i', input, '-ac', '1', '-ar', '8000', '-c:a', 'pcm_alaw', '-f', 'alaw', '-'], {
    maxBuffer: 64 * 1024 * 1024,
  });
}
