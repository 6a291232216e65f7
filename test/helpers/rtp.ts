// A crafted RTP peer for tests: packetises audio the way a phone or PBX would (20 ms
// packets, random SSRC/sequence/timestamp start), and can drop, reorder, duplicate or
// garble packets on purpose.
import dgram from 'node:dgram';
import { encodeRtcpBye, encodeRtpPacket } from '../../src/rtp/packet.js';
import { RtpReceiver, type RtpStream, type RtpStreamEnd, type RtpReceiverOptions } from '../../src/rtp/receiver.js';
import { pino } from 'pino';

export interface PacketPlan {
  seq: number;
  ts: number;
  payload: Uint8Array;
  payloadType: number;
}

/** Cut `audio` (wire bytes) into packets of `samplesPerPacket`, numbered from seq0/ts0. */
export function packetize(
  audio: Uint8Array,
  opts: { payloadType: number; bytesPerSample?: number; samplesPerPacket?: number; seq0?: number; ts0?: number },
): PacketPlan[] {
  const bps = opts.bytesPerSample ?? 1;
  const n = opts.samplesPerPacket ?? 160;
  const out: PacketPlan[] = [];
  for (let i = 0, k = 0; i < audio.length; i += n * bps, k++) {
    out.push({
      seq: ((opts.seq0 ?? 0) + k) & 0xffff,
      ts: ((opts.ts0 ?? 0) + k * n) >>> 0,
      payload: audio.subarray(i, Math.min(audio.length, i + n * bps)),
      payloadType: opts.payloadType,
    });
  }
  return out;
}

export class RtpTestSender {
  readonly socket: dgram.Socket;
  constructor(readonly ssrc: number) {
    this.socket = dgram.createSocket('udp4');
  }

  static async open(ssrc: number): Promise<RtpTestSender> {
    const s = new RtpTestSender(ssrc);
    await new Promise<void>((resolve) => s.socket.bind(0, '127.0.0.1', resolve));
    return s;
  }

  get port(): number {
    return this.socket.address().port;
  }

  sendRaw(bytes: Uint8Array, port: number): Promise<void> {
    return new Promise((resolve, reject) => this.socket.send(bytes, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
  }

  send(p: PacketPlan, port: number, ssrc = this.ssrc): Promise<void> {
    return this.sendRaw(
      encodeRtpPacket({ payloadType: p.payloadType, sequenceNumber: p.seq, timestamp: p.ts, ssrc, payload: p.payload }),
      port,
    );
  }

  bye(port: number, ssrc = this.ssrc): Promise<void> {
    return this.sendRaw(encodeRtcpBye([ssrc]), port);
  }

  close(): void {
    this.socket.close();
  }
}

/** What a receiver produced for one stream. */
export interface CollectedStream {
  stream: RtpStream;
  chunks: Buffer[];
  offsets: number[];
  ended: Promise<RtpStreamEnd>;
  audio(): Buffer;
}

export async function startTestReceiver(opts: Partial<RtpReceiverOptions> & Pick<RtpReceiverOptions, 'payloadTypes'>) {
  const receiver = new RtpReceiver({
    host: '127.0.0.1',
    port: 0,
    rtcpPort: 0,
    logger: pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' }),
    ...opts,
  });
  const streams: CollectedStream[] = [];
  const waiters: Array<() => void> = [];
  receiver.on('stream', (stream) => {
    const c: CollectedStream = {
      stream,
      chunks: [],
      offsets: [],
      ended: new Promise((resolve) => stream.once('end', resolve)),
      audio: () => Buffer.concat(c.chunks),
    };
    stream.on('audio', (chunk, offset) => {
      c.chunks.push(chunk);
      c.offsets.push(offset);
    });
    streams.push(c);
    waiters.splice(0).forEach((w) => w());
  });
  const address = await receiver.start();
  return {
    receiver,
    address,
    streams,
    async nextStream(count = 1): Promise<CollectedStream> {
      while (streams.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return streams[count - 1]!;
    },
  };
}
