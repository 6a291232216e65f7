// One AudioHook session's protocol state (docs/audiohook.md), pure: the client's text
// messages in (checked for sequence, session id, position and state), what to do out (an
// action for the adapter and the server messages to send); the binary frames split into
// their channels with the stream position moved. The adapter (src/server/audiohook) does
// the I/O and drives the scribed sessions.
//
// Sequencing: each side numbers its messages from 1, +1 a message; a client message must
// carry the next seq and a serverseq no higher than the last server message sent. Position:
// the client's stream position is the audio it sent plus the audio it discarded (the
// `discarded` gaps and the time spent paused), from the position it opened at; a message
// whose position disagrees with that count by more than POSITION_TOLERANCE_US is refused.
import { microsToSamples, samplesToMicros } from './duration.js';
import {
  AudiohookProtocolError,
  parseClientMessage,
  type ClientMessage,
  type MediaChannel,
  type MediaParameter,
  type OpenParameters,
  type ServerMessage,
  type ServerMessageType,
} from './messages.js';

export const AUDIO_RATE = 8000;
/** How far a client's position may be from the server's count (a client rounding its
 * durations to milliseconds stays well inside). */
export const POSITION_TOLERANCE_US = 20_000;
/** Largest binary frame taken: 1 s of stereo PCMU (Genesys sends 200 ms frames); twice that
 * in L16. */
export const MAX_AUDIO_FRAME_BYTES = 2 * AUDIO_RATE;
/** The media formats taken, at 8 kHz: G.711 mu-law (one byte a sample) and L16, 16-bit linear
 * PCM, little-endian (two bytes a sample), the byte order Genesys' reference client sends. */
export const MEDIA_FORMATS = ['L16', 'PCMU'] as const;

export function bytesPerSample(media: Pick<MediaParameter, 'format'>): number {
  return media.format === 'L16' ? 2 : 1;
}

export type SessionState = 'PREPARING' | 'OPENING' | 'ACTIVE' | 'PAUSED' | 'CLOSING' | 'CLOSED' | 'DISCONNECTING';

export type SessionAction =
  | { kind: 'open'; open: OpenParameters; media: MediaParameter }
  | { kind: 'close'; reason: 'end' | 'error' | 'disconnect' | 'reconnect' }
  /** Audio the client did not send (discarded, or paused then resumed): `samples` of silence
   * per channel, so each leg's time line stays the conversation's. */
  | { kind: 'gap'; samples: number }
  | { kind: 'paused' }
  | { kind: 'update'; language: string | null }
  | { kind: 'client_error'; code: number; message: string }
  | { kind: 'none' };

export interface TextOutcome {
  message: ClientMessage;
  action: SessionAction;
  /** Server messages to send now, in order. */
  replies: ServerMessage[];
}

/** The media the server takes from an offer: L16 or PCMU at 8 kHz, both channels when offered
 * (stereo), else the first single channel offered; L16 before PCMU for the same channels (the
 * recognizer gets the samples as they were, not G.711's); null when nothing fits. */
export function selectMedia(offered: readonly MediaParameter[]): MediaParameter | null {
  const fits = offered.filter(
    (m) => m.type === 'audio' && (MEDIA_FORMATS as readonly string[]).includes(m.format) && m.rate === AUDIO_RATE,
  );
  const pick = (list: MediaParameter[]) => list.find((m) => m.format === 'L16') ?? list[0];
  return pick(fits.filter((m) => m.channels.length === 2)) ?? pick(fits.filter((m) => m.channels.length === 1)) ?? null;
}

export class AudiohookSession {
  state: SessionState = 'PREPARING';
  /** Last seq the server sent, last client seq handled. */
  seq = 0;
  clientseq = 0;
  media: MediaParameter | null = null;
  /** The client's stream position, samples per channel. */
  private position = 0;
  /** Audio samples per channel received on this connection (not gaps). */
  audioSamples = 0;

  /** `id`: the session id the upgrade named (Audiohook-Session-Id). */
  constructor(readonly id: string) {}

  get positionUs(): number {
    return samplesToMicros(this.position, AUDIO_RATE);
  }

  get channels(): readonly MediaChannel[] {
    return this.media?.channels ?? [];
  }

  /** A server message with the next seq. */
  build(type: ServerMessageType, parameters: Record<string, unknown> = {}): ServerMessage {
    this.seq += 1;
    return { version: '2', id: this.id, type, seq: this.seq, clientseq: this.clientseq, parameters };
  }

  /** A client text message: checked, sequenced, and turned into what to do. */
  text(text: string): TextOutcome {
    const message = parseClientMessage(text);
    // After a `disconnect` for a message that broke the sequence, the client's `close` cannot
    // follow the sequence either: it is taken as it comes, so the session ends with `closed`.
    if (this.state === 'DISCONNECTING' && message.type === 'close' && message.id === this.id) {
      this.clientseq = message.seq;
      this.state = 'CLOSING';
      return { message, action: { kind: 'close', reason: message.parameters.reason }, replies: [] };
    }
    if (message.seq !== this.clientseq + 1)
      throw new AudiohookProtocolError('seq', `Invalid seq value ${message.seq}: expected ${this.clientseq + 1}`);
    if (message.serverseq > this.seq)
      throw new AudiohookProtocolError('serverseq', `Invalid serverseq value ${message.serverseq}: the server sent ${this.seq}`);
    if (message.id !== this.id)
      throw new AudiohookProtocolError(
        'session_id',
        'Session identifier mismatch (the message id is not the Audiohook-Session-Id of the upgrade)',
      );
    this.clientseq = message.seq;
    if (message.type === 'open') return this.open(message);
    if (message.type === 'discarded' || message.type === 'resumed') return this.gapMessage(message);
    if (message.type !== 'close' && message.type !== 'error') this.checkPosition(message.positionUs);
    switch (message.type) {
      case 'close':
        if (this.state === 'CLOSING' || this.state === 'CLOSED') return { message, action: { kind: 'none' }, replies: [] };
        this.state = 'CLOSING';
        return { message, action: { kind: 'close', reason: message.parameters.reason }, replies: [] };
      case 'ping':
        return { message, action: { kind: 'none' }, replies: [this.build('pong')] };
      case 'paused':
        if (this.state !== 'ACTIVE') return { message, action: { kind: 'none' }, replies: [] };
        this.state = 'PAUSED';
        return { message, action: { kind: 'paused' }, replies: [] };
      case 'update':
        return { message, action: { kind: 'update', language: message.parameters.language }, replies: [] };
      case 'error':
        return {
          message,
          action: { kind: 'client_error', code: message.parameters.code, message: message.parameters.message },
          replies: [],
        };
    }
  }

  private open(message: Extract<ClientMessage, { type: 'open' }>): TextOutcome {
    if (this.state !== 'PREPARING') throw new AudiohookProtocolError('state', `'open' in state ${this.state}`);
    const media = selectMedia(message.parameters.media);
    if (!media) {
      const offered = message.parameters.media.map((m) => `${m.format}/${m.rate}`).join(', ');
      throw new AudiohookProtocolError('media', `No supported media format offered (${offered}); this server takes L16 or PCMU at 8000 Hz`);
    }
    this.media = media;
    this.position = microsToSamples(message.positionUs, AUDIO_RATE);
    this.state = 'OPENING';
    return { message, action: { kind: 'open', open: message.parameters, media }, replies: [] };
  }

  /** The adapter set the session up: `opened` with the media chosen. */
  opened(): ServerMessage {
    if (this.state !== 'OPENING') throw new Error(`opened in state ${this.state}`);
    this.state = 'ACTIVE';
    return this.build('opened', { media: [this.media], startPaused: false });
  }

  private gapMessage(message: Extract<ClientMessage, { type: 'discarded' | 'resumed' }>): TextOutcome {
    const { startUs, discardedUs } = message.parameters;
    if (message.type === 'resumed' && this.state !== 'PAUSED') {
      if (this.state === 'ACTIVE') return { message, action: { kind: 'none' }, replies: [] };
      throw new AudiohookProtocolError('state', `'resumed' in state ${this.state}`);
    }
    if (message.type === 'discarded' && this.state !== 'ACTIVE' && this.state !== 'PAUSED')
      throw new AudiohookProtocolError('state', `'discarded' in state ${this.state}`);
    this.checkPosition(startUs, 'start');
    const samples = microsToSamples(discardedUs, AUDIO_RATE);
    // The message's own position is at the gap's start or at its end.
    const at = microsToSamples(message.positionUs, AUDIO_RATE);
    const end = this.position + samples;
    const tolerance = microsToSamples(POSITION_TOLERANCE_US, AUDIO_RATE);
    if (Math.abs(at - this.position) > tolerance && Math.abs(at - end) > tolerance) {
      throw new AudiohookProtocolError(
        'position',
        `Invalid position ${message.positionUs / 1e6}s for a gap from ${startUs / 1e6}s of ${discardedUs / 1e6}s`,
      );
    }
    this.position = end;
    if (message.type === 'resumed') this.state = 'ACTIVE';
    return { message, action: samples > 0 ? { kind: 'gap', samples } : { kind: 'none' }, replies: [] };
  }

  private checkPosition(us: number, field = 'position'): void {
    if (this.state === 'PREPARING') return;
    const diff = Math.abs(microsToSamples(us, AUDIO_RATE) - this.position);
    if (diff > microsToSamples(POSITION_TOLERANCE_US, AUDIO_RATE)) {
      throw new AudiohookProtocolError(
        'position',
        `Invalid ${field} ${us / 1e6}s: the server counted ${this.positionUs / 1e6}s of audio and gaps`,
      );
    }
  }

  /** A binary frame: samples of the format `opened` named (PCMU or L16), the channels
   * interleaved in the order it named; one buffer per channel. */
  audio(frame: Buffer): Buffer[] {
    if (this.state !== 'ACTIVE') throw new AudiohookProtocolError('audio', `Received audio in state ${this.state}`);
    const n = this.channels.length;
    const width = bytesPerSample(this.media!);
    const bound = MAX_AUDIO_FRAME_BYTES * (n / 2) * width;
    if (frame.length > bound)
      throw new AudiohookProtocolError('too_large', `Audio frame of ${frame.length} bytes is over the ${bound}-byte bound (1 s)`);
    if (frame.length % (n * width) !== 0)
      throw new AudiohookProtocolError('audio', `Audio frame of ${frame.length} bytes is not a whole number of ${n}-channel samples`);
    const samples = frame.length / (n * width);
    this.position += samples;
    this.audioSamples += samples;
    return splitInterleaved(frame, n, width);
  }

  /** A refusal or an end the server decides: `disconnect`; the client answers with `close`. */
  disconnect(reason: 'completed' | 'unauthorized' | 'error', info: string): ServerMessage {
    this.state = 'DISCONNECTING';
    return this.build('disconnect', { reason, info: info.slice(0, 1024) });
  }

  closed(): ServerMessage {
    this.state = 'CLOSED';
    return this.build('closed');
  }
}

/** `n` interleaved channels of `width`-byte samples, one buffer per channel. */
export function splitInterleaved(frame: Buffer, n: number, width = 1): Buffer[] {
  if (n === 1) return [frame];
  const per = Math.floor(frame.length / (n * width));
  const out = Array.from({ length: n }, () => Buffer.allocUnsafe(per * width));
  for (let i = 0; i < per; i++)
    for (let c = 0; c < n; c++) for (let b = 0; b < width; b++) out[c]![i * width + b] = frame[(i * n + c) * width + b]!;
  return out;
}
