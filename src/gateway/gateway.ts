// `scribed gateway`'s listeners: one HTTP server whose WebSocket upgrades serve Twilio Media
// Streams at /twilio and mod_audio_fork / jambonz listen at /fork, and a TCP server for
// Asterisk AudioSocket. Each adapter only moves bytes: parsing and validation are the pure
// cores beside it (twilio.ts, fork.ts, audiosocket.ts), and each leg streams through
// GatewayLeg (the client library). A malformed or out-of-order message is counted and logged,
// never thrown: one PBX's bad frame cannot end another's call. docs/gateway.md.
import { EventEmitter } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { randomUUID, timingSafeEqual, createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket, type RawData } from 'ws';
import type { FinalSegment } from '../client/session-streamer.js';
import type { InputEncodingName } from '../core/audio/encodings.js';
import { CallLinker } from './call-link.js';
import { GatewayLeg, type LegReport, type LegShared } from './leg.js';
import type { GatewayMetrics, GatewayProtocol } from './metrics.js';
import { MULAW_SILENCE, parseTwilioMessage, TwilioStreamState, TwilioTrackClock, twilioSpeakers, type TwilioTrack } from './twilio.js';
import { ForkDemux, parseForkMetadata, type ForkMetadata } from './fork.js';
import { AUDIOSOCKET_KIND, AudioSocketReader, AudioSocketState, audioSocketLeg, encodeAudioSocketMessage } from './audiosocket.js';

export interface GatewayOptions extends Omit<LegShared, 'linker' | 'metrics'> {
  listen: { host: string; port: number };
  audioSocket?: { host: string; port: number };
  /** Shared secret a PBX presents (docs/gateway.md, "Authentication"); none: no check. */
  pbxToken?: string;
  /** AudioSocket leg number (last UUID byte) to speaker. */
  audioSocketSpeakers: ReadonlyMap<number, string>;
  logger: Logger;
  metrics?: GatewayMetrics;
  /** Largest WebSocket message, bytes. */
  maxMessageBytes?: number;
}

export interface GatewayFinal {
  protocol: GatewayProtocol;
  externalId: string;
  speaker: string;
  sessionId: string | null;
  segment: FinalSegment;
}

interface GatewayEvents {
  final: [final: GatewayFinal];
  leg: [report: LegReport];
}

/** Subprotocols the fork clients ask for: mod_audio_fork's (old and new name) and jambonz's. */
const FORK_SUBPROTOCOLS = ['audio.drachtio.org', 'audiostream.drachtio.org', 'audio.jambonz.org'];

/** At most this many invalid messages per connection are logged one by one (all are counted). */
const INVALID_LOG_LIMIT = 10;

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** Constant-time comparison of a presented secret with the configured one. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The secret in an Authorization header: `Bearer T`, or Basic with T as the password (what
 * mod_audio_fork's MOD_AUDIO_BASIC_AUTH_* and jambonz's wsAuth send). */
export function presentedToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const bearer = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

export class Gateway extends EventEmitter<GatewayEvents> {
  private readonly http: http.Server;
  private readonly wss: WebSocketServer;
  private tcp: net.Server | null = null;
  private readonly shared: LegShared;
  /** Every leg not yet ended, and the promises of those ending. */
  private readonly legs = new Set<GatewayLeg>();
  private readonly endings = new Set<Promise<LegReport>>();
  private readonly connections = new Set<{ close(): void }>();
  private stopping = false;

  constructor(private readonly o: GatewayOptions) {
    super();
    this.shared = { ...o, linker: new CallLinker({ url: o.url, accessKey: o.accessKey, logger: o.logger }), metrics: o.metrics };
    this.http = http.createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('scribed gateway: WebSocket paths /twilio and /fork\n');
    });
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: o.maxMessageBytes ?? 1 << 20,
      handleProtocols: (protocols) => [...protocols].find((p) => FORK_SUBPROTOCOLS.includes(p)) ?? false,
    });
    this.http.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
  }

  async start(): Promise<{ listen: { host: string; port: number }; audioSocket: { host: string; port: number } | null }> {
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.o.listen.port, this.o.listen.host, () => resolve());
    });
    const a = this.http.address() as net.AddressInfo;
    let as: { host: string; port: number } | null = null;
    if (this.o.audioSocket) {
      const tcp = net.createServer((socket) => this.onAudioSocket(socket));
      this.tcp = tcp;
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(this.o.audioSocket!.port, this.o.audioSocket!.host, () => resolve());
      });
      const t = tcp.address() as net.AddressInfo;
      as = { host: t.address, port: t.port };
    }
    return { listen: { host: a.address, port: a.port }, audioSocket: as };
  }

  get activeLegs(): number {
    return this.legs.size;
  }

  /** Stop accepting, end every connection's legs (closing their sessions); resolves with the
   * reports of every leg that ends. */
  async stop(): Promise<LegReport[]> {
    this.stopping = true;
    this.http.close();
    this.tcp?.close();
    for (const c of [...this.connections]) c.close();
    for (const leg of [...this.legs]) this.endLeg(leg);
    return Promise.all([...this.endings]);
  }

  /** Stop bound exceeded: leave every session PAUSED (a restarted gateway re-attaches). */
  async abortAll(): Promise<void> {
    await Promise.all([...this.legs].map((l) => l.abort()));
  }

  // ------------------------------------------------------------------ legs

  private openLeg(
    protocol: GatewayProtocol,
    externalId: string,
    speaker: string,
    encoding: InputEncodingName,
    callTitle: string,
    logger: Logger,
    agentId?: string,
  ): GatewayLeg {
    const spec = { protocol, externalId, speaker, encoding, callTitle, logger, ...(agentId === undefined ? {} : { agentId }) };
    const leg = new GatewayLeg(this.shared, spec, (l, segment) => {
      this.emit('final', { protocol, externalId, speaker, sessionId: l.sessionId, segment });
    });
    this.legs.add(leg);
    return leg;
  }

  private endLeg(leg: GatewayLeg): Promise<LegReport> | null {
    if (!this.legs.delete(leg)) return null;
    const p = leg.end().then((report) => {
      this.emit('leg', report);
      if (![...this.legs].some((l) => l.spec.protocol === leg.spec.protocol && l.spec.externalId === leg.spec.externalId)) {
        this.shared.linker.forget(leg.spec.protocol, leg.spec.externalId);
      }
      return report;
    });
    this.endings.add(p);
    void p.finally(() => this.endings.delete(p));
    return p;
  }

  // ------------------------------------------------------------------ shared helpers

  private invalidCounter(protocol: GatewayProtocol, log: Logger): (reason: string, detail: string) => void {
    let logged = 0;
    return (reason, detail) => {
      this.o.metrics?.invalid.inc({ protocol, reason });
      logged += 1;
      if (logged <= INVALID_LOG_LIMIT) log.warn({ reason, detail, invalidSoFar: logged }, 'invalid message ignored');
      else if (logged % 100 === 0) log.warn({ reason, invalidSoFar: logged }, 'invalid messages keep coming (counted, not each logged)');
    };
  }

  private track(protocol: GatewayProtocol, close: () => void): () => void {
    const entry = { close };
    this.connections.add(entry);
    this.o.metrics?.connections.inc({ protocol });
    this.o.metrics?.openConnections.inc({ protocol });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.connections.delete(entry);
      this.o.metrics?.openConnections.dec({ protocol });
    };
  }

  private onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://gateway');
    const refuse = (protocol: string, status: number, reason: string) => {
      this.o.metrics?.refused.inc({ protocol, reason });
      this.o.logger.warn({ path: url.pathname, status, reason, remote: req.socket.remoteAddress }, 'connection refused');
      socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    if (this.stopping) return refuse('none', 503, 'stopping');
    const protocol: GatewayProtocol | null = url.pathname === '/twilio' ? 'twilio' : url.pathname === '/fork' ? 'fork' : null;
    if (!protocol) return refuse('none', 404, 'unknown_path');
    const authedByHeader = this.o.pbxToken === undefined || tokenMatches(presentedToken(req.headers.authorization), this.o.pbxToken);
    // Twilio sends no headers of the application's choosing: its token comes in `start`.
    if (protocol === 'fork' && !authedByHeader) return refuse(protocol, 401, 'auth');
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const log = this.o.logger.child({ protocol, connection: randomUUID().slice(0, 8), remote: req.socket.remoteAddress });
      if (protocol === 'twilio') this.onTwilio(ws, authedByHeader, log);
      else this.onFork(ws, url.searchParams, log);
    });
  }

  // ------------------------------------------------------------------ Twilio Media Streams

  private onTwilio(ws: WebSocket, authed: boolean, log: Logger): void {
    const untrack = this.track('twilio', () => ws.close(1001, 'gateway stopping'));
    const invalid = this.invalidCounter('twilio', log);
    const state = new TwilioStreamState();
    const legs = new Map<TwilioTrack, { leg: GatewayLeg; clock: TwilioTrackClock }>();
    let ended = false;
    const endAll = () => {
      if (ended) return;
      ended = true;
      untrack();
      for (const { leg } of legs.values()) this.endLeg(leg);
    };
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (ended) return;
      if (isBinary) return invalid('binary_frame', 'Twilio sends text frames only');
      const parsed = parseTwilioMessage(rawText(data));
      if (!parsed.ok) return invalid(parsed.reason, parsed.detail);
      const msg = parsed.message;
      this.o.metrics?.messages.inc({ protocol: 'twilio', type: msg.event });
      const order = state.check(msg);
      if (order) return invalid('out_of_order', order);
      switch (msg.event) {
        case 'start': {
          if (!authed && !tokenMatches(msg.customParameters.gatewayToken, this.o.pbxToken!)) {
            this.o.metrics?.refused.inc({ protocol: 'twilio', reason: 'auth' });
            log.warn({ callSid: msg.callSid }, 'connection refused: no valid gatewayToken in the start message customParameters');
            ws.close(1008, 'authentication failed');
            endAll();
            return;
          }
          const speakers = twilioSpeakers(msg);
          if (!speakers.ok) {
            invalid('bad_speaker', speakers.detail);
            ws.close(1008, 'invalid speaker names');
            endAll();
            return;
          }
          state.apply(msg);
          const callLog = log.child({ callSid: msg.callSid, streamSid: msg.streamSid });
          for (const track of msg.tracks) {
            legs.set(track, {
              leg: this.openLeg(
                'twilio',
                msg.callSid,
                speakers.speakers[track],
                'mulaw_8000',
                `Twilio call ${msg.callSid}`,
                callLog,
                msg.customParameters.agentId,
              ),
              clock: new TwilioTrackClock(),
            });
          }
          callLog.info({ tracks: msg.tracks, speakers: speakers.speakers }, 'twilio stream started');
          return;
        }
        case 'media': {
          const l = legs.get(msg.track)!;
          const fill = l.clock.fillBefore(msg.timestampMs);
          if (fill > 0) l.leg.write(Buffer.alloc(fill, MULAW_SILENCE));
          l.leg.write(msg.payload);
          l.clock.place(msg.payload.length, fill);
          return;
        }
        case 'stop':
          state.apply(msg);
          log.info('twilio stream stopped');
          endAll();
          return;
        default:
          return; // connected, mark, dtmf: nothing to transcribe
      }
    });
    ws.on('error', (err) => log.warn({ err: err.message }, 'socket error'));
    ws.on('close', (code) => {
      if (!ended) log.info({ code }, 'twilio socket closed without stop: the legs end here');
      endAll();
    });
  }

  // ------------------------------------------------------------------ mod_audio_fork / jambonz

  private onFork(ws: WebSocket, query: URLSearchParams, log: Logger): void {
    const untrack = this.track('fork', () => ws.close(1001, 'gateway stopping'));
    const invalid = this.invalidCounter('fork', log);
    let meta: ForkMetadata | null = null;
    let demux: ForkDemux | null = null;
    let legs: GatewayLeg[] = [];
    let ended = false;
    const endAll = () => {
      if (ended) return;
      ended = true;
      untrack();
      if (demux && demux.pendingBytes > 0)
        log.warn({ bytes: demux.pendingBytes }, 'the stream ended inside a sample frame; those bytes are dropped');
      for (const leg of legs) this.endLeg(leg);
    };
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (ended) return;
      if (!isBinary) {
        this.o.metrics?.messages.inc({ protocol: 'fork', type: 'text' });
        if (meta) return invalid('text_after_metadata', 'a text frame after the metadata (ignored)');
        const parsed = parseForkMetadata(rawText(data), query);
        if (!parsed.ok) {
          invalid(parsed.reason, parsed.detail);
          ws.close(1008, 'invalid metadata');
          endAll();
          return;
        }
        meta = parsed.metadata;
        demux = new ForkDemux(meta.channels);
        const externalId = meta.callId ?? `fork-${randomUUID()}`;
        const callLog = log.child({ callExternalId: externalId });
        if (!meta.callId)
          callLog.warn(
            'the metadata names no call (callSid or uuid): this connection is a call of its own, and a restarted gateway cannot re-attach to it',
          );
        const encoding = `pcm_s16le_${meta.sampleRate}` as InputEncodingName;
        const agentId = meta.agentId;
        legs = meta.speakers.map((speaker) => this.openLeg('fork', externalId, speaker, encoding, `Call ${externalId}`, callLog, agentId));
        callLog.info({ sampleRate: meta.sampleRate, mixType: meta.mixType, speakers: meta.speakers }, 'fork stream started');
        return;
      }
      this.o.metrics?.messages.inc({ protocol: 'fork', type: 'audio' });
      if (!demux) return invalid('audio_before_metadata', 'a binary frame before the metadata text frame');
      const channels = demux.push(rawBuffer(data));
      channels.forEach((pcm, i) => legs[i]!.write(pcm));
    });
    ws.on('error', (err) => log.warn({ err: err.message }, 'socket error'));
    ws.on('close', (code) => {
      log.info({ code }, 'fork stream closed');
      endAll();
    });
  }

  // ------------------------------------------------------------------ Asterisk AudioSocket

  private onAudioSocket(socket: net.Socket): void {
    const log = this.o.logger.child({ protocol: 'audiosocket', connection: randomUUID().slice(0, 8), remote: socket.remoteAddress });
    if (this.stopping) {
      socket.destroy();
      return;
    }
    const untrack = this.track('audiosocket', () => hangUp());
    const invalid = this.invalidCounter('audiosocket', log);
    const reader = new AudioSocketReader();
    const state = new AudioSocketState();
    let leg: GatewayLeg | null = null;
    let pairing: ReturnType<typeof audioSocketLeg> | null = null;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      untrack();
      if (reader.pendingBytes > 0)
        log.warn({ bytes: reader.pendingBytes }, 'the connection ended inside a message; those bytes are dropped');
      if (leg) this.endLeg(leg);
    };
    // The gateway's own hang-up: Asterisk ends the AudioSocket application on it.
    const hangUp = () => {
      if (!socket.destroyed) socket.end(encodeAudioSocketMessage(AUDIOSOCKET_KIND.hangup));
      end();
    };
    socket.on('data', (data: Buffer) => {
      if (ended) return;
      for (const item of reader.push(data)) {
        if (!item.ok) {
          invalid(item.reason, item.detail);
          continue;
        }
        const msg = item.message;
        this.o.metrics?.messages.inc({ protocol: 'audiosocket', type: msg.kind });
        const bad = state.check(msg);
        if (bad) {
          invalid(bad.reason, bad.detail);
          // Audio this gateway cannot take (a rate no session has, or one that changes) would
          // be lost silently; hanging up tells the dialplan at once.
          if (bad.reason === 'unsupported_rate' || (msg.kind === 'audio' && state.rateHz !== null)) return hangUp();
          continue;
        }
        state.apply(msg);
        switch (msg.kind) {
          case 'uuid':
            pairing = audioSocketLeg(msg.uuid, this.o.audioSocketSpeakers);
            log.info(
              { uuid: msg.uuid, callExternalId: pairing.callExternalId, leg: pairing.leg, speaker: pairing.speaker },
              'audiosocket stream identified',
            );
            break;
          case 'audio':
            leg ??= this.openLeg(
              'audiosocket',
              pairing!.callExternalId,
              pairing!.speaker,
              `pcm_s16le_${msg.rateHz}` as InputEncodingName,
              `Call ${pairing!.callExternalId}`,
              log.child({ callExternalId: pairing!.callExternalId }),
            );
            leg.write(msg.payload);
            break;
          case 'hangup':
            log.info('audiosocket hang-up');
            socket.end();
            end();
            return;
          case 'error':
            log.warn({ code: msg.code }, 'audiosocket error message from the PBX');
            break;
          default:
            break; // dtmf
        }
      }
    });
    socket.on('error', (err) => log.warn({ err: err.message }, 'socket error'));
    socket.on('close', () => end());
  }
}

function rawBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

function rawText(data: RawData): string {
  return rawBuffer(data).toString('utf8');
}
