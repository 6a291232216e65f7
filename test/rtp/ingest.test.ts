// RTP ingest end to end, in process: a real service on a port, the RTP receiver wired to the
// client library, and a real peer (ffmpeg's RTP muxer) or a crafted lossy sender. The
// transcript of an RTP call must match the same audio streamed directly, and the server's
// timeline must hold every sample of the call, lost packets included (as silence).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { SessionStreamer } from '../../src/client/session-streamer.js';
import { RtpIngest, type RtpSessionReport } from '../../src/rtp/ingest.js';
import { buildPayloadTypeMap } from '../../src/rtp/payload-types.js';
import { createRtpMetrics } from '../../src/rtp/metrics.js';
import { normaliseWords, wordErrorRate } from '../../src/core/wer.js';
import type { InputEncodingName } from '../../src/core/audio/encodings.js';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { packetize, RtpTestSender } from '../helpers/rtp.js';
import { freePort } from '../helpers/serve-process.js';
import { ClientMetrics } from '../../src/client/metrics.js';

const clip = loadClips().find((c) => c.id === 'librivox-0880')!;
const logger = pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' });
let svc: TestService;
let accessKey: string;

beforeAll(async () => {
  svc = await startService();
  accessKey = (await svc.account(1_000_000n)).accessKey;
});
afterAll(() => svc?.stop());

function textOf(report: { summary: { finals: Array<{ text: string }> } | null }): string {
  return (report.summary?.finals ?? []).map((f) => f.text).join(' ');
}

/** The uninterrupted reference: the same bytes streamed straight through the client library. */
async function direct(encoding: InputEncodingName, audio: Buffer): Promise<string> {
  const streamer = new SessionStreamer({ url: svc.baseUrl, accessKey, encoding, streamId: randomUUID(), bufferSamples: 160_000, logger });
  await streamer.start();
  for (const c of chunks(audio, encoding === 'mulaw_8000' ? 1 : 2, 160)) await streamer.write(c);
  const summary = await streamer.end();
  return summary.finals.map((f) => f.text).join(' ');
}

async function ingest(opts: { payloadTypes?: string[] } = {}) {
  const outDir = tempDir('scribed-rtp-out-');
  const registry = new Registry();
  const rtpMetrics = createRtpMetrics(registry);
  const ing = new RtpIngest({
    host: '127.0.0.1',
    port: 0,
    rtcpPort: 0,
    payloadTypes: buildPayloadTypeMap(opts.payloadTypes ?? []),
    idleTimeoutMs: 500,
    url: svc.baseUrl,
    accessKey,
    outDir,
    logger,
    rtpMetrics,
  });
  const address = await ing.start();
  const done = new Promise<RtpSessionReport>((resolve) => ing.once('done', resolve));
  return { ing, address, outDir, done, registry };
}

function ffmpegRtp(codecArgs: string[], port: number, rtcpPort: number): Promise<void> {
  const url = `rtp://127.0.0.1:${port}?rtcpport=${rtcpPort}&pkt_size=172`;
  return new Promise((resolve, reject) => {
    const p = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-re', '-i', clip.wavFile, ...codecArgs, '-f', 'rtp', url], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited ${code}`))));
  });
}

function ffmpegRaw(args: string[]): Buffer {
  return execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-i', clip.wavFile, ...args, '-'], { maxBuffer: 64 << 20 });
}

describe('RTP ingest into a real service', () => {
  it('ffmpeg PCMU call: one session, every sample on the server, the words of the direct stream, transcript files on disk', async () => {
    const t = await ingest();
    await ffmpegRtp(['-ar', '8000', '-ac', '1', '-c:a', 'pcm_mulaw'], t.address.port, t.address.rtcpPort!);
    const report = await t.done;
    await t.ing.stop();
    const sent = ffmpegRaw(['-ar', '8000', '-ac', '1', '-f', 'mulaw']);
    expect(report.error).toBeNull();
    expect(report.end.reason).toBe('idle');
    expect(report.end.stats.lost).toBe(0);
    expect(report.summary!.serverCapturedSamples).toBe(sent.length);
    expect(report.summary!.overflowSamples).toBe(0);
    const rtpText = textOf(report);
    expect(normaliseWords(rtpText).length).toBeGreaterThan(3);
    expect(normaliseWords(rtpText)).toEqual(normaliseWords(await direct('mulaw_8000', sent)));
    // Transcript files, named by session id, hold the same words.
    const sessionId = report.sessionId!;
    const txt = fs.readFileSync(path.join(t.outDir, `${sessionId}.txt`), 'utf8');
    expect(normaliseWords(txt)).toEqual(normaliseWords(rtpText));
    const jsonl = fs
      .readFileSync(path.join(t.outDir, `${sessionId}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(jsonl.length).toBe(report.summary!.finals.length);
  });

  it('ffmpeg PCMA call: decoded exactly and transcribed like the direct stream', async () => {
    const t = await ingest();
    await ffmpegRtp(['-ar', '8000', '-ac', '1', '-c:a', 'pcm_alaw'], t.address.port, t.address.rtcpPort!);
    const report = await t.done;
    await t.ing.stop();
    expect(report.error).toBeNull();
    const sentAlaw = ffmpegRaw(['-ar', '8000', '-ac', '1', '-f', 'alaw']);
    const format = buildPayloadTypeMap([]).get(8)!;
    expect(report.summary!.serverCapturedSamples).toBe(sentAlaw.length);
    expect(normaliseWords(textOf(report))).toEqual(normaliseWords(await direct(format.sessionEncoding, format.toSession(sentAlaw))));
  });

  it('a call that goes quiet past the idle timeout: the rest of the call gets a second session, nothing lost', async () => {
    const t = await ingest();
    const reports: RtpSessionReport[] = [];
    t.ing.on('done', (r) => reports.push(r));
    const sender = await RtpTestSender.open(0xbeef01);
    const half = Math.floor(clip.mulaw8k.length / 320) * 160;
    const packets = packetize(clip.mulaw8k, { payloadType: 0, seq0: 100, ts0: 1000 });
    const cut = half / 160;
    for (const p of packets.slice(0, cut)) {
      await sender.send(p, t.address.port);
      await new Promise((r) => setTimeout(r, 2));
    }
    // Quiet for longer than the idle timeout (500 ms), then the call goes on.
    await expect.poll(() => reports.length, { timeout: 20_000 }).toBe(1);
    for (const p of packets.slice(cut)) {
      await sender.send(p, t.address.port);
      await new Promise((r) => setTimeout(r, 2));
    }
    await sender.bye(t.address.rtcpPort!);
    await expect.poll(() => reports.length, { timeout: 30_000 }).toBe(2);
    sender.close();
    await t.ing.stop();
    const [first, second] = reports as [RtpSessionReport, RtpSessionReport];
    expect(first.error).toBeNull();
    expect(second.error).toBeNull();
    expect(first.end.reason).toBe('idle');
    expect(second.end.reason).toBe('bye');
    expect(second.streamId).toBe(`${first.streamId}#2`);
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(first.summary!.serverCapturedSamples).toBe(half);
    expect(second.summary!.serverCapturedSamples).toBe(clip.mulaw8k.length - half);
  });

  it('a call with 10% of packets lost, some reordered and duplicated: the timeline holds every sample, lost ones as silence', async () => {
    const t = await ingest();
    const sender = await RtpTestSender.open(0xc0ffee);
    const packets = packetize(clip.mulaw8k, { payloadType: 0, seq0: 65000, ts0: 0xfffff000 });
    // Deterministic impairment: every 10th packet lost (never the first or last), every
    // 7th swapped with the next, every 13th sent twice.
    const lost = new Set(packets.map((_, k) => k).filter((k) => k % 10 === 5 && k < packets.length - 1));
    const order: number[] = [];
    for (let k = 0; k < packets.length; k++) {
      if (k % 7 === 3 && k + 1 < packets.length) {
        order.push(k + 1, k);
        k++;
      } else order.push(k);
    }
    for (const k of order) {
      if (lost.has(k)) continue;
      await sender.send(packets[k]!, t.address.port);
      if (k % 13 === 0) await sender.send(packets[k]!, t.address.port);
      await new Promise((r) => setTimeout(r, 5)); // 4x real time
    }
    await sender.bye(t.address.rtcpPort!);
    const report = await t.done;
    sender.close();
    await t.ing.stop();
    expect(report.end.reason).toBe('bye');
    expect(report.end.stats.lost).toBe(lost.size);
    expect(report.end.stats.reordered).toBeGreaterThan(0);
    expect(report.end.stats.duplicate).toBe(packets.filter((_, k) => k % 13 === 0 && !lost.has(k)).length);
    expect(report.summary!.serverCapturedSamples).toBe(clip.mulaw8k.length);
    expect(report.end.stats.silenceSamples).toBe([...lost].reduce((n, k) => n + packets[k]!.payload.length, 0));
    const clean = await direct('mulaw_8000', clip.mulaw8k);
    const lossy = textOf(report);
    // Figures for docs/rtp.md; the transcript is not asserted word for word under loss.
    const vsClean = wordErrorRate(clean, lossy);
    const vsRef = wordErrorRate(clip.reference, lossy);
    expect(normaliseWords(lossy).length).toBeGreaterThan(0);
    if (process.env.SCRIBED_TEST_FIGURES)
      console.log(JSON.stringify({ lost: lost.size, packets: packets.length, vsClean, vsRef, clean, lossy }));
  });
});

describe('RTP ingest while the server is unreachable', () => {
  it('when closing the session fails, its transcript files are still closed and the streams gauge is back to 0', async () => {
    const own = await startService();
    const key = (await own.account(1_000_000n)).accessKey;
    // The ingest reaches the service through a TCP relay this test can cut.
    const conns = new Set<net.Socket>();
    const relay = net.createServer((c) => {
      const u = net.connect(Number(new URL(own.baseUrl).port), '127.0.0.1');
      for (const s of [c, u]) {
        conns.add(s);
        s.on('error', () => undefined).on('close', () => conns.delete(s));
      }
      c.pipe(u).pipe(c);
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
    const cutRelay = () => {
      relay.close();
      for (const s of conns) s.destroy();
    };
    const metrics = new ClientMetrics({ defaults: false });
    const outDir = tempDir('scribed-rtp-out-');
    const url = `http://127.0.0.1:${(relay.address() as net.AddressInfo).port}`;
    const ing = new RtpIngest({
      host: '127.0.0.1',
      port: 0,
      rtcpPort: 0,
      payloadTypes: buildPayloadTypeMap([]),
      idleTimeoutMs: 60_000,
      url,
      accessKey: key,
      outDir,
      logger,
      clientMetrics: metrics,
    });
    const address = await ing.start();
    const reports: RtpSessionReport[] = [];
    ing.on('done', (r) => reports.push(r));
    let sessionId = '';
    ing.on('session', (info) => (sessionId = info.sessionId));
    const sender = await RtpTestSender.open(0xfa11ed);
    for (const p of packetize(clip.mulaw8k.subarray(0, 16000), { payloadType: 0 })) await sender.send(p, address.port);
    await expect.poll(() => sessionId, { timeout: 10_000 }).not.toBe('');
    const gauge = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await metrics.registry.metrics())?.[1]);
    await expect.poll(() => gauge('scribed_client_audio_buffered_seconds'), { timeout: 10_000 }).toBe(0);
    // The service stops: its shutdown final is appended to the files (they are open now), and
    // the network path goes away with it, so the close that the BYE starts cannot finish; the
    // operator's stop bound then gives up on it (abortAll), so end() fails.
    const finalSeen = new Promise<void>((resolve) =>
      ing.once('final', () => {
        cutRelay();
        resolve();
      }),
    );
    await own.stop();
    await finalSeen;
    cutRelay();
    await sender.bye(address.rtcpPort!);
    sender.close();
    await new Promise((r) => setTimeout(r, 300));
    await ing.abortAll();
    await expect.poll(() => reports.length, { timeout: 10_000 }).toBe(1);
    expect(reports[0]!.error).not.toBeNull();
    await ing.stop();
    // The files exist (rewritten from what was received) and no descriptor is left open on them.
    const files = [`${sessionId}.jsonl`, `${sessionId}.txt`].map((f) => path.join(outDir, f));
    for (const f of files) expect(fs.existsSync(f), f).toBe(true);
    const open = fs.readdirSync('/proc/self/fd').map((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    });
    for (const f of files) expect(open).not.toContain(f);
    expect(await gauge('scribed_client_streams')).toBe(0);
  });

  it('holds at most --pending-audio-seconds per call (the rest counted as overflow), keeps at most maxStreams ended calls, and stop() gives up the rest', async () => {
    const metrics = new ClientMetrics({ defaults: false });
    const ing = new RtpIngest({
      host: '127.0.0.1',
      port: 0,
      rtcpPort: null,
      payloadTypes: buildPayloadTypeMap([]),
      idleTimeoutMs: 200,
      maxStreams: 2,
      url: `http://127.0.0.1:${await freePort()}`, // nothing listens there
      accessKey,
      pendingAudioSeconds: 0.5,
      logger,
      clientMetrics: metrics,
    });
    const address = await ing.start();
    const reports: RtpSessionReport[] = [];
    ing.on('done', (r) => reports.push(r));
    const overflowSeconds = async () =>
      Number(/^scribed_client_audio_overflow_seconds_total (\S+)$/m.exec(await metrics.registry.metrics())?.[1]);

    // A 2 s call: only the last 0.5 s can be held while its session cannot be created.
    const first = await RtpTestSender.open(0xdead01);
    for (const p of packetize(clip.mulaw8k.subarray(0, 16000), { payloadType: 0 })) await first.send(p, address.port);
    first.close();
    await expect.poll(overflowSeconds, { timeout: 5000 }).toBeCloseTo(1.5, 6);
    // Three more short calls end while the server is still away: of the four ended calls
    // waiting for a session, only maxStreams (2) are kept; the oldest two are given up.
    let started = 0;
    ing.receiver.on('stream', () => started++);
    for (const [k, ssrc] of [0xdead02, 0xdead03, 0xdead04].entries()) {
      await expect.poll(() => ing.receiver.streams.size, { timeout: 5000 }).toBe(0); // the previous call has ended
      const s = await RtpTestSender.open(ssrc);
      for (const p of packetize(clip.mulaw8k.subarray(0, 800), { payloadType: 0 })) await s.send(p, address.port);
      s.close();
      await expect.poll(() => started, { timeout: 5000 }).toBe(k + 1);
    }
    await expect.poll(() => reports.length, { timeout: 5000 }).toBe(2);
    expect(reports.map((r) => r.ssrc)).toEqual([0xdead01, 0xdead02]);
    expect(ing.activeSessions).toBe(2);
    // stop() returns instead of waiting for the server for ever.
    const stopped = await Promise.race([ing.stop(), new Promise((r) => setTimeout(() => r('stop hangs'), 5000))]);
    expect(stopped).not.toBe('stop hangs');
    expect(reports).toHaveLength(4);
    for (const r of reports) {
      expect(r.sessionId).toBeNull();
      expect(r.error).toMatch(/aborted/);
      expect(r.undeliveredFile).toBeNull(); // no outDir: the audio is dropped, and the log says so
    }
    // Each was given up for its own reason, not lumped as a failure.
    expect(reports.map((r) => r.givenUp)).toEqual(['pending_limit', 'pending_limit', 'shutdown', 'shutdown']);
  });
});
