// The bare-CLI baselines' input: a clip's 8 kHz mu-law decoded and upsampled to 16 kHz s16
// WAV by sox, as a gateway would hand it to pocketsphinx_continuous (no dither). The service's
// own converter is sox's filter too (src/engine/resampler.ts).
import { execFileSync } from 'node:child_process';

export function soxUpsample(ulawFile: string, outWav: string): void {
  execFileSync(
    'sox',
    ['-D', '-V1', '-t', 'ul', '-r', '8000', '-c', '1', ulawFile, '-r', '16000', '-b', '16', '-e', 'signed-integer', outWav],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}
