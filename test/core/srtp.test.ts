// SRTP with SDES keys (src/core/srtp.ts): RFC 3711's key derivation test vectors, and the
// receive side against an independent sender: ffmpeg's SRTP muxer (both suites) sends a real
// clip's G.711 bytes, which come out of unprotect byte for byte; a tampered packet fails its
// tag, a resent one is a replay, and neither changes the stream's state.
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadClips } from '../helpers/audio.js';
import {
  SrtpContext,
  deriveSessionKey,
  formatCryptoAttribute,
  newSrtpKeys,
  parseCryptoAttribute,
  type SrtpSuite,
} from '../../src/core/srtp.js';
import { encodeRtpPacket, parseRtpPacket } from '../../src/rtp/packet.js';

const hex = (s: string) => Buffer.from(s, 'hex');

describe('SRTP key derivation (RFC 3711 appendix B.3)', () => {
  it('derives the session encryption, authentication and salt keys of the test vector', () => {
    const key = hex('E1F97A0D3E018BE0D64FA32C06DE4139');
    const salt = hex('0EC675AD498AFEEBB6960B3AABE6');
    expect(deriveSessionKey(key, salt, 0, 16).toString('hex')).toBe('c61e7a93744f39ee10734afe3ff7a087');
    expect(deriveSessionKey(key, salt, 2, 14).toString('hex')).toBe('30cbbc08863d8c85d49db34a9ae1');
    expect(deriveSessionKey(key, salt, 1, 20).toString('hex')).toBe('cebe321f6ff7716b6fd4ab49af256a156d38baa4');
  });
});

describe('SDES a=crypto', () => {
  it('reads the two suites with lifetime and MKI, and refuses what it cannot use', () => {
    const k = Buffer.alloc(30, 7).toString('base64');
    expect(parseCryptoAttribute(`1 AES_CM_128_HMAC_SHA1_80 inline:${k}`)?.keys.suite).toBe('AES_CM_128_HMAC_SHA1_80');
    const mki = parseCryptoAttribute(`2 AES_CM_128_HMAC_SHA1_32 inline:${k}|2^31|1:4`);
    expect(mki?.tag).toBe(2);
    expect(mki?.keys.mkiLength).toBe(4);
    expect(parseCryptoAttribute(`1 AES_256_CM_HMAC_SHA1_80 inline:${Buffer.alloc(46).toString('base64')}`)).toBeNull();
    expect(parseCryptoAttribute(`1 AES_CM_128_HMAC_SHA1_80 inline:${Buffer.alloc(20).toString('base64')}`)).toBeNull();
    expect(parseCryptoAttribute(`1 AES_CM_128_HMAC_SHA1_80 inline:${k} KDR=1`)).toBeNull();
    expect(parseCryptoAttribute('garbage')).toBeNull();
    const ours = newSrtpKeys('AES_CM_128_HMAC_SHA1_80');
    expect(parseCryptoAttribute(formatCryptoAttribute(3, ours))?.keys.masterKey.equals(ours.masterKey)).toBe(true);
  });
});

/** ffmpeg sends `ulaw` as SRTP PCMU to a socket of ours; resolves with every datagram. */
async function ffmpegSrtp(suite: SrtpSuite, keySalt: Buffer, ulaw: string): Promise<Buffer[]> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const got: Buffer[] = [];
  sock.on('message', (m) => got.push(m));
  const port = sock.address().port;
  const args = [
    '-hide_banner',
    '-loglevel',
    'error',
    '-readrate',
    '8',
    '-f',
    'mulaw',
    '-ar',
    '8000',
    '-ac',
    '1',
    '-i',
    ulaw,
    '-c:a',
    'copy',
  ];
  args.push('-f', 'rtp', '-srtp_out_suite', suite, '-srtp_out_params', keySalt.toString('base64'), `srtp://127.0.0.1:${port}`);
  await new Promise<void>((resolve, reject) => {
    const child = spawn('ffmpeg', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited ${code}: ${err}`))));
  });
  await new Promise((r) => setTimeout(r, 200));
  sock.close();
  return got;
}

describe('SRTP against ffmpeg as the sender', () => {
  const clip = loadClips().find((c) => c.id === 'librivox-0870')!;

  for (const suite of ['AES_CM_128_HMAC_SHA1_80', 'AES_CM_128_HMAC_SHA1_32'] as const)
    it(`${suite}: every packet authenticates and decrypts to the clip's bytes; tampered and replayed packets are refused`, async () => {
      const keySalt = randomBytes(30);
      const packets = await ffmpegSrtp(suite, keySalt, clip.ulawFile);
      expect(packets.length).toBeGreaterThan(clip.mulaw8k.length / 1200);
      const ctx = new SrtpContext(parseCryptoAttribute(`1 ${suite} inline:${keySalt.toString('base64')}`)!.keys);
      const wrongKey = new SrtpContext(newSrtpKeys(suite));
      const payloads: Buffer[] = [];
      let rtcp = 0;
      for (const [i, p] of packets.entries()) {
        if (p[1]! >= 192 && p[1]! <= 223) {
          rtcp++; // SRTCP sender reports: not this context's job
          continue;
        }
        if (i === 5) expect(wrongKey.unprotect(p)).toEqual({ ok: false, reason: 'auth' });
        if (i === 20) {
          const tampered = Buffer.from(p);
          tampered[30]! ^= 0x01;
          expect(ctx.unprotect(tampered)).toEqual({ ok: false, reason: 'auth' });
        }
        const out = ctx.unprotect(p);
        if (!out.ok) throw new Error(`packet ${i}: ${out.reason}`);
        const rtp = parseRtpPacket(out.packet);
        if (!rtp.ok) throw new Error(`packet ${i} decrypted to no RTP: ${rtp.reason}`);
        expect(rtp.value.payloadType).toBe(0);
        payloads.push(Buffer.from(rtp.value.payload));
        if (i === 20) expect(ctx.unprotect(p)).toEqual({ ok: false, reason: 'replay' });
      }
      expect(Buffer.concat(payloads).equals(clip.mulaw8k)).toBe(true);
      expect(rtcp).toBeLessThan(packets.length / 10);
    }, 30_000);
});

describe('SRTP protect and unprotect', () => {
  it('round-trips across a sequence number wrap (the roll-over counter), out of order within the window, and refuses packets older than the window', () => {
    const keys = newSrtpKeys('AES_CM_128_HMAC_SHA1_80');
    const tx = new SrtpContext(keys);
    const rx = new SrtpContext(keys);
    const sent = Array.from({ length: 200 }, (_v, i) => {
      const seq = (65_450 + i) % 65_536;
      const payload = Buffer.alloc(160, i % 256);
      return {
        payload,
        srtp: tx.protect(Buffer.from(encodeRtpPacket({ payloadType: 0, sequenceNumber: seq, timestamp: i * 160, ssrc: 42, payload }))),
      };
    });
    // Swap neighbours across the wrap (packets 85 and 86 are seq 65535 and 0).
    const order = sent.map((_v, i) => i);
    [order[85], order[86]] = [order[86]!, order[85]!];
    for (const i of order) {
      const out = rx.unprotect(sent[i]!.srtp);
      if (!out.ok) throw new Error(`packet ${i}: ${out.reason}`);
      const rtp = parseRtpPacket(out.packet);
      expect(rtp.ok && Buffer.from(rtp.value.payload).equals(sent[i]!.payload)).toBe(true);
    }
    expect(rx.unprotect(sent[199 - 70]!.srtp)).toEqual({ ok: false, reason: 'replay' });
    expect(rx.unprotect(sent[199]!.srtp)).toEqual({ ok: false, reason: 'replay' });
    expect(rx.unprotect(Buffer.alloc(8))).toEqual({ ok: false, reason: 'malformed' });
  });
});
