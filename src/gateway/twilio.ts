// Twilio Media Streams, the messages Twilio sends to a WebSocket server (docs/gateway.md lists
// the vendor page this follows): `connected`, then one `start` (callSid, tracks,
// customParameters, mediaFormat), then `media` (track inbound|outbound, chunk, timestamp in ms
// from the stream's start, base64 mu-law 8 kHz mono payload), `mark`, `dtmf`, and `stop`.
// Every field Twilio documents as a string (sequenceNumber, chunk, timestamp) is taken as a
// string of digits or a number. Pure: parsing and per-stream state, no I/O.

import { AGENT_ID_RULE, isAgentId } from '../core/calls.js';

/** Why a message was refused: the metric label and the log field. */
export type TwilioInvalidReason =
  'not_json' | 'unknown_event' | 'bad_field' | 'bad_payload' | 'unsupported_format' | 'out_of_order' | 'bad_speaker';

export type TwilioTrack = 'inbound' | 'outbound';

export interface TwilioStart {
  event: 'start';
  streamSid: string;
  accountSid: string;
  callSid: string;
  tracks: TwilioTrack[];
  customParameters: Record<string, string>;
}

export type TwilioMessage =
  | { event: 'connected'; protocol: string; version: string }
  | TwilioStart
  | { event: 'media'; track: TwilioTrack; chunk: number; timestampMs: number; payload: Buffer }
  | { event: 'mark'; name: string }
  | { event: 'dtmf'; digit: string }
  | { event: 'stop' };

export type TwilioParse = { ok: true; message: TwilioMessage } | { ok: false; reason: TwilioInvalidReason; detail: string };

/** The speaker names a call may use (the calls API's rule). */
export const SPEAKER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;
const SID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** Twilio sends 20 ms (160 bytes); a 10 s chunk is far beyond anything it sends. */
const MAX_PAYLOAD_BYTES = 80_000;

function fail(reason: TwilioInvalidReason, detail: string): TwilioParse {
  return { ok: false, reason, detail };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A non-negative integer given as a number or a string of digits. */
function counter(v: unknown): number | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  if (typeof v === 'string' && /^\d{1,15}$/.test(v)) return Number(v);
  return null;
}

export function parseTwilioMessage(text: string): TwilioParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail('not_json', 'the text frame is not JSON');
  }
  if (!isObject(value) || typeof value.event !== 'string') return fail('bad_field', 'no event');
  switch (value.event) {
    case 'connected':
      return {
        ok: true,
        message: {
          event: 'connected',
          protocol: typeof value.protocol === 'string' ? value.protocol : '',
          version: typeof value.version === 'string' ? value.version : '',
        },
      };
    case 'start': {
      const s = value.start;
      if (!isObject(s)) return fail('bad_field', 'start without its start object');
      const streamSid = s.streamSid ?? value.streamSid;
      if (typeof s.callSid !== 'string' || !SID_PATTERN.test(s.callSid))
        return fail('bad_field', 'start.callSid missing or not 1-128 of [A-Za-z0-9_-]');
      if (typeof streamSid !== 'string' || !SID_PATTERN.test(streamSid)) return fail('bad_field', 'start.streamSid missing');
      if (
        !Array.isArray(s.tracks) ||
        s.tracks.length === 0 ||
        s.tracks.length > 2 ||
        !s.tracks.every((t) => t === 'inbound' || t === 'outbound') ||
        new Set(s.tracks).size !== s.tracks.length
      ) {
        return fail('bad_field', 'start.tracks must list inbound and/or outbound');
      }
      const custom: Record<string, string> = {};
      if (s.customParameters !== undefined) {
        if (!isObject(s.customParameters)) return fail('bad_field', 'start.customParameters is not an object');
        for (const [k, v] of Object.entries(s.customParameters)) if (typeof v === 'string') custom[k] = v;
      }
      // The call's agent, as the TwiML's <Parameter name="agentId" .../> names it.
      if (custom.agentId !== undefined && !isAgentId(custom.agentId)) return fail('bad_field', `start.customParameters.${AGENT_ID_RULE}`);
      const f = s.mediaFormat;
      if (f !== undefined) {
        if (!isObject(f)) return fail('bad_field', 'start.mediaFormat is not an object');
        if (f.encoding !== 'audio/x-mulaw' || Number(f.sampleRate) !== 8000 || Number(f.channels) !== 1) {
          return fail(
            'unsupported_format',
            `mediaFormat ${String(f.encoding)}/${String(f.sampleRate)}/${String(f.channels)} (Twilio sends audio/x-mulaw/8000/1)`,
          );
        }
      }
      return {
        ok: true,
        message: {
          event: 'start',
          streamSid,
          accountSid: typeof s.accountSid === 'string' ? s.accountSid : '',
          callSid: s.callSid,
          tracks: s.tracks as TwilioTrack[],
          customParameters: custom,
        },
      };
    }
    case 'media': {
      const m = value.media;
      if (!isObject(m)) return fail('bad_field', 'media without its media object');
      // Twilio's unidirectional streams name the track; a stream of one track may omit it.
      const track = m.track ?? 'inbound';
      if (track !== 'inbound' && track !== 'outbound') return fail('bad_field', 'media.track must be inbound or outbound');
      const chunk = counter(m.chunk);
      const timestampMs = counter(m.timestamp);
      if (chunk === null || timestampMs === null) return fail('bad_field', 'media.chunk and media.timestamp must be non-negative integers');
      if (typeof m.payload !== 'string' || m.payload.length === 0 || !BASE64_PATTERN.test(m.payload))
        return fail('bad_payload', 'media.payload is not base64');
      const payload = Buffer.from(m.payload, 'base64');
      if (payload.length > MAX_PAYLOAD_BYTES) return fail('bad_payload', `media.payload over ${MAX_PAYLOAD_BYTES} bytes`);
      return { ok: true, message: { event: 'media', track, chunk, timestampMs, payload } };
    }
    case 'mark': {
      const name = isObject(value.mark) && typeof value.mark.name === 'string' ? value.mark.name : '';
      return { ok: true, message: { event: 'mark', name } };
    }
    case 'dtmf': {
      const digit = isObject(value.dtmf) && typeof value.dtmf.digit === 'string' ? value.dtmf.digit : '';
      return { ok: true, message: { event: 'dtmf', digit } };
    }
    case 'stop':
      return { ok: true, message: { event: 'stop' } };
    default:
      return fail('unknown_event', `event ${value.event.slice(0, 32)}`);
  }
}

/** The speaker of each track: `inbound`/`outbound` unless customParameters names them. */
export function twilioSpeakers(start: TwilioStart): { ok: true; speakers: Record<TwilioTrack, string> } | { ok: false; detail: string } {
  const speakers: Record<TwilioTrack, string> = {
    inbound: start.customParameters.inboundSpeaker ?? 'inbound',
    outbound: start.customParameters.outboundSpeaker ?? 'outbound',
  };
  for (const track of ['inbound', 'outbound'] as const) {
    if (!SPEAKER_PATTERN.test(speakers[track])) return { ok: false, detail: `${track}Speaker must match ${SPEAKER_PATTERN.source}` };
  }
  if (speakers.inbound === speakers.outbound) return { ok: false, detail: 'inboundSpeaker and outboundSpeaker must differ' };
  return { ok: true, speakers };
}

/** Largest silence a timestamp jump may add at once (a longer jump is a sender's clock fault,
 * not a pause to reproduce). */
export const MAX_FILL_MS = 10_000;

/**
 * Where one track's audio goes on its leg's timeline. Twilio stamps each chunk with ms since
 * the stream started; when a track's timestamp runs ahead of the audio received (Twilio sends
 * nothing for a track that is on hold, say), the gap is filled with silence so the two legs
 * stay aligned in time and the merged transcript keeps its order.
 */
export class TwilioTrackClock {
  /** Samples placed on the timeline (audio and fill). */
  placed = 0;
  filledSamples = 0;
  lastChunk = -1;

  /** Silence samples to place before a chunk stamped `timestampMs`. */
  fillBefore(timestampMs: number): number {
    const due = timestampMs * 8;
    const gap = due - this.placed;
    // Less than one 20 ms frame is ordinary jitter of the stamps.
    if (gap < 160) return 0;
    const fill = Math.min(gap, MAX_FILL_MS * 8);
    return fill;
  }

  place(samples: number, fill: number): void {
    this.placed += samples + fill;
    this.filledSamples += fill;
  }
}

/** mu-law silence (the code of 0). */
export const MULAW_SILENCE = 0xff;

/**
 * The order Twilio sends messages in: `connected` (optional here: a proxy may swallow it),
 * one `start`, then media of the started tracks, then `stop`. What breaks it is refused.
 */
export class TwilioStreamState {
  start: TwilioStart | null = null;
  stopped = false;

  /** null when the message may come now, else why not. */
  check(message: TwilioMessage): string | null {
    if (this.stopped) return 'message after stop';
    switch (message.event) {
      case 'connected':
        return this.start ? 'connected after start' : null;
      case 'start':
        return this.start ? 'a second start' : null;
      case 'media':
        if (!this.start) return 'media before start';
        return this.start.tracks.includes(message.track) ? null : `media of track ${message.track}, not in start.tracks`;
      case 'stop':
        return null;
      default:
        return null;
    }
  }

  apply(message: TwilioMessage): void {
    if (message.event === 'start') this.start = message;
    if (message.event === 'stop') this.stopped = true;
  }
}
