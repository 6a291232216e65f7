// Stereo recordings as calls (docs/calls.md "Stereo"): one leg per channel, each
// labelled with its speaker. Pure: the two request options of a batch upload
// (`multichannel`, `channelSpeakers`), the speakers of `scribed stream --channel-speakers`, and
// the rule both share. Channel 0 is `agent` and channel 1 `customer` unless the request names
// them, as a call-center recording puts them (and as mod_audio_fork's stereo does: caller
// first).
import { ScribedError } from './errors.js';
import { checkSpeaker } from './calls.js';
import { MAX_TITLE_CHARS } from './session-options.js';

/** Channels a multichannel recording may have: two parties. (A conference's channels would
 * fit a call, MAX_CALL_LEGS, but nothing here needs them yet.) */
export const MULTICHANNEL_CHANNELS = 2;
export const DEFAULT_CHANNEL_SPEAKERS: readonly string[] = ['agent', 'customer'];

/** The option keys this module takes out of a batch upload's `options`. */
export const CHANNEL_OPTION_KEYS = ['multichannel', 'channelSpeakers'] as const;

export interface ChannelRequest {
  /** One speaker per channel, in channel order. */
  speakers: string[];
}

function invalid(field: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `${field}: ${reason}`, { details: { field } });
}

/** One speaker per channel: MULTICHANNEL_CHANNELS speaker labels (the call speaker rule), all
 * different (a call's speakers are unique). `field` names them in messages. */
export function checkChannelSpeakers(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.length !== MULTICHANNEL_CHANNELS)
    invalid(field, `must be an array of ${MULTICHANNEL_CHANNELS} speaker labels, one per channel (e.g. ["agent","customer"])`);
  const speakers = value.map((s, i) => checkSpeaker(s, `${field}[${i}]`));
  if (new Set(speakers).size !== speakers.length) invalid(field, 'must name a different speaker for each channel');
  return speakers;
}

/**
 * Take the channel options out of a batch upload's `options` object: `rest` is the object
 * without them (for the session-options validator, which refuses unknown keys), `channels`
 * the validated request, or null when the upload is not multichannel. `multichannel` must be
 * a boolean; `channelSpeakers` needs `multichannel: true` (alone it would be silently
 * ignored).
 */
export function splitChannelOptions(options: Record<string, unknown>): { rest: Record<string, unknown>; channels: ChannelRequest | null } {
  const { multichannel, channelSpeakers, ...rest } = options;
  if (multichannel !== undefined && multichannel !== null && typeof multichannel !== 'boolean')
    invalid('options.multichannel', 'must be a boolean');
  const hasSpeakers = channelSpeakers !== undefined && channelSpeakers !== null;
  if (multichannel !== true) {
    if (hasSpeakers) invalid('options.channelSpeakers', 'applies only with options.multichannel: true');
    return { rest, channels: null };
  }
  return {
    rest,
    channels: { speakers: hasSpeakers ? checkChannelSpeakers(channelSpeakers, 'options.channelSpeakers') : [...DEFAULT_CHANNEL_SPEAKERS] },
  };
}

/** A multichannel upload's file must hold exactly MULTICHANNEL_CHANNELS channels. A mono file
 * is refused rather than turned into a one-leg call: the client asked for a split that the
 * file cannot give, and a call with one leg would look complete while the other party is
 * missing (or mixed into the one channel). */
export function checkMultichannelFile(channels: number): void {
  if (channels !== MULTICHANNEL_CHANNELS) {
    invalid(
      'options.multichannel',
      `the file has ${channels} channel${channels === 1 ? '' : 's'}; a multichannel upload needs exactly ${MULTICHANNEL_CHANNELS} (one per speaker). Upload a mono file without multichannel`,
    );
  }
}

/** `--channel-speakers agent,customer` of `scribed stream`. */
export function parseChannelSpeakersFlag(value: string): string[] {
  return checkChannelSpeakers(
    value.split(',').map((s) => s.trim()),
    '--channel-speakers',
  );
}

/** The History title of one channel's leg: the call's title and the speaker, as the gateway
 * names its legs (the call's title cut so the leg's fits the title limit). */
export function legTitle(callTitle: string, speaker: string): string {
  const suffix = `: ${speaker}`;
  const room = MAX_TITLE_CHARS - [...suffix].length;
  return `${[...callTitle].slice(0, room).join('')}${suffix}`;
}
