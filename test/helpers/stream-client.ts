// A raw WebSocket client for the stream protocol, as a test would drive it by hand.
import WebSocket from 'ws';
import { encodeAudioFrame } from '../../src/core/frame.js';
import { parseServerEvent } from '../../src/core/protocol.js';

export type StreamEvent = Record<string, any> & { type: string };

export class HandshakeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: { code: number; message: string },
  ) {
    super(`handshake refused: ${status} ${body.message}`);
  }
}

export class StreamClient {
  readonly events: StreamEvent[] = [];
  private cursor = 0;
  private waiters: Array<() => void> = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      if (isBinary) throw new Error('server sent a binary frame');
      // Every event any socket test sees is read by the client library's parser too: an event
      // the server sends outside its declared shape fails the run (as an unhandled error).
      const parsed = parseServerEvent(data.toString());
      if (!parsed.ok) throw new Error(`server event outside the protocol (${parsed.reason}): ${data.toString()}`);
      this.events.push(parsed.event as StreamEvent);
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    void this.closed.then(() => {
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static connect(url: string, headers: Record<string, string> = {}): Promise<StreamClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      const client = new StreamClient(ws);
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => reject(new HandshakeRefused(res.statusCode ?? 0, JSON.parse(body || '{}'))));
      });
      ws.once('error', (err) => reject(err));
    });
  }

  audio(epoch: number, sampleOffset: number, payload: Uint8Array): void {
    this.ws.send(encodeAudioFrame({ epoch, sampleOffset, payload }));
  }

  raw(data: Uint8Array | string): void {
    this.ws.send(data);
  }

  control(msg: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(msg));
  }

  /** The next event (after the previous next()) matching type and predicate. Events
   * skipped over stay in `events`. */
  async next(type: string, pred: (e: StreamEvent) => boolean = () => true, timeoutMs = 20_000): Promise<StreamEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (let i = this.cursor; i < this.events.length; i++) {
        const e = this.events[i]!;
        if (e.type === type && pred(e)) {
          this.cursor = i + 1;
          return e;
        }
      }
      if (this.ws.readyState === WebSocket.CLOSED)
        throw new Error(`socket closed while waiting for ${type}; saw ${JSON.stringify(this.events.slice(this.cursor))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${type}; saw ${JSON.stringify(this.events.slice(-5))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  ofType(type: string): StreamEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  close(): void {
    this.ws.close();
  }

  terminate(): void {
    this.ws.terminate();
  }
}
