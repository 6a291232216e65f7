// An AudioHook client written from Genesys' public protocol description (AudioHook Monitor,
// protocol version 2), not from the server's code: the upgrade's headers and its HTTP Message
// Signature (RFC 9421: the signature base built here line by line, HMAC-SHA256 keyed with the
// base64-decoded client secret), then messages `{version: "2", id, type, seq, serverseq,
// position, parameters}` numbered from 1, with the position the audio sent plus the audio
// discarded, binary frames of PCMU with the channels interleaved. It answers a `disconnect`
// with `close` as a Genesys client does, and records every server message.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import WebSocket from 'ws';

export const ORG_ID = 'd7934305-0972-4844-938e-9060eef73d05';

export interface SignOptions {
  secret: string;
  /** Unix seconds; default now. */
  created?: number;
  lifetimeS?: number;
  nonce?: string;
  /** Tamper with the signature after computing it. */
  corrupt?: boolean;
}

export interface ConnectOptions {
  wsBase: string;
  path?: string;
  apiKey: string;
  sessionId?: string;
  organizationId?: string;
  correlationId?: string;
  sign?: SignOptions;
}

export interface Refusal {
  status: number;
  body: string;
}

/** The signature headers for the upgrade, built from RFC 9421 as Genesys uses it. */
export function signatureHeaders(url: URL, headers: Record<string, string>, o: SignOptions): Record<string, string> {
  const created = o.created ?? Math.floor(Date.now() / 1000);
  const expires = created + (o.lifetimeS ?? 30);
  const nonce = o.nonce ?? randomBytes(18).toString('base64');
  const covered: Array<[string, string]> = [
    ['@request-target', `${url.pathname}${url.search}`],
    ['@authority', url.host],
    ['audiohook-organization-id', headers['Audiohook-Organization-Id']!],
    ['audiohook-session-id', headers['Audiohook-Session-Id']!],
    ['audiohook-correlation-id', headers['Audiohook-Correlation-Id']!],
    ['x-api-key', headers['X-API-KEY']!],
  ];
  const params = `(${covered.map(([n]) => `"${n}"`).join(' ')});keyid="${headers['X-API-KEY']}";nonce="${nonce}";alg="hmac-sha256";created=${created};expires=${expires}`;
  const base = [...covered.map(([n, v]) => `"${n}": ${v}`), `"@signature-params": ${params}`].join('\n');
  const mac = createHmac('sha256', Buffer.from(o.secret, 'base64')).update(base).digest();
  if (o.corrupt) mac[0] = mac[0]! ^ 0xff;
  return { 'Signature-Input': `sig1=${params}`, Signature: `sig1=:${mac.toString('base64')}:` };
}

export class AudiohookClient {
  readonly messages: any[] = [];
  seq = 0;
  serverseq = 0;
  /** Stream position in samples per channel (audio sent and discarded). */
  positionSamples = 0;
  closedCode: number | null = null;

  private constructor(
    readonly ws: WebSocket,
    readonly sessionId: string,
  ) {
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const m = JSON.parse(data.toString());
      this.messages.push(m);
      this.serverseq = m.seq;
      if (m.type === 'disconnect') this.send('close', { reason: 'disconnect' });
    });
    ws.on('close', (code) => {
      this.closedCode = code;
    });
  }

  static connect(o: ConnectOptions): Promise<AudiohookClient | Refusal> {
    const url = new URL(`${o.wsBase}${o.path ?? '/audiohook/v2'}`);
    const sessionId = o.sessionId ?? randomUUID();
    const headers: Record<string, string> = {
      'Audiohook-Organization-Id': o.organizationId ?? ORG_ID,
      'Audiohook-Session-Id': sessionId,
      'Audiohook-Correlation-Id': o.correlationId ?? randomUUID(),
      'X-API-KEY': o.apiKey,
    };
    const all = o.sign ? { ...headers, ...signatureHeaders(url, headers, o.sign) } : headers;
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers: all });
      ws.on('open', () => resolve(new AudiohookClient(ws, sessionId)));
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      ws.on('error', (err) => reject(err));
    });
  }

  get position(): string {
    return `PT${this.positionSamples / 8000}S`;
  }

  /** A client message with the next seq. `overrides` replace envelope fields (bad input). */
  send(type: string, parameters: Record<string, unknown> = {}, overrides: Record<string, unknown> = {}): void {
    this.seq += 1;
    this.raw(
      JSON.stringify({
        version: '2',
        id: this.sessionId,
        type,
        seq: this.seq,
        serverseq: this.serverseq,
        position: this.position,
        parameters,
        ...overrides,
      }),
    );
  }

  raw(data: string | Buffer): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(data);
  }

  open(parameters: { conversationId: string; media?: unknown[]; continuedSessions?: unknown[]; ani?: string; dnis?: string }): void {
    this.send('open', {
      organizationId: ORG_ID,
      conversationId: parameters.conversationId,
      participant: {
        id: randomUUID(),
        ani: parameters.ani ?? '+15555550100',
        aniName: 'Pat Caller',
        dnis: parameters.dnis ?? '+18005550199',
      },
      media: parameters.media ?? [
        { type: 'audio', format: 'PCMU', channels: ['external', 'internal'], rate: 8000 },
        { type: 'audio', format: 'PCMU', channels: ['external'], rate: 8000 },
        { type: 'audio', format: 'PCMU', channels: ['internal'], rate: 8000 },
      ],
      language: 'en-US',
      ...(parameters.continuedSessions ? { continuedSessions: parameters.continuedSessions } : {}),
    });
  }

  /** One frame of interleaved samples: PCMU (`channels` bytes a sample instant), or L16 with
   * `width` 2. */
  audio(frame: Buffer, channels: number, width = 1): void {
    this.raw(frame);
    this.positionSamples += frame.length / (channels * width);
  }

  /** Audio the client drops: `discarded` from the current position. */
  discard(samples: number): void {
    const start = this.position;
    this.positionSamples += samples;
    this.send('discarded', { start, discarded: `PT${samples / 8000}S` }, { position: start });
  }

  pause(): void {
    this.send('paused');
  }

  /** `resumed` after `samples` of paused time. */
  resume(samples: number): void {
    const start = this.position;
    this.positionSamples += samples;
    this.send('resumed', { start, discarded: `PT${samples / 8000}S` });
  }

  next(pred: (m: any) => boolean, ms = 30_000, what = 'a message'): Promise<any> {
    const until = Date.now() + ms;
    return new Promise((resolve, reject) => {
      const check = () => {
        const m = this.messages.find(pred);
        if (m) return resolve(m);
        if (this.closedCode !== null)
          return reject(
            new Error(`socket closed (${this.closedCode}) waiting for ${what}; got ${JSON.stringify(this.messages.map((x) => x.type))}`),
          );
        if (Date.now() > until)
          return reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages.map((x) => x.type))}`));
        setTimeout(check, 20);
      };
      check();
    });
  }

  whenClosed(ms = 15_000): Promise<number> {
    return new Promise((resolve, reject) => {
      const until = Date.now() + ms;
      const check = () => {
        if (this.closedCode !== null) return resolve(this.closedCode);
        if (Date.now() > until) return reject(new Error('socket not closed'));
        setTimeout(check, 50);
      };
      check();
    });
  }

  /** Transcript entities the server sent, of one channel. */
  transcripts(channel: 'external' | 'internal', final = true): any[] {
    return this.messages
      .filter((m) => m.type === 'event')
      .flatMap((m) => m.parameters.entities)
      .filter((e: any) => e.type === 'transcript' && e.data.channel === channel && e.data.isFinal === final)
      .map((e: any) => e.data);
  }
}

/** Two mono PCMU signals as interleaved stereo (external first), the shorter padded with
 * mu-law silence. */
export function interleavePcmu(external: Buffer, internal: Buffer): Buffer {
  const n = Math.max(external.length, internal.length);
  const out = Buffer.alloc(2 * n, 0xff);
  for (let i = 0; i < n; i++) {
    if (i < external.length) out[2 * i] = external[i]!;
    if (i < internal.length) out[2 * i + 1] = internal[i]!;
  }
  return out;
}

/** Two mono 16-bit signals as interleaved stereo L16, little-endian (external first), the
 * shorter padded with silence. */
export function interleaveL16(external: Int16Array, internal: Int16Array): Buffer {
  const n = Math.max(external.length, internal.length);
  const out = Buffer.alloc(4 * n);
  for (let i = 0; i < n; i++) {
    out.writeInt16LE(external[i] ?? 0, 4 * i);
    out.writeInt16LE(internal[i] ?? 0, 4 * i + 2);
  }
  return out;
}
