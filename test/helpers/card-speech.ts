// The spoken test card for the redaction tests: Allison's digit prompts (Debian's
// asterisk-core-sounds-en-wav) read 4111 1111 1111 1111 in groups of four, joined with sox;
// and the checks that a text, a file or a log holds no run of three digits.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './service.js';
import { numberRuns, normalizeToken } from '../../src/text/redaction/spans.js';

const DIGITS = '/usr/share/asterisk/sounds/en/digits';
export const CARD = '4111111111111111';

/** The card read in groups of four, 0.4 s between groups, 0.5 s of silence around (8 kHz WAV). */
export function cardClip(): string {
  const dir = tempDir('scribed-card-');
  const gap = path.join(dir, 'gap.wav');
  execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', gap, 'trim', '0', '0.4']);
  const parts: string[] = [gap];
  for (let g = 0; g < 4; g++) parts.push(...[...CARD.slice(g * 4, g * 4 + 4)].map((d) => path.join(DIGITS, `${d}.wav`)), gap);
  const out = path.join(dir, 'card.wav');
  execFileSync('sox', [...parts, out]);
  return out;
}

/** The longest run of digits said or written in a row in `text`, as the redactor reads them. */
export function longestDigitRun(text: string): number {
  const norm = text
    .split(/[\s\t\n]+/)
    .map(normalizeToken)
    .filter((t) => t !== '');
  return numberRuns(norm).reduce(
    (m, run) =>
      Math.max(
        m,
        run.reduce((n, u) => n + u.digits.length, 0),
      ),
    0,
  );
}

/** Three digit words in a row, whatever lies between them (JSON quoting, tabs). */
export const SPOKEN_RUN =
  /\b(zero|oh|one|two|three|four|five|six|seven|eight|nine)\W{1,3}(zero|oh|one|two|three|four|five|six|seven|eight|nine)\W{1,3}(zero|oh|one|two|three|four|five|six|seven|eight|nine)\b/i;

export function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

/** A JSON log line with its numeric values (times, counts, sample offsets, also as digit-only
 * strings) blanked: they are not content, and an epoch in ms may hold "4111". */
export function withoutNumericValues(line: string): string {
  return line.replace(/:(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|"\d+")(?=[,}\]])/gi, ':#');
}
