// Audio content check with ffprobe (Debian's ffmpeg): the container and streams decide the
// format, never the file name or the declared Content-Type. The file is probed from a
// staging path with no extension, so ffprobe cannot take a hint from a name either.
// ffprobe runs sandboxed like the batch upload's (src/batch/audio.ts): only the demuxers of
// the accepted formats and only the `file` protocol, so a playlist or concat script posing
// as a recording cannot make it open other local files (a FIFO there would hold the probe
// until its time limit) before classifyProbe refuses it.
import { execFile } from 'node:child_process';
import { demuxerSandbox } from '../batch/audio.js';
import type { RecordingFormat } from '../core/voices.js';

/** Demuxers that can yield a wav, mp3 or m4a classification. */
const SANDBOX = demuxerSandbox(['wav', 'mp3', 'mov,mp4,m4a,3gp,3g2,mj2']);

interface ProbeJson {
  format?: { format_name?: string; duration?: string };
  streams?: { codec_type?: string; codec_name?: string }[];
}

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
  return new Promise((resolve) => {
    execFile(
      'ffprobe',
      ['-v', 'error', ...SANDBOX, '-show_entries', 'format=format_name,duration:stream=codec_type,codec_name', '-of', 'json', file],
      { timeout: timeoutMs, maxBuffer: 1024 * 1024 },
      (err, stdout) => {
        if (err) return resolve(null);
        try {
          resolve(classifyProbe(JSON.parse(stdout) as ProbeJson));
        } catch {
          resolve(null);
        }
      },
    );
  });
}
