// Audio content checks with ffprobe (Debian's ffmpeg): the container and streams decide the
// format, never the file name or the declared Content-Type. Uploads are probed from staging
// paths with no extension, so ffprobe cannot take a hint from a name either.
// ffprobe runs sandboxed: only the demuxers of the accepted formats and only the `file`
// protocol, so a playlist or concat script posing as audio cannot make it open other local
// files or URLs (a FIFO there would hold the probe until its time limit) before the caller's
// own format check refuses it. Used by voice recordings (below) and batch uploads
// (src/batch/audio.ts).
import { execFile } from 'node:child_process';
import type { RecordingFormat } from '../core/voices.js';

/** ffprobe/ffmpeg input options that let only the demuxers of `formats` (format_name values
 * as ffprobe prints them) and only the `file` protocol run. */
export function demuxerSandbox(formats: readonly string[]): string[] {
  return ['-format_whitelist', formats.join(','), '-protocol_whitelist', 'file'];
}

/** What ffprobe says of a file (the entries asked for). */
export interface ProbeJson {
  format?: { format_name?: string; duration?: string };
  streams?: Array<{ codec_type?: string; codec_name?: string; sample_rate?: string; channels?: number }>;
}

/** Run sandboxed ffprobe on `file` (only the demuxers of `formats`); rejects when ffprobe
 * fails, times out or prints something that is not JSON. */
export function runFfprobe(file: string, formats: readonly string[], timeoutMs: number): Promise<ProbeJson> {
  return new Promise((resolve, reject) => {
    execFile(
      'ffprobe',
      [
        '-v',
        'error',
        ...demuxerSandbox(formats),
        '-show_entries',
        'format=format_name,duration:stream=codec_type,codec_name,sample_rate,channels',
        '-of',
        'json',
        file,
      ],
      { timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) return reject(Object.assign(err, { stderr }));
        try {
          resolve(JSON.parse(stdout) as ProbeJson);
        } catch (parseErr) {
          reject(parseErr);
        }
      },
    );
  });
}

/** Demuxers that can yield a wav, mp3 or m4a classification. */
const RECORDING_FORMATS = ['wav', 'mp3', 'mov,mp4,m4a,3gp,3g2,mj2'];

/** Classify probe output: mp3, wav or m4a audio with at least one audio stream and no
 * video; null for anything else. Pure, so it is unit-tested without ffprobe. */
export function classifyProbe(p: ProbeJson): RecordingFormat | null {
  const names = (p.format?.format_name ?? '').split(',');
  const streams = p.streams ?? [];
  const audio = streams.filter((s) => s.codec_type === 'audio');
  if (audio.length === 0 || streams.some((s) => s.codec_type === 'video')) return null;
  const duration = Number(p.format?.duration ?? 'NaN');
  if (!(duration > 0)) return null;
  if (names.includes('wav')) return 'wav';
  if (names.includes('mp3') && audio.every((s) => s.codec_name === 'mp3')) return 'mp3';
  if (names.includes('m4a') && audio.every((s) => s.codec_name === 'aac' || s.codec_name === 'alac')) return 'm4a';
  return null;
}

export function probeAudio(file: string, timeoutMs = 15_000): Promise<RecordingFormat | null> {
  return runFfprobe(file, RECORDING_FORMATS, timeoutMs).then(classifyProbe, () => null);
}
