// The UDP receiver against crafted packets on a real loopback socket.
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { createRtpMetrics } from '../../src/rtp/metrics.js';
import { buildPayloadTypeMap } from '../../src/rtp/payload-types.js';
import { decodeToPcm16 } from '../../src/core/audio/encodings.js';
import { encodeRtpPacket } from '../../src/rtp/packet.js';
import { packetize, RtpTestSender, startTestReceiver } from '../helpers/rtp.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** 8 kHz mu-law test tone: packet k (160 bytes) is filled with byte k % 250. */
function tone(packets: number): Buffer {
  const out = Buffer.alloc(packets * 160);
  for (let k = 0; k < packets; k++) out.fill(k % 250, k * 160, (k + 1) * 160);
  return out;
}

async function setup(opts: { payloadTypes?: string[]; idleTimeoutMs?: number; maxStreams?: number } = {}) {
  const registry = new Registry();
  const metrics = createRtpMetrics(registry);
  const r = await startTestReceiver({
    payloadTypes: buildPayloadTypeMap(opts.payloadTypes ?? []),
    idleTimeoutMs: opts.idleTimeoutMs ?? 5000,
    maxStreams: opts.maxStreams,
    jitter: { maxDelayMs: 60 },
    metrics,
  });
  cleanups.push(() => r.receiver.stop());
  const sender = await RtpTestSender.open(0x1234abcd);
  cleanups.push(() => sender.close());
  const value = async (name: string, labels: Record<string, string> = {}) => {
    const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
    const v = m?.values.find((x) => Object.entries(labels).every(([k, l]) => x.labels[k] === l));
    return v?.value ?? 0;
  };
  return { ...r, sender, metrics, value, registry };
}

describe('RtpReceiver', () => {
  it('turns an in-order PCMU stream into the same audio and ends it on RTCP BYE', async () => {
    const t = await setup();
    const audio = tone(50);
    for (const p of packetize(audio, { payloadType: 0, seq0: 1000, ts0: 5555 })) await t.sender.send(p, t.address.port);
    const s = await t.nextStream();
    expect(s.stream.info).toMatchObject({ ssrc: 0x1234abcd, address: '127.0.0.1', port: t.sender.port });
    expect(s.stream.info.format.sessionEncoding).toBe('mulaw_8000');
    await t.sender.bye(t.address.rtcpPort!);
    const end = await s.ended;
    expect(end.reason).toBe('bye');
    expect(s.audio().equals(audio)).toBe(true);
    expect(end.stats).toMatchObject({ lost: 0, reordered: 0, duplicate: 0 });
    expect(await t.value('scribed_rtp_packets_received_total')).toBe(50);
    expect(await t.value('scribed_rtp_streams_ended_total', { reason: 'bye' })).toBe(1);
    expect(await t.value('scribed_rtp_streams')).toBe(0);
    expect(await t.value('scribed_rtp_audio_seconds_total')).toBeCloseTo(1, 6);
  });

  it('reorders, drops duplicates and fills a lost packet with silence, and counts each', async () => {
    const t = await setup();
    const packets = packetize(tone(10), { payloadType: 0, seq0: 7 });
    // 0 1 3 2 2 5 6 8 9 7 (4 never arrives)
    for (const k of [0, 1, 3, 2, 2, 5, 6, 8, 9, 7]) await t.sender.send(packets[k]!, t.address.port);
    const s = await t.nextStream();
    await t.sender.bye(t.address.rtcpPort!);
    const end = await s.ended;
    const expected = tone(10);
    expected.fill(0xff, 4 * 160, 5 * 160);
    expect(s.audio().equals(expected)).toBe(true);
    expect(end.stats).toMatchObject({ lost: 1, reordered: 2, duplicate: 1, silenceSamples: 160 });
    expect(await t.value('scribed_rtp_packets_lost_total')).toBe(1);
    expect(await t.value('scribed_rtp_packets_reordered_total')).toBe(2);
    expect(await t.value('scribed_rtp_packets_duplicate_total')).toBe(1);
    expect(await t.value('scribed_rtp_silence_fill_seconds_total')).toBeCloseTo(0.02, 6);
  });

  it('declares a hole lost after the jitter delay even while the stream goes on', async () => {
    const t = await setup();
    const packets = packetize(tone(4), { payloadType: 0 });
    for (const k of [0, 2, 3]) await t.sender.send(packets[k]!, t.address.port);
    const s = await t.nextStream();
    // maxDelayMs is 60: the poll timer releases 2 and 3 without an end or another packet.
    await expect.poll(() => s.audio().length, { timeout: 2000 }).toBe(4 * 160);
    expect(s.stream.ended).toBe(false);
    expect(await t.value('scribed_rtp_packets_lost_total')).toBe(1);
  });

  it('handles sequence and timestamp wrap-around over the wire', async () => {
    const t = await setup();
    const audio = tone(20);
    const packets = packetize(audio, { payloadType: 0, seq0: 0xfff6, ts0: 0xffffffff - 5 * 160 });
    for (const p of packets) await t.sender.send(p, t.address.port);
    const s = await t.nextStream();
    await t.sender.bye(t.address.rtcpPort!);
    const end = await s.ended;
    expect(s.audio().equals(audio)).toBe(true);
    expect(end.stats).toMatchObject({ lost: 0, discontinuities: 0, outOfRange: 0 });
  });

  it('keeps one stream per SSRC and per source address', async () => {
    const t = await setup();
    const other = await RtpTestSender.open(0x1234abcd); // same SSRC, another source port
    cleanups.push(() => other.close());
    const packets = packetize(tone(3), { payloadType: 0 });
    for (const p of packets) {
      await t.sender.send(p, t.address.port);
      await t.sender.send(p, t.address.port, 0x99);
      await other.send(p, t.address.port);
    }
    await t.nextStream(3);
    expect(new Set(t.streams.map((s) => s.stream.info.key)).size).toBe(3);
    // A BYE names an SSRC; it ends that SSRC's streams from the sender's host.
    await t.sender.bye(t.address.rtcpPort!, 0x99);
    const ended = await Promise.race([
      t.streams.find((s) => s.stream.info.ssrc === 0x99)!.ended,
      new Promise((r) => setTimeout(() => r('timeout'), 2000)),
    ]);
    expect(ended).toMatchObject({ reason: 'bye' });
    expect(t.receiver.streams.size).toBe(2);
    for (const s of t.streams) if (s.stream.info.ssrc !== 0x99) expect(s.audio().equals(tone(3))).toBe(true);
  });

  it('drops malformed datagrams and counts them by reason, without disturbing the stream', async () => {
    const t = await setup();
    const packets = packetize(tone(10), { payloadType: 0 });
    const garbage: Array<[Uint8Array, string]> = [
      [Buffer.from([0x80, 0x00, 0x01]), 'too_short'],
      [Buffer.from('GET / HTTP/1.1\r\n\r\n'), 'bad_version'],
      [Buffer.from([0x8f, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xaa]), 'csrc_overrun'],
      [Buffer.from([0x90, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xbe, 0xde, 0xff, 0xff]), 'extension_overrun'],
      [Buffer.from([0xa0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xaa, 0x40]), 'bad_padding'],
    ];
    for (let k = 0; k < packets.length; k++) {
      await t.sender.send(packets[k]!, t.address.port);
      const g = garbage[k % garbage.length]!;
      await t.sender.sendRaw(g[0], t.address.port);
    }
    // A garbled RTCP datagram on the RTCP port.
    await t.sender.sendRaw(Buffer.from([0x80, 203, 0, 9]), t.address.rtcpPort!);
    const s = await t.nextStream();
    await t.sender.bye(t.address.rtcpPort!);
    await s.ended;
    expect(s.audio().equals(tone(10))).toBe(true);
    for (const [, reason] of garbage) expect(await t.value('scribed_rtp_packets_malformed_total', { reason }), reason).toBe(2);
    expect(await t.value('scribed_rtp_packets_malformed_total', { reason: 'rtcp_malformed' })).toBe(1);
    expect(t.streams).toHaveLength(1);
  });

  it('survives thousands of random datagrams, counts every one, and still receives a stream after them', async () => {
    const t = await setup();
    const datagrams = fc.sample(fc.uint8Array({ minLength: 0, maxLength: 200 }), 3000);
    // Whatever a datagram turned into, it is counted in exactly one of these.
    const counted = async () =>
      (await t.value('scribed_rtp_packets_received_total')) +
      (await t.value('scribed_rtp_rtcp_packets_total')) +
      (await t.registry.getSingleMetric('scribed_rtp_packets_malformed_total')!.get()).values.reduce((a, v) => a + v.value, 0);
    // In batches well inside the receive buffer (the receiver asks for 1 MiB), so however
    // busy the machine, the kernel drops none and every datagram must be accounted for.
    for (let i = 0; i < datagrams.length; i += 100) {
      const batch = datagrams.slice(i, i + 100);
      for (const d of batch) await t.sender.sendRaw(d, d.length % 2 ? t.address.port : t.address.rtcpPort!);
      await expect.poll(counted, { timeout: 5000 }).toBe(i + batch.length);
    }
    const good = await RtpTestSender.open(0x5eed);
    cleanups.push(() => good.close());
    for (const p of packetize(tone(5), { payloadType: 0 })) await good.send(p, t.address.port);
    await expect.poll(() => t.streams.find((s) => s.stream.info.ssrc === 0x5eed)?.audio().length ?? 0, { timeout: 3000 }).toBe(5 * 160);
    expect(await counted()).toBe(datagrams.length + 5);
  });

  it('drops unsupported payload types, and keeps the sequence for other types inside a stream', async () => {
    const t = await setup();
    await t.sender.sendRaw(
      encodeRtpPacket({ payloadType: 97, sequenceNumber: 1, timestamp: 0, ssrc: 0x77, payload: new Uint8Array(160) }),
      t.address.port,
    );
    const packets = packetize(tone(6), { payloadType: 0 });
    // Packet 3 is a DTMF event (PT 101) at the same place in the sequence.
    packets[3] = { ...packets[3]!, payloadType: 101, payload: Uint8Array.from([1, 0, 0, 160]) };
    for (const p of packets) await t.sender.send(p, t.address.port);
    const s = await t.nextStream();
    await t.sender.bye(t.address.rtcpPort!);
    const end = await s.ended;
    expect(t.streams).toHaveLength(1);
    expect(end.stats.lost).toBe(0);
    const expected = tone(6);
    expected.fill(0xff, 3 * 160, 4 * 160);
    expect(s.audio().equals(expected)).toBe(true);
    expect(await t.value('scribed_rtp_packets_dropped_total', { reason: 'unsupported_payload_type' })).toBe(1);
    expect(await t.value('scribed_rtp_packets_dropped_total', { reason: 'other_payload_type' })).toBe(1);
  });

  it('warns once per stream of an unmapped payload type, naming the --payload-type that fixes it', async () => {
    const lines: Array<{ level: number; msg: string; payloadType?: number; ssrc?: string }> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const registry = new Registry();
    const r = await startTestReceiver({
      payloadTypes: buildPayloadTypeMap([]),
      jitter: { maxDelayMs: 60 },
      metrics: createRtpMetrics(registry),
      logger,
    });
    cleanups.push(() => r.receiver.stop());
    const ffmpegLike = await RtpTestSender.open(0x5eed);
    cleanups.push(() => ffmpegLike.close());
    const other = await RtpTestSender.open(0x0ddba11);
    cleanups.push(() => other.close());
    // ffmpeg's L16 at 16 kHz: dynamic payload type 97, 20 ms per packet.
    for (const p of packetize(Buffer.alloc(640 * 10), { payloadType: 97, bytesPerSample: 2, samplesPerPacket: 320 }))
      await ffmpegLike.send(p, r.address.port);
    for (const p of packetize(Buffer.alloc(640 * 3), { payloadType: 97, bytesPerSample: 2, samplesPerPacket: 320 }))
      await other.send(p, r.address.port);
    // Datagrams on loopback arrive in order: a DTMF-free PCMU packet after them shows every
    // earlier one was handled.
    for (const p of packetize(tone(1), { payloadType: 0 })) await other.send(p, r.address.port);
    await r.nextStream();
    expect(lines).toHaveLength(2);
    expect(lines.map((l) => l.ssrc).sort()).toEqual(['00005eed', '00ddba11']);
    for (const l of lines) {
      expect(l.level).toBe(40);
      expect(l.payloadType).toBe(97);
      expect(l.msg).toContain('--payload-type 97=l16/16000');
    }
    expect(r.streams).toHaveLength(1);
  });

  it('a call that goes quiet past the idle timeout and goes on becomes a new stream, the next generation', async () => {
    const t = await setup({ idleTimeoutMs: 300 });
    const packets = packetize(tone(6), { payloadType: 0 });
    for (const p of packets.slice(0, 3)) await t.sender.send(p, t.address.port);
    const first = await t.nextStream();
    expect(first.stream.info.generation).toBe(1);
    expect((await first.ended).reason).toBe('idle');
    // The rest of the call, same SSRC and source, continuing its sequence and timestamps.
    for (const p of packets.slice(3)) await t.sender.send(p, t.address.port);
    const second = await t.nextStream(2);
    expect(second.stream.info.key).toBe(first.stream.info.key);
    expect(second.stream.info.generation).toBe(2);
    await t.sender.bye(t.address.rtcpPort!);
    await second.ended;
    expect(second.audio().equals(tone(6).subarray(3 * 160))).toBe(true);
    expect(await t.value('scribed_rtp_packets_dropped_total', { reason: 'ended_stream' })).toBe(0);
    expect(await t.value('scribed_rtp_streams_ended_total', { reason: 'idle' })).toBe(1);
  });

  it('after a BYE, stragglers are dropped for one idle timeout, which they do not extend', async () => {
    const t = await setup({ idleTimeoutMs: 400 });
    const packets = packetize(tone(40), { payloadType: 0 });
    for (const p of packets.slice(0, 2)) await t.sender.send(p, t.address.port);
    const first = await t.nextStream();
    await t.sender.bye(t.address.rtcpPort!);
    expect((await first.ended).reason).toBe('bye');
    const byeAt = Date.now();
    // A sender that goes on sending every 50 ms: dropped until 400 ms after the BYE, then a
    // new stream (before, every straggler pushed the end further and the rest was lost).
    for (let k = 2; k < packets.length && t.streams.length < 2; k++) {
      await t.sender.send(packets[k]!, t.address.port);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(t.streams).toHaveLength(2);
    expect(Date.now() - byeAt).toBeGreaterThanOrEqual(400);
    expect(Date.now() - byeAt).toBeLessThan(1500);
    expect(t.streams[1]!.stream.info.generation).toBe(2);
    expect(await t.value('scribed_rtp_packets_dropped_total', { reason: 'ended_stream' })).toBeGreaterThan(3);
  });

  it('understands RTCP multiplexed on the RTP port (RFC 5761)', async () => {
    const t = await setup();
    for (const p of packetize(tone(2), { payloadType: 0 })) await t.sender.send(p, t.address.port);
    const s = await t.nextStream();
    await t.sender.bye(t.address.port);
    expect((await s.ended).reason).toBe('bye');
  });

  it('converts L16 (big-endian) of a dynamic payload type to little-endian session PCM', async () => {
    const t = await setup({ payloadTypes: ['96=l16/16000'] });
    const samples = Int16Array.from({ length: 640 }, (_, i) => ((i * 97) % 30000) - 15000);
    const wire = Buffer.alloc(samples.length * 2);
    samples.forEach((v, i) => wire.writeInt16BE(v, 2 * i));
    for (const p of packetize(wire, { payloadType: 96, bytesPerSample: 2, samplesPerPacket: 320 })) await t.sender.send(p, t.address.port);
    const s = await t.nextStream();
    await t.sender.bye(t.address.rtcpPort!);
    await s.ended;
    expect(s.stream.info.format.sessionEncoding).toBe('pcm_s16le_16000');
    expect([...decodeToPcm16('pcm_s16le_16000', s.audio())]).toEqual([...samples]);
  });

  it('ends every stream with its held audio on stop', async () => {
    const t = await setup();
    const packets = packetize(tone(3), { payloadType: 0 });
    for (const k of [0, 2]) await t.sender.send(packets[k]!, t.address.port);
    const s = await t.nextStream();
    await expect.poll(() => s.stream.jitter.heldPackets).toBe(1);
    await t.receiver.stop();
    const end = await s.ended;
    expect(end.reason).toBe('shutdown');
    expect(s.audio().length).toBe(3 * 160);
  });

  it('refuses new streams beyond maxStreams', async () => {
    const t = await setup({ maxStreams: 1 });
    const packets = packetize(tone(1), { payloadType: 0 });
    await t.sender.send(packets[0]!, t.address.port);
    await t.sender.send(packets[0]!, t.address.port, 0x42);
    await expect.poll(() => t.value('scribed_rtp_packets_dropped_total', { reason: 'stream_limit' })).toBe(1);
    expect(t.streams).toHaveLength(1);
  });
});
