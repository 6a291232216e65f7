// RTP for recorded streams: a pool of even ports from the configured range (a recording
// session's streams on consecutive even ports, RTCP's odd port left to the sender), one UDP
// socket per stream, its packets through the RTP ingest's jitter buffer (src/rtp) and decoded
// from G.711 or G.722 (core/sip/payload-decoder.ts) to 16-bit PCM for the leg. The codec may change on a re-INVITE: the stream is
// told its new payload types and keeps its socket and timeline. telephone-event and RTCP are
// counted and dropped. No packet is ever sent back (the answer is recvonly).
import dgram from 'node:dgram';
import { encodePcm16le } from '../../core/audio/encodings.js';
import { PayloadDecoder } from '../../core/sip/payload-decoder.js';
import { JitterBuffer } from '../../rtp/jitter-buffer.js';
import { looksLikeRtcp, parseRtpPacket } from '../../rtp/packet.js';
import type { Codec } from '../../core/sip/sdp.js';
import type { SrtpContext } from '../../core/srtp.js';
import type { SiprecMetrics } from './metrics.js';

const JITTER_POLL_MS = 40;

export class PortPool {
  private readonly used = new Set<number>();

  constructor(
    private readonly min: number,
    private readonly max: number,
    private readonly metrics: SiprecMetrics,
  ) {}

  /** `count` consecutive even ports (P, P+2, ...), or null when the range has no such run. */
  take(count: number): number[] | null {
    const first = this.min % 2 === 0 ? this.min : this.min + 1;
    for (let p = first; p + 2 * (count - 1) <= this.max; p += 2) {
      const run = Array.from({ length: count }, (_v, i) => p + 2 * i);
      if (run.every((x) => !this.used.has(x))) {
        for (const x of run) this.used.add(x);
        this.metrics.portsInUse.set(this.used.size);
        return run;
      }
    }
    return null;
  }

  give(port: number): void {
    this.used.delete(port);
    this.metrics.portsInUse.set(this.used.size);
  }
}

export interface StreamFormat {
  codec: Codec;
  payloadType: number;
  telephoneEvent: number | null;
}

/** One recorded stream's socket: packets in, 16-bit PCM at 8 kHz out (`onAudio`). */
export class RtpStreamSocket {
  private readonly socket = dgram.createSocket('udp4');
  private jitter: JitterBuffer | null = null;
  private timer: NodeJS.Timeout | undefined;
  private format: StreamFormat;
  private readonly decoder = new PayloadDecoder();
  private lost = 0;
  packets = 0;
  /** SRTP keys of the stream (srtp.ts): packets are authenticated and decrypted first. */
  srtp: SrtpContext | null = null;

  constructor(
    readonly port: number,
    format: StreamFormat,
    private readonly metrics: SiprecMetrics,
    private readonly onAudio: (pcm: Buffer) => void,
  ) {
    this.format = format;
  }

  async bind(host: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.socket.once('error', reject);
      this.socket.bind(this.port, host, () => {
        this.socket.off('error', reject);
        resolve();
      });
    });
    this.socket.on('message', (msg) => this.onPacket(msg));
    this.socket.on('error', () => undefined);
    this.timer = setInterval(() => this.release(this.jitter?.poll(performance.now()) ?? []), JITTER_POLL_MS);
  }

  /** A re-INVITE changed the codec: packets of the new payload type are decoded from now on. */
  setFormat(format: StreamFormat): void {
    if (format.codec !== this.format.codec) this.decoder.reset();
    this.format = format;
  }

  private onPacket(bytes: Buffer): void {
    this.packets++;
    this.metrics.rtpPackets.inc();
    if (looksLikeRtcp(bytes)) return this.metrics.rtpDropped.inc({ reason: 'rtcp' });
    if (this.srtp) {
      const plain = this.srtp.unprotect(bytes);
      if (!plain.ok) return this.metrics.rtpDropped.inc({ reason: plain.reason === 'malformed' ? 'malformed' : `srtp_${plain.reason}` });
      bytes = plain.packet;
    }
    const parsed = parseRtpPacket(bytes);
    if (!parsed.ok) return this.metrics.rtpDropped.inc({ reason: 'malformed' });
    const p = parsed.value;
    if (p.payloadType === this.format.telephoneEvent) return this.metrics.rtpDropped.inc({ reason: 'telephone_event' });
    if (p.payloadType !== this.format.payloadType) return this.metrics.rtpDropped.inc({ reason: 'unknown_payload' });
    // G.711 and G.722 are all one byte per tick of an 8000 Hz clock: one jitter buffer serves a
    // codec change (its silence byte is unused: released silence is written as PCM zeros below).
    this.jitter ??= new JitterBuffer({ bytesPerSample: 1, silenceByte: 0xff, clockRateHz: 8000, concealMs: 0 });
    const pushed = this.jitter.push({ sequenceNumber: p.sequenceNumber, timestamp: p.timestamp, payload: p.payload }, performance.now());
    if (pushed.outcome === 'duplicate' || pushed.outcome === 'late') this.metrics.rtpDropped.inc({ reason: 'late_or_duplicate' });
    this.release(pushed.released);
  }

  private release(chunks: ReadonlyArray<{ kind: string; bytes: Uint8Array }>): void {
    if (this.jitter) {
      const lost = this.jitter.stats.lost;
      if (lost > this.lost) this.metrics.rtpLost.inc(lost - this.lost);
      this.lost = lost;
    }
    for (const c of chunks) {
      const pcm = c.kind === 'audio' ? encodePcm16le(this.decoder.decode(this.format.codec, c.bytes)) : new Uint8Array(c.bytes.length * 2);
      this.metrics.audioSeconds.inc(c.bytes.length / 8000);
      this.onAudio(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
    }
  }

  /** Stops reading; what the jitter buffer still holds goes out first. */
  close(): void {
    clearInterval(this.timer);
    this.release(this.jitter?.flush(performance.now()) ?? []);
    try {
      this.socket.close();
    } catch {
      // already closed
    }
  }
}
