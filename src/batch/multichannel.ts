// The multichannel options of a batch upload (docs/calls.md "Stereo"), taken out of the form's
// `options` field before the rest goes to validateBatchRequest (src/batch/request.ts), which
// validates every other option exactly as a session's. Pure.
import { splitChannelOptions, type ChannelRequest } from '../core/channels.js';

/**
 * `fields` without the channel options, and the validated channel request (null: not
 * multichannel). An `options` field that is not a JSON object is passed on untouched, so
 * validateBatchRequest refuses it with its own message.
 */
export function splitChannelFields(fields: Readonly<Record<string, string>>): {
  fields: Record<string, string>;
  channels: ChannelRequest | null;
} {
  const raw = fields.options;
  if (raw === undefined || raw.trim() === '') return { fields: { ...fields }, channels: null };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { fields: { ...fields }, channels: null };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { fields: { ...fields }, channels: null };
  const options = parsed as Record<string, unknown>;
  if (!Object.hasOwn(options, 'multichannel') && !Object.hasOwn(options, 'channelSpeakers'))
    return { fields: { ...fields }, channels: null };
  const { rest, channels } = splitChannelOptions(options);
  return { fields: { ...fields, options: JSON.stringify(rest) }, channels };
}
