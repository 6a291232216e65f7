// Reading an uploaded file as audio: ffprobe checks what the bytes are (never the file
// name or the declared Content-Type), ffmpeg decodes them to raw s16le mono at the
// engine's rate. Both are Debian's ffmpeg package (scripts/setup.sh); they run as child
// processes with argument arrays (no shell) and a time limit.
//
// Both run with a demuxer whitelist and only the `file` protocol (src/media/probe.ts): a
// crafted upload (an HLS playlist, a concat script) could otherwise make ffmpeg open other
// local files or URLs while probing, before any format check of ours could refuse it.
import { execFile } from 'node:child_process';
import { ScribedError } from '../core/errors.js';
import { demuxerSandbox, runFfprobe, type ProbeJson } from '../media/probe.js';

/** Container formats accepted, as ffprobe names them (format_name). */
export const ACCEPTED_FORMATS = [
  'wav',
  'mp3',
  'mov,mp4,m4a,3gp,3g2,mj2',
  'flac',
  'ogg',
  'matroska,webm',
  'aac',
  'aiff',
  'caf',
  'au',
  'amr',
] as const;

const SANDBOX = demuxerSandbox(ACCEPTED_FORMATS);

export interface ProbedAudio {
  format: string;
  codec: string;
  sampleRate: number;
  channels: number;
  durationSec: number | null;
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr }));
      else resolve({ stdout, stderr });
    });
  });
}

function unsupported(detail: string, cause?: unknown): ScribedError {
  return new ScribedError('UNSUPPORTED_AUDIO', detail, cause === undefined ? undefined : { cause });
}

/** What the file holds; UNSUPPORTED_AUDIO unless it is one audio stream in an accepted container. */
export async function probeAudio(file: string, timeoutMs = 30_000): Promise<ProbedAudio> {
  let info: ProbeJson;
  try {
    info = await runFfprobe(file, ACCEPTED_FORMATS, timeoutMs);
  } catch (err) {
    throw unsupported('the file could not be read as audio (wav, mp3, m4a, flac, ogg, webm, aac, aiff)', err);
  }
  const format = info.format?.format_name ?? '';
  if (!(ACCEPTED_FORMATS as readonly string[]).includes(format)) {
    throw unsupported(
      `the file's content is ${format === '' ? 'not a known format' : `"${format}"`}, not one of the accepted audio formats`,
    );
  }
  const audio = (info.streams ?? []).find((s) => s.codec_type === 'audio');
  if (!audio) throw unsupported('the file holds no audio stream');
  const duration = Number(info.format?.duration);
  return {
    format,
    codec: audio.codec_name ?? 'unknown',
    sampleRate: Number(audio.sample_rate ?? 0),
    channels: audio.channels ?? 0,
    durationSec: Number.isFinite(duration) ? duration : null,
  };
}

/** Decode the first audio stream of `input` to raw s16le mono at `rate` in `output`, at
 * most `cap.seconds` of audio and (whatever the timestamps say) about `cap.bytes` of output
 * (ffmpeg stops after the packet that reaches it): see src/batch/limits.ts. All channels are
 * mixed down, unless `channel` (0-based) names the one to keep (a multichannel upload's leg:
 * the pan filter copies that channel alone, unscaled). */
export async function decodeToRaw(
  input: string,
  output: string,
  rate: number,
  cap: { seconds: number; bytes: number },
  timeoutMs = 600_000,
  channel: number | null = null,
): Promise<void> {
  if (channel !== null && !(Number.isInteger(channel) && channel >= 0))
    throw new RangeError(`channel must be a channel index (got ${channel})`);
  try {
    await run(
      'ffmpeg',
      [
        ...['-nostdin', '-v', 'error', '-y', ...SANDBOX, '-i', input],
        ...[
          '-map',
          '0:a:0',
          '-vn',
          ...(channel === null ? [] : ['-af', `pan=mono|c0=c${channel}`]),
          '-ac',
          '1',
          '-ar',
          String(rate),
          '-acodec',
          'pcm_s16le',
        ],
        ...['-t', String(cap.seconds), '-fs', String(cap.bytes), '-f', 's16le', output],
      ],
      timeoutMs,
    );
  } catch (err) {
    throw unsupported(
      `the audio could not be decoded: ${
        String((err as { stderr?: string }).stderr ?? '')
          .trim()
          .split('\n')[0] ?? ''
      }`,
      err,
    );
  }
}
