// The session encoding and channel count for a file whose header says what it holds
// (`scribed stream --input FILE`, docs/ingest.md "Files"). Pure.
//
// A file's own sample rate decides: an 8 kHz call recording streamed as 16 kHz is upsampled by
// ffmpeg, and the recognizer's wideband model hears band-limited telephone audio as nonsense
// (both parties of a stereo call, silently). So --encoding may be left out (it is read from the
// file), and an --encoding that would upsample the file is refused by name unless forced.
// Downsampling (a 44.1 kHz file to 16 kHz) loses nothing the recognizer uses and is allowed.
import { INPUT_ENCODINGS, type InputEncodingName } from './encodings.js';

/** What ffprobe reads from a file's first audio stream. */
export interface FileAudioFormat {
  sampleRateHz: number;
  channels: number;
  /** ffprobe's codec_name (pcm_mulaw, pcm_alaw, pcm_s16le, mp3, flac, ...). */
  codec: string;
}

export type FileEncodingChoice = { encoding: InputEncodingName; channels: 1 | 2 } | { refuse: string };

const PCM_RATES = (Object.values(INPUT_ENCODINGS) as Array<(typeof INPUT_ENCODINGS)[InputEncodingName]>)
  .filter((e) => e.bytesPerSample === 2)
  .map((e) => e.sampleRateHz)
  .sort((a, b) => a - b);

/** The PCM encoding at the file's rate, or the highest below it (8 kHz at least). */
function pcmEncodingFor(rateHz: number): InputEncodingName {
  const rate = PCM_RATES.filter((r) => r <= rateHz).pop() ?? PCM_RATES[0]!;
  return `pcm_s16le_${rate}` as InputEncodingName;
}

/** The encoding a file streams best in: its own G.711 law when mono 8 kHz mu-law or A-law (no
 * conversion), else 16-bit PCM at its rate (or the nearest session rate below). Stereo files
 * get PCM: two legs take 16-bit PCM. */
export function encodingForFile(file: FileAudioFormat): InputEncodingName {
  if (file.channels === 1 && file.sampleRateHz === 8000 && file.codec === 'pcm_mulaw') return 'mulaw_8000';
  if (file.channels === 1 && file.sampleRateHz === 8000 && file.codec === 'pcm_alaw') return 'alaw_8000';
  return pcmEncodingFor(file.sampleRateHz);
}

/**
 * The encoding and channels to stream `file` with. `requested`: --encoding, if given;
 * `channelsFlag`: --channels, if given; `force`: --force-encoding. Without --encoding both come
 * from the file (a stereo file is two legs); with it, the channels stay what --channels says
 * (1 by default: the stereo warning tells how to keep both).
 */
export function chooseFileEncoding(
  name: string,
  file: FileAudioFormat,
  requested: InputEncodingName | undefined,
  channelsFlag: 1 | 2 | undefined,
  force: boolean,
): FileEncodingChoice {
  const own = encodingForFile(file);
  if (requested === undefined) {
    const channels = channelsFlag ?? (file.channels >= 2 ? 2 : 1);
    return { encoding: channels === 2 ? pcmEncodingFor(file.sampleRateHz) : own, channels };
  }
  const asked = INPUT_ENCODINGS[requested].sampleRateHz;
  if (asked > file.sampleRateHz && !force) {
    const suggest = channelsFlag === 2 ? pcmEncodingFor(file.sampleRateHz) : own;
    return {
      refuse:
        `${name} is ${file.sampleRateHz} Hz audio: --encoding ${requested} (${asked} Hz) would upsample it, and the recognizer hears ` +
        `upsampled telephone audio as nonsense. Run with --encoding ${suggest}, or leave --encoding out (it is read from the file), ` +
        'or add --force-encoding to stream it as asked',
    };
  }
  return { encoding: requested, channels: channelsFlag ?? 1 };
}
