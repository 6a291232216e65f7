// A real RTP peer: ffmpeg's RTP muxer sending a sample clip as PCMU, PCMA and L16. The
// receiver must hand out exactly the audio ffmpeg encoded (compared with ffmpeg's own raw
// encoding of the same clip), with no loss on loopback.
import { execFileSync, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { buildPayloadTypeMap } from '../../src/rtp/payload-types.js';
import { decodeAlaw, decodeToPcm16 } from '../../src/core/audio/encodings.js';
import { loadClips } from '../helpers/audio.js';
import { startTestReceiver } from '../helpers/rtp.js';

const clip = loadClips().find((c) => c.id === 'librivox-0880')!;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

/** ffmpeg's raw encoding of the clip, the reference the RTP stream must reproduce. */
function ffmpegRaw(args: string[]): Buffer {
  return execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-i', clip.wavFile, ...args, '-'], { maxBuffer: 64 << 20 });
}

function ffmpegRtp(
  codecArgs: string[],
  port: number,
  rtcpPort: number,
  opts: { realtime?: boolean; pktSize?: number } = {},
): Promise<void> {
  const url = `rtp://127.0.0.1:${port}?rtcpport=${rtcpPort}${opts.pktSize ? `&pkt_size=${opts.pktSize}` : ''}`;
  const args = [
    '-hide_banner',
    '-loglevel',
    'error',
    ...(opts.realtime ? ['-re'] : []),
    '-i',
    clip.wavFile,
    ...codecArgs,
    '-f',
    'rtp',
    url,
  ];
  return new Promise((resolve, reject) => {
    const p = spawn('ffmpeg', args, { stdio: ['ignore', 'ignore', 'inherit'] });
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited ${code}`))));
  });
}

async function receiver(payloadTypes: string[] = []) {
  const r = await startTestReceiver({ payloadTypes: buildPayloadTypeMap(payloadTypes), idleTimeoutMs: 400 });
  stops.push(() => r.receiver.stop());
  return r;
}

describe('ffmpeg RTP muxer as the peer', () => {
  it('PCMU at real time in 20 ms packets: every byte ffmpeg encoded, in order', async () => {
    const r = await receiver();
    await ffmpegRtp(['-ar', '8000', '-ac', '1', '-c:a', 'pcm_mulaw'], r.address.port, r.address.rtcpPort!, {
      realtime: true,
      pktSize: 172,
    });
    const s = await r.nextStream();
    const end = await s.ended;
    expect(end.reason).toBe('idle');
    expect(s.stream.info.format.codec).toBe('PCMU');
    expect(end.stats).toMatchObject({ lost: 0, duplicate: 0, late: 0, discontinuities: 0 });
    expect(end.stats.received).toBeGreaterThan(140); // 3 s of 20 ms packets
    const reference = ffmpegRaw(['-ar', '8000', '-ac', '1', '-f', 'mulaw']);
    expect(s.audio().length).toBe(reference.length);
    expect(s.audio().equals(reference)).toBe(true);
    // ffmpeg -re paces its input reads, not its packets: each read (about 128 ms of audio)
    // leaves as a burst of 20 ms packets, so the RFC 3550 jitter is tens of milliseconds
    // (about 35 ms measured), not zero; it is still well inside the 200 ms jitter delay.
    expect(end.stats.jitterSeconds).toBeGreaterThan(0);
    expect(end.stats.jitterSeconds).toBeLessThan(0.1);
  });

  it('PCMA with ffmpeg default packet size, sent as fast as it can', async () => {
    const r = await receiver();
    await ffmpegRtp(['-ar', '8000', '-ac', '1', '-c:a', 'pcm_alaw'], r.address.port, r.address.rtcpPort!);
    const s = await r.nextStream();
    const end = await s.ended;
    expect(s.stream.info.format.codec).toBe('PCMA');
    expect(end.stats.lost).toBe(0);
    const reference = decodeAlaw(ffmpegRaw(['-ar', '8000', '-ac', '1', '-f', 'alaw']));
    const got =
      s.stream.info.format.sessionEncoding === 'pcm_s16le_8000' ? decodeToPcm16('pcm_s16le_8000', s.audio()) : decodeAlaw(s.audio());
    expect(got.length).toBe(reference.length);
    expect(Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(Buffer.from(reference.buffer))).toBe(true);
  });

  it('L16 at 16 kHz on a dynamic payload type mapped with --payload-type', async () => {
    const r = await receiver(['96=l16/16000']);
    await ffmpegRtp(['-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16be', '-payload_type', '96'], r.address.port, r.address.rtcpPort!);
    const s = await r.nextStream();
    const end = await s.ended;
    expect(s.stream.info.format).toMatchObject({ codec: 'L16', sessionEncoding: 'pcm_s16le_16000' });
    expect(end.stats.lost).toBe(0);
    const reference = ffmpegRaw(['-ar', '16000', '-ac', '1', '-f', 's16le']);
    expect(s.audio().equals(reference)).toBe(true);
  });

  // docs/rtp.md's commands: ffmpeg sends L16 at 16 kHz as dynamic type 97 unless told
  // otherwise. Unmapped, the stream is refused with one warning naming the flag; mapped, it
  // is received whole.
  it('L16 at 16 kHz as ffmpeg sends it by default (type 97): one warning unmapped, received once mapped', async () => {
    const warnings: Array<{ msg: string; payloadType?: number }> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
    const unmapped = await startTestReceiver({ payloadTypes: buildPayloadTypeMap([]), idleTimeoutMs: 400, logger });
    stops.push(() => unmapped.receiver.stop());
    await ffmpegRtp(['-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16be'], unmapped.address.port, unmapped.address.rtcpPort!);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(unmapped.streams).toHaveLength(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ payloadType: 97 });
    expect(warnings[0]!.msg).toContain('--payload-type 97=l16/16000');

    const r = await receiver(['97=l16/16000']);
    // docs/rtp.md's command: 20 ms packets (12-byte header + 640 bytes).
    await ffmpegRtp(['-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16be'], r.address.port, r.address.rtcpPort!, { pktSize: 652 });
    const s = await r.nextStream();
    const end = await s.ended;
    expect(end.stats.received).toBeGreaterThan(140); // 3 s of 20 ms packets
    expect(s.stream.info.format).toMatchObject({ payloadType: 97, codec: 'L16', sessionEncoding: 'pcm_s16le_16000' });
    expect(end.stats.lost).toBe(0);
    expect(s.audio().equals(ffmpegRaw(['-ar', '16000', '-ac', '1', '-f', 's16le']))).toBe(true);
  });
});
