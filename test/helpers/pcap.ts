// Builds pcap files of RTP for SIPp's play_pcap_audio: each flow a clip's G.711 mu-law in 20 ms
// packets (PT 0), on Ethernet/IPv4/UDP frames with 20 ms timestamps. SIPp replaces the
// addresses and sends each flow to the answer's first m=audio port shifted by the flow's
// destination port less the lowest one: flows to ports 7000 and 7002 reach the recorder's first
// and second stream. Written here (libpcap's file format is 40 lines) so the tests need no
// capture tool.
import fs from 'node:fs';
import { encodeRtpPacket } from '../../src/rtp/packet.js';

const SAMPLES_PER_PACKET = 160;
const BASE_PORT = 7000;

export interface PcapFlow {
  /** 8 kHz mu-law bytes (or, with `payloadType`, any payload of one byte per 8000 Hz clock
   * tick: A-law, G.722). */
  mulaw: Buffer;
  /** The RTP payload type; 0 (PCMU) unless given. */
  payloadType?: number;
  ssrc: number;
  /** Silence (packets not sent) before the flow starts, ms. */
  startMs?: number;
}

function ipv4Checksum(header: Buffer): number {
  let sum = 0;
  for (let i = 0; i < header.length; i += 2) sum += header.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

function frame(payload: Buffer, srcPort: number, dstPort: number): Buffer {
  const eth = Buffer.alloc(14);
  eth.writeUInt16BE(0x0800, 12);
  const ip = Buffer.alloc(20);
  ip[0] = 0x45;
  ip.writeUInt16BE(20 + 8 + payload.length, 2);
  ip[8] = 64;
  ip[9] = 17;
  Buffer.from([10, 0, 0, 1]).copy(ip, 12);
  Buffer.from([10, 0, 0, 2]).copy(ip, 16);
  ip.writeUInt16BE(ipv4Checksum(ip), 10);
  const udp = Buffer.alloc(8);
  udp.writeUInt16BE(srcPort, 0);
  udp.writeUInt16BE(dstPort, 2);
  udp.writeUInt16BE(8 + payload.length, 4);
  return Buffer.concat([eth, ip, udp, payload]);
}

/** Writes a pcap whose flow i goes to port 7000 + 2i, interleaved by time; answers the duration. */
export function writeRtpPcap(file: string, flows: readonly PcapFlow[]): number {
  const packets: Array<{ us: number; bytes: Buffer }> = [];
  for (const [i, f] of flows.entries()) {
    const startUs = (f.startMs ?? 0) * 1000;
    for (let at = 0, seq = 0; at < f.mulaw.length; at += SAMPLES_PER_PACKET, seq++) {
      const payload = f.mulaw.subarray(at, Math.min(f.mulaw.length, at + SAMPLES_PER_PACKET));
      const rtp = encodeRtpPacket({
        payloadType: f.payloadType ?? 0,
        sequenceNumber: (1000 + seq) & 0xffff,
        timestamp: (5000 + at) >>> 0,
        ssrc: f.ssrc,
        marker: seq === 0,
        payload,
      });
      packets.push({ us: startUs + seq * 20_000, bytes: frame(rtp, 6000 + 2 * i, BASE_PORT + 2 * i) });
    }
  }
  packets.sort((a, b) => a.us - b.us);
  const global = Buffer.alloc(24);
  global.writeUInt32LE(0xa1b2c3d4, 0);
  global.writeUInt16LE(2, 4);
  global.writeUInt16LE(4, 6);
  global.writeUInt32LE(65535, 16);
  global.writeUInt32LE(1, 20); // LINKTYPE_ETHERNET
  const records = packets.map((p) => {
    const h = Buffer.alloc(16);
    h.writeUInt32LE(1_700_000_000 + Math.floor(p.us / 1e6), 0);
    h.writeUInt32LE(p.us % 1e6, 4);
    h.writeUInt32LE(p.bytes.length, 8);
    h.writeUInt32LE(p.bytes.length, 12);
    return Buffer.concat([h, p.bytes]);
  });
  fs.writeFileSync(file, Buffer.concat([global, ...records]));
  return (packets[packets.length - 1]?.us ?? 0) / 1000;
}
