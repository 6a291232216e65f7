// One channel of a Deepgram live socket driving its native session (a leg of a call when the
// socket carries two channels): the channel's audio numbered for the session (Deepgram clients
// send no epoch or sampleOffset) and handed to it as typed commands (session-driver.ts), and
// the session's events translated for the shared socket with the channel's index.
import type { WebSocket } from 'ws';
import { CLOSE_CODES } from '../../../core/protocol.js';
import type { LiveSession, SessionSocket } from '../../../session/live-session.js';
import { SessionDriver, type Backpressure } from '../../../session/session-driver.js';
import type { DeepgramLiveMessages } from './live-messages.js';

export interface LiveLegOptions {
  session: LiveSession;
  messages: DeepgramLiveMessages;
  socket: WebSocket;
  /** Bytes of one sample of this channel. */
  bytesPerSample: 1 | 2;
  /** The socket's backpressure, shared by its legs. */
  pressure: Backpressure;
  /** The session let its socket go: `ended` after its `closed` (the stream's normal end),
   * else a refusal or a fault with the native socket's code. */
  onRelease: (ended: boolean, code: number, reason: string) => void;
}

export class LiveLeg {
  readonly driver: SessionDriver;
  /** The session sent `closed`. */
  ended = false;
  private accepting = true;
  private readonly epoch: number;
  private sampleOffset: number;
  private readonly maxPayload: number;

  constructor(private readonly o: LiveLegOptions) {
    // A fresh session's epoch, from its first sample.
    this.epoch = o.session.cursor.epoch;
    this.sampleOffset = o.session.cursor.epochReceived;
    const max = o.session.maxFramePayloadBytes;
    this.maxPayload = max - (max % o.bytesPerSample);
    const socket = o.socket;
    const sink: SessionSocket = {
      send: (event) => {
        if (event.type === 'accepting') this.accepting = event.accepting;
        if (event.type === 'closed') this.ended = true;
        if (socket.readyState !== socket.OPEN) return;
        for (const m of o.messages.translate(event)) socket.send(JSON.stringify(m));
      },
      close: (code, reason) => o.onRelease(this.ended && code === CLOSE_CODES.normal, code, reason),
    };
    this.driver = new SessionDriver(o.session, sink, o.pressure);
  }

  get session(): LiveSession {
    return this.o.session;
  }

  /** Whole samples of this channel, in pieces of at most the session's payload limit. While
   * the session does not accept audio (spent balance, recognition backlog) they are dropped
   * without moving the cursor, so only what was in flight becomes a gap (filled with silence). */
  audio(bytes: Buffer): void {
    if (!this.accepting) return;
    for (let at = 0; at < bytes.length; at += this.maxPayload) {
      const payload = bytes.subarray(at, Math.min(bytes.length, at + this.maxPayload));
      void this.driver.audio({ epoch: this.epoch, sampleOffset: this.sampleOffset, payload });
      this.sampleOffset += payload.length / this.o.bytesPerSample;
    }
  }
}
