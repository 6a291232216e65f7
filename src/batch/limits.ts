// How much audio one batch upload may decode to, decided before it is decoded. Pure.
//
// An upload's size says little about its length (an hour of 8 kHz FLAC silence is 656 KB
// and decodes to 57.6 MB of PCM), so the route works out the allowance first: the seconds
// the account's balance pays for (1 Character per started second, docs/api.md) and the
// server's per-file maximum (SCRIBED_BATCH_MAX_AUDIO_SECONDS), whichever is smaller.
// - A file whose container states a longer duration is refused before decoding.
// - The decode is capped at the allowance plus one second (ffmpeg -t and -fs), so a
//   container that understates its length (an mp3 without a Xing header whose first frames
//   have a high bitrate) still cannot write more; a decode that reaches the cap is refused.
// - Over the server's maximum: 413 PAYLOAD_TOO_LARGE (a top-up would not help); over the
//   balance only: 402 INSUFFICIENT_CHARACTERS, with the cost when it is known.
import { charactersDue } from '../core/billing.js';
import { ScribedError } from '../core/errors.js';

export interface AudioAllowance {
  /** Seconds of audio the upload may have: min(balance / legs, maxAudioSeconds). */
  seconds: number;
  balance: bigint;
  maxAudioSeconds: number;
  /** Legs the audio is transcribed as, each charged for the whole length: 1, or a
   * multichannel upload's channels. */
  legs: number;
}

export interface DecodeCap {
  seconds: number;
  samples: number;
  /** Bytes of s16le mono output. */
  bytes: number;
}

/** `legs`: a multichannel upload pays for each channel's duration (docs/calls.md), so the
 * balance buys 1/legs of the seconds; the server's maximum is per channel, as for a mono file. */
export function audioAllowance(balance: bigint, maxAudioSeconds: number, legs = 1): AudioAllowance {
  if (!(Number.isInteger(maxAudioSeconds) && maxAudioSeconds >= 1))
    throw new RangeError(`maxAudioSeconds must be a positive integer (got ${maxAudioSeconds})`);
  if (!(Number.isInteger(legs) && legs >= 1)) throw new RangeError(`legs must be a positive integer (got ${legs})`);
  const perLeg = balance < 0n ? 0n : balance / BigInt(legs);
  const paid = perLeg < BigInt(maxAudioSeconds) ? Number(perLeg) : maxAudioSeconds;
  return { seconds: paid, balance, maxAudioSeconds, legs };
}

/** The decode's hard limit at `rate`: one second past the allowance, so reaching it proves
 * the audio is over the allowance. */
export function decodeCap(a: AudioAllowance, rate: number): DecodeCap {
  const seconds = a.seconds + 1;
  return { seconds, samples: seconds * rate, bytes: seconds * rate * 2 };
}

function overServerMaximum(seconds: string, a: AudioAllowance): ScribedError {
  return new ScribedError(
    'PAYLOAD_TOO_LARGE',
    `the audio is ${seconds} s long, over this server's limit of ${a.maxAudioSeconds} s per file`,
  );
}

/** The refusal for a file whose container states `durationSec`, or null to go on and decode
 * it (also when no duration is stated: the decode cap holds then). */
export function refuseStatedDuration(durationSec: number | null, a: AudioAllowance): ScribedError | null {
  if (durationSec === null || !Number.isFinite(durationSec) || durationSec <= a.seconds) return null;
  if (durationSec > a.maxAudioSeconds) return overServerMaximum(durationSec.toFixed(1), a);
  return new ScribedError(
    'INSUFFICIENT_CHARACTERS',
    `transcribing this file costs ${Math.ceil(durationSec) * a.legs} Characters, more than the balance`,
  );
}

/** The refusal for a decode (capped by decodeCap) that produced `samples` at `rate`, or
 * null when the audio is within the allowance. */
export function refuseDecoded(samples: bigint, rate: number, a: AudioAllowance): ScribedError | null {
  const limit = BigInt(a.seconds) * BigInt(rate);
  if (samples <= limit) return null;
  // Within the last half second of the cap the decode was (or may have been) cut short: the
  // real length is unknown, only that it is over the allowance.
  const capped = samples >= limit + BigInt(Math.floor(rate / 2));
  const serverBinds = a.seconds === a.maxAudioSeconds;
  if (samples > BigInt(a.maxAudioSeconds) * BigInt(rate) || (capped && serverBinds)) {
    return capped
      ? new ScribedError('PAYLOAD_TOO_LARGE', `the audio is longer than this server's limit of ${a.maxAudioSeconds} s per file`)
      : overServerMaximum((Number(samples) / rate).toFixed(1), a);
  }
  return capped
    ? new ScribedError('INSUFFICIENT_CHARACTERS', `transcribing this file costs more than the balance of ${a.balance} Characters`)
    : new ScribedError(
        'INSUFFICIENT_CHARACTERS',
        `transcribing this file costs ${charactersDue(samples, rate) * BigInt(a.legs)} Characters, more than the balance`,
      );
}
