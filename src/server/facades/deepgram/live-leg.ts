// One channel of a Deepgram live socket driving its native session (a leg of a call when the
// socket carries two channels): the channel's audio numbered for the session (Deepgram clients
// send no epoch or sampleOffset) and handed to it as typed commands (session-driver.ts), and
// the session's events translated for the shared socket with the channel's index.
import type { WebSocket } from 'ws';
import { CLOSE_CODES } from '../../../core/protocol.js';
import type { LiveSession, SessionSocket } from '../../../session/live-session.js';
import { UnframedAudio } from '../../../session/unframed-audio.js';
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
  private readonly input: UnframedAudio;

  constructor(private readonly o: LiveLegOptions) {
    const socket = o.socket;
    const sink: SessionSocket = {
      send: (event) => {
        if (event.type === 'accepting') this.input.accepting = event.accepting;
        if (event.type === 'closed') this.ended = true;
        if (socket.readyState !== socket.OPEN) return;
        for (const m of o.messages.translate(event)) socket.send(JSON.stringify(m));
      },
      close: (code, reason) => o.onRelease(this.ended && code === CLOSE_CODES.normal, code, reason),
    };
    this.driver = new SessionDriver(o.session, sink, o.pressure);
    this.input = new UnframedAudio(this.driver, o.bytesPerSample);
  }

  get session(): LiveSession {
    return this.o.session;
  }

  /** Whole samples of this channel, in pieces of at most the session's payload limit. While
   * the session does not accept audio (spent balance, recognition backlog) they are dropped
   * without moving the cursor, so only what was in flight becomes a gap (filled with silence). */
  audio(bytes: Buffer): void {
    this.input.push(bytes);
  }
}
