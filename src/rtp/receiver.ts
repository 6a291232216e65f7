// The UDP adapter: binds the RTP port (and the RTCP port, by convention RTP + 1), splits
// datagrams into streams, one per (SSRC, source address and port), runs each through its
// jitter buffer and hands out session-encoded audio. It decides nothing the pure cores do
// not: parsing is packet.ts, ordering and placement jitter-buffer.ts, codecs payload-types.ts.
//
// A stream starts with its first packet of a supported payload type, and ends after
// `idleTimeoutMs` without packets, on an RTCP BYE for its SSRC from its source host, or when
// the receiver stops. Datagrams that are not RTP/RTCP are counted and dropped; no input can
// throw out of the socket handler.
import dgram from 'node:dgram';
import net from 'node:net';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { JitterBuffer, type JitterBufferOptions, type JitterStats, type ReleasedAudio } from './jitter-buffer.js';
import { looksLikeRtcp, parseRtcpCompound, parseRtpPacket, type RtpPacket } from './packet.js';
import type { PayloadFormat, PayloadTypeMap } from './payload-types.js';
import type { DropReason, RtpMalformedReason, RtpMetrics, StreamEndReason } from './metrics.js';

export interface RtpReceiverOptions {
  host: string;
  /** RTP port; 0 picks a free one. */
  port: number;
  /** RTCP port: a number (0 = any free port), or null for none (RTCP multiplexed on the RTP
   * port is always understood). Defaults to `port + 1`, or a free port when `port` is 0. */
  rtcpPort?: number | null;
  payloadTypes: PayloadTypeMap;
  idleTimeoutMs?: number;
  maxStreams?: number;
  jitter?: Pick<JitterBufferOptions, 'maxDelayMs' | 'maxPackets' | 'maxGapMs' | 'maxDropout' | 'maxMisorder' | 'concealMs'>;
  logger: Logger;
  metrics?: RtpMetrics;
  /** Monotonic milliseconds (tests may drive time). */
  now?: () => number;
  /** How often held packets and idle streams are checked. */
  pollIntervalMs?: number;
}

export interface RtpStreamInfo {
  /** `<ssrc hex>@<address>:<port>`: unique among live streams. */
  readonly key: string;
  /** 1 for the first stream of this key; one more for each stream of the same key after an
   * earlier one ended (a call that went quiet past the idle timeout and then went on): each
   * generation is its own session. */
  readonly generation: number;
  readonly ssrc: number;
  readonly address: string;
  readonly port: number;
  readonly format: PayloadFormat;
}

export interface RtpStreamEnd {
  readonly reason: StreamEndReason;
  readonly stats: JitterStats;
  /** Samples placed on the stream's timeline (audio and silence), in the clock rate. */
  readonly positionSamples: number;
}

interface RtpStreamEvents {
  /** Session-encoded audio, contiguous: each chunk starts where the previous one ended. */
  audio: [chunk: Buffer, offsetSamples: number];
  end: [end: RtpStreamEnd];
}

/** One incoming stream. Listeners attached in the receiver's `stream` handler see all of it. */
export class RtpStream extends EventEmitter<RtpStreamEvents> {
  readonly info: RtpStreamInfo;
  readonly jitter: JitterBuffer;
  readonly log: Logger;
  lastPacketAt: number;
  lastJitterSampleAt: number;
  ended = false;

  constructor(info: RtpStreamInfo, jitter: JitterBuffer, log: Logger, now: number) {
    super();
    this.info = info;
    this.jitter = jitter;
    this.log = log;
    this.lastPacketAt = now;
    this.lastJitterSampleAt = now;
  }
}

interface RtpReceiverEvents {
  stream: [stream: RtpStream];
}

export interface RtpReceiverAddress {
  host: string;
  port: number;
  rtcpPort: number | null;
}

/** How long the generation of an ended stream's key is remembered. SSRCs are random 32-bit
 * numbers, so a key that comes back after this long is another call in practice. */
export const GENERATION_MEMORY_MS = 6 * 3600_000;

/** How many streams' unmapped-payload-type warnings are remembered (so each warns once). */
const UNMAPPED_WARNED_MAX = 1024;

/** The warning for a stream whose payload type has no mapping, with the flag that fixes it.
 * ffmpeg sends L16 (other than 44.1 kHz mono, static type 11) as dynamic type 97. */
export function unmappedPayloadTypeMessage(payloadType: number): string {
  const example = payloadType >= 96 ? `${payloadType}=l16/16000` : `${payloadType}=pcmu`;
  return (
    `payload type ${payloadType} is not mapped, so this stream's packets are dropped: ` +
    `map it with --payload-type ${payloadType}=l16/RATE, ${payloadType}=pcmu or ${payloadType}=pcma ` +
    `(e.g. --payload-type ${example}; ffmpeg sends L16 at 8 or 16 kHz as type 97)`
  );
}

function ssrcHex(ssrc: number): string {
  return ssrc.toString(16).padStart(8, '0');
}

export class RtpReceiver extends EventEmitter<RtpReceiverEvents> {
  readonly #o: RtpReceiverOptions & { idleTimeoutMs: number; maxStreams: number; pollIntervalMs: number; now: () => number };
  readonly #streams = new Map<string, RtpStream>();
  /** Keys of streams that ended by an RTCP BYE, with the time of the BYE: for one idle
   * timeout after it, straggling packets are dropped rather than opening a second session
   * for a call that said it was over. Later packets do not extend that time (a sender that
   * goes on after its BYE gets a new stream once it has passed). */
  readonly #byeEnded = new Map<string, number>();
  /** The last generation of each key whose stream ended, with the time it ended, kept for
   * GENERATION_MEMORY_MS: a stream that starts again after ending (by idle timeout, or after
   * a BYE's hold) is the next generation, so it gets a new stream id and a new session
   * instead of the earlier, closed one. */
  readonly #generations = new Map<string, { generation: number; endedAt: number }>();
  /** Streams (key and payload type) already warned that their payload type is not mapped:
   * one log line per stream, not one per packet; oldest forgotten beyond the bound. */
  readonly #unmappedWarned = new Set<string>();
  #rtp: dgram.Socket | null = null;
  #rtcp: dgram.Socket | null = null;
  #timer: NodeJS.Timeout | null = null;
  #address: RtpReceiverAddress | null = null;

  constructor(options: RtpReceiverOptions) {
    super();
    this.#o = {
      idleTimeoutMs: 5000,
      maxStreams: 64,
      pollIntervalMs: 20,
      now: () => performance.now(),
      ...options,
    };
  }

  get address(): RtpReceiverAddress | null {
    return this.#address;
  }

  get streams(): ReadonlyMap<string, RtpStream> {
    return this.#streams;
  }

  async start(): Promise<RtpReceiverAddress> {
    const type = net.isIPv6(this.#o.host) ? 'udp6' : 'udp4';
    this.#rtp = await bind(type, this.#o.host, this.#o.port, this.#o.logger);
    this.#rtp.on('message', (msg, rinfo) => this.#onDatagram(msg, rinfo, false));
    const port = this.#rtp.address().port;
    const rtcpWanted = this.#o.rtcpPort === undefined ? (this.#o.port === 0 ? 0 : port + 1) : this.#o.rtcpPort;
    if (rtcpWanted !== null) {
      try {
        this.#rtcp = await bind(type, this.#o.host, rtcpWanted, this.#o.logger);
      } catch (err) {
        this.#rtp.close();
        this.#rtp = null;
        throw err;
      }
      this.#rtcp.on('message', (msg, rinfo) => this.#onDatagram(msg, rinfo, true));
    }
    this.#timer = setInterval(() => this.#tick(), this.#o.pollIntervalMs);
    this.#address = { host: this.#o.host, port, rtcpPort: this.#rtcp?.address().port ?? null };
    this.#o.logger.info({ ...this.#address }, 'rtp receiver listening');
    return this.#address;
  }

  /** Stop listening and end every stream (`shutdown`), releasing all held audio first. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    const sockets = [this.#rtp, this.#rtcp].filter((s): s is dgram.Socket => s !== null);
    this.#rtp = null;
    this.#rtcp = null;
    await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    for (const stream of [...this.#streams.values()]) this.#endStream(stream, 'shutdown');
  }

  #onDatagram(msg: Buffer, rinfo: dgram.RemoteInfo, onRtcpPort: boolean): void {
    try {
      if (onRtcpPort || looksLikeRtcp(msg)) this.#onRtcp(msg, rinfo);
      else this.#onRtp(msg, rinfo);
    } catch (err) {
      // Parsing cannot throw; a listener might. Never let one datagram end the process.
      this.#o.logger.error({ err, source: `${rinfo.address}:${rinfo.port}` }, 'rtp datagram handling failed');
    }
  }

  #malformed(reason: RtpMalformedReason, address: string, port: number): void {
    this.#o.metrics?.packetsMalformed.inc({ reason });
    this.#o.logger.debug({ reason, source: `${address}:${port}` }, 'malformed datagram dropped');
  }

  #dropped(reason: DropReason, count = 1): void {
    this.#o.metrics?.packetsDropped.inc({ reason }, count);
  }

  #onRtcp(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const parsed = parseRtcpCompound(msg);
    if (!parsed.ok) {
      this.#malformed('rtcp_malformed', rinfo.address, rinfo.port);
      return;
    }
    this.#o.metrics?.rtcpPackets.inc();
    for (const ssrc of parsed.value.byeSsrcs) {
      // RTCP comes from another port than RTP (RTP port + 1), so match the host only.
      for (const stream of [...this.#streams.values()]) {
        if (stream.info.ssrc === ssrc && stream.info.address === rinfo.address) this.#endStream(stream, 'bye');
      }
    }
  }

  #onRtp(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const parsed = parseRtpPacket(msg);
    if (!parsed.ok) {
      this.#malformed(parsed.reason, rinfo.address, rinfo.port);
      return;
    }
    const packet = parsed.value;
    this.#o.metrics?.packetsReceived.inc();
    const now = this.#o.now();
    const key = `${ssrcHex(packet.ssrc)}@${rinfo.address}:${rinfo.port}`;
    let stream = this.#streams.get(key);
    if (!stream) {
      const byeAt = this.#byeEnded.get(key);
      if (byeAt !== undefined && now - byeAt < this.#o.idleTimeoutMs) {
        this.#dropped('ended_stream');
        return;
      }
      const format = this.#o.payloadTypes.get(packet.payloadType);
      if (!format) {
        this.#dropped('unsupported_payload_type');
        this.#warnUnmapped(key, packet.ssrc, packet.payloadType, rinfo);
        return;
      }
      if (this.#streams.size >= this.#o.maxStreams) {
        this.#dropped('stream_limit');
        return;
      }
      stream = this.#startStream(key, packet, rinfo, format, now);
    }
    this.#pushPacket(stream, packet, now);
  }

  #warnUnmapped(key: string, ssrc: number, payloadType: number, rinfo: dgram.RemoteInfo): void {
    const warned = `${key}/${payloadType}`;
    if (this.#unmappedWarned.has(warned)) return;
    if (this.#unmappedWarned.size >= UNMAPPED_WARNED_MAX) this.#unmappedWarned.delete(this.#unmappedWarned.values().next().value!);
    this.#unmappedWarned.add(warned);
    this.#o.logger.warn(
      { payloadType, ssrc: ssrcHex(ssrc), source: `${rinfo.address}:${rinfo.port}` },
      unmappedPayloadTypeMessage(payloadType),
    );
  }

  #startStream(key: string, packet: RtpPacket, rinfo: dgram.RemoteInfo, format: PayloadFormat, now: number): RtpStream {
    this.#byeEnded.delete(key);
    const generation = (this.#generations.get(key)?.generation ?? 0) + 1;
    this.#generations.delete(key);
    const info: RtpStreamInfo = { key, generation, ssrc: packet.ssrc, address: rinfo.address, port: rinfo.port, format };
    const jitter = new JitterBuffer({
      ...this.#o.jitter,
      bytesPerSample: format.bytesPerSample,
      silenceByte: format.silenceByte,
      clockRateHz: format.clockRateHz,
    });
    const log = this.#o.logger.child({
      ssrc: ssrcHex(packet.ssrc),
      source: `${rinfo.address}:${rinfo.port}`,
      ...(generation > 1 ? { generation } : {}),
    });
    const stream = new RtpStream(info, jitter, log, now);
    this.#streams.set(key, stream);
    this.#o.metrics?.activeStreams.set(this.#streams.size);
    this.#o.metrics?.streamsStarted.inc();
    log.info(
      { payloadType: format.payloadType, codec: format.codec, clockRateHz: format.clockRateHz, sessionEncoding: format.sessionEncoding },
      'rtp stream started',
    );
    this.emit('stream', stream);
    return stream;
  }

  #pushPacket(stream: RtpStream, packet: RtpPacket, now: number): void {
    stream.lastPacketAt = now;
    const format = stream.info.format;
    // Another payload type inside the stream (comfort noise, DTMF events, a codec switch):
    // its audio is not placed, but its sequence number is kept so it does not count as lost.
    const samePayloadType = packet.payloadType === format.payloadType;
    if (!samePayloadType) this.#dropped('other_payload_type');
    const before = stream.jitter.stats;
    const result = stream.jitter.push(
      {
        sequenceNumber: packet.sequenceNumber,
        timestamp: packet.timestamp,
        payload: samePayloadType ? packet.payload : packet.payload.subarray(0, 0),
      },
      now,
    );
    if (result.outcome === 'bad_length') this.#malformed('bad_length', stream.info.address, stream.info.port);
    if (result.outcome === 'out_of_range') this.#dropped('out_of_range');
    this.#countDelta(before, stream.jitter.stats, format);
    this.#deliver(stream, result.released);
  }

  #countDelta(before: JitterStats, after: JitterStats, format: PayloadFormat): void {
    const m = this.#o.metrics;
    if (!m) return;
    const inc = (c: { inc(n: number): void }, n: number) => n > 0 && c.inc(n);
    inc(m.packetsLost, after.lost - before.lost);
    inc(m.packetsReordered, after.reordered - before.reordered);
    inc(m.packetsDuplicate, after.duplicate - before.duplicate);
    inc(m.packetsLate, after.late - before.late);
    inc(m.audioSeconds, (after.audioSamples - before.audioSamples) / format.clockRateHz);
    inc(m.silenceSeconds, (after.silenceSamples - before.silenceSamples) / format.clockRateHz);
    inc(m.concealedSeconds, (after.concealedSamples - before.concealedSamples) / format.clockRateHz);
  }

  #deliver(stream: RtpStream, released: ReleasedAudio[]): void {
    for (const chunk of released) {
      stream.emit('audio', stream.info.format.toSession(chunk.bytes), chunk.offsetSamples);
    }
  }

  #tick(): void {
    const now = this.#o.now();
    for (const stream of [...this.#streams.values()]) {
      try {
        if (now - stream.lastPacketAt >= this.#o.idleTimeoutMs) {
          this.#endStream(stream, 'idle');
          continue;
        }
        const before = stream.jitter.stats;
        const released = stream.jitter.poll(now);
        if (released.length > 0) {
          this.#countDelta(before, stream.jitter.stats, stream.info.format);
          this.#deliver(stream, released);
        }
        if (now - stream.lastJitterSampleAt >= 1000) {
          stream.lastJitterSampleAt = now;
          this.#o.metrics?.jitter.observe(stream.jitter.stats.jitterSeconds);
        }
      } catch (err) {
        stream.log.error({ err }, 'rtp stream poll failed');
      }
    }
    for (const [key, at] of this.#byeEnded) if (now - at >= this.#o.idleTimeoutMs) this.#byeEnded.delete(key);
    for (const [key, g] of this.#generations) if (now - g.endedAt >= GENERATION_MEMORY_MS) this.#generations.delete(key);
  }

  #endStream(stream: RtpStream, reason: StreamEndReason): void {
    if (stream.ended) return;
    stream.ended = true;
    const now = this.#o.now();
    const before = stream.jitter.stats;
    const released = stream.jitter.flush(now);
    this.#countDelta(before, stream.jitter.stats, stream.info.format);
    this.#streams.delete(stream.info.key);
    if (reason === 'bye') this.#byeEnded.set(stream.info.key, now);
    this.#generations.set(stream.info.key, { generation: stream.info.generation, endedAt: now });
    this.#o.metrics?.activeStreams.set(this.#streams.size);
    this.#o.metrics?.streamsEnded.inc({ reason });
    this.#o.metrics?.jitter.observe(stream.jitter.stats.jitterSeconds);
    const end: RtpStreamEnd = { reason, stats: stream.jitter.stats, positionSamples: stream.jitter.positionSamples };
    stream.log.info({ reason, ...end.stats, positionSamples: end.positionSamples }, 'rtp stream ended');
    try {
      this.#deliver(stream, released);
    } finally {
      stream.emit('end', end);
    }
  }
}

function bind(type: 'udp4' | 'udp6', host: string, port: number, logger: Logger): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    // A large receive buffer absorbs bursts while the event loop is busy (the kernel caps
    // it at net.core.rmem_max).
    const socket = dgram.createSocket({ type, recvBufferSize: 1 << 20 });
    const onError = (err: Error) => {
      socket.close();
      reject(err);
    };
    socket.once('error', onError);
    socket.bind(port, host, () => {
      socket.off('error', onError);
      // Errors after binding (e.g. ICMP unreachable echoes) are not fatal for a receiver.
      socket.on('error', (err) => logger.warn({ err, port }, 'udp socket error'));
      resolve(socket);
    });
  });
}
