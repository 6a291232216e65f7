// An RTP call survives its server dying: a `scribed serve` process is killed with SIGKILL and
// restarted twice while a crafted peer keeps sending RTP (a phone does not wait). The ingest
// buffers what the server has not acknowledged, resumes, re-sends, and the call's session ends
// holding every sample once, with the words of the same call without faults.
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { RtpIngest, type RtpSessionReport } from '../../src/rtp/ingest.js';
import { ClientMetrics } from '../../src/client/metrics.js';
import { buildPayloadTypeMap } from '../../src/rtp/payload-types.js';
import { normaliseWords } from '../../src/core/wer.js';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { packetize, RtpTestSender } from '../helpers/rtp.js';
import { createAccount, freePort, kill9, serve } from '../helpers/serve-process.js';

const logger = pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' });
const audio = Buffer.concat(
  loadClips()
    .slice(0, 3)
    .map((c) => c.mulaw8k),
); // 15.4 s
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

const serveOn = (dataDir: string, port: number) => serve(dataDir, port, children);

describe('RTP ingest under server faults', () => {
  it('kill -9 and restart of the server twice mid-call: every sample held once, the words of the call without faults', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const accessKey = createAccount(dataDir, { name: 'pbx' });
    let server = await serveOn(dataDir, port);
    const clientMetrics = new ClientMetrics({ defaults: false });
    const resumes = async () => (await clientMetrics.resumes.get()).values[0]?.value ?? 0;
    const ingest = new RtpIngest({
      clientMetrics,
      host: '127.0.0.1',
      port: 0,
      rtcpPort: 0,
      payloadTypes: buildPayloadTypeMap([]),
      url: `http://127.0.0.1:${port}`,
      accessKey,
      logger,
    });
    const address = await ingest.start();

    async function call(ssrc: number, faultsAt: number[]): Promise<RtpSessionReport> {
      const done = new Promise<RtpSessionReport>((resolve) => {
        const onDone = (r: RtpSessionReport) => {
          if (r.ssrc === ssrc) resolve(r);
        };
        ingest.on('done', onDone);
      });
      const sender = await RtpTestSender.open(ssrc);
      const packets = packetize(audio, { payloadType: 0, seq0: 60000, ts0: 4_000_000_000 });
      // Faults run beside the sending loop: the peer keeps sending while the server is down.
      // Each waits for the previous restart and for the stream to have resumed onto it, then
      // kills the server and brings it back 1.5 s later.
      let faults: Promise<void> = Promise.resolve();
      let resumesBefore = await resumes();
      for (const [k, p] of packets.entries()) {
        if (faultsAt.includes(k)) {
          faults = faults.then(async () => {
            while ((await resumes()) < resumesBefore) await new Promise((r) => setTimeout(r, 50));
            await kill9(server);
            resumesBefore += 1;
            await new Promise((r) => setTimeout(r, 1500));
            server = await serveOn(dataDir, port);
          });
        }
        await sender.send(p, address.port);
        await new Promise((r) => setTimeout(r, 8)); // about 2.5x real time
      }
      await faults;
      await sender.bye(address.rtcpPort!);
      const report = await done;
      sender.close();
      return report;
    }

    const clean = await call(0xa11ce, []);
    const faulty = await call(0xb0b, [200, 500]);
    await ingest.stop();

    for (const r of [clean, faulty]) {
      expect(r.error).toBeNull();
      expect(r.end.stats.lost).toBe(0);
      expect(r.summary!.capturedSamples).toBe(audio.length);
      expect(r.summary!.acknowledgedSamples).toBe(audio.length);
      expect(r.summary!.serverCapturedSamples).toBe(audio.length);
      expect(r.summary!.overflowSamples).toBe(0);
    }
    expect(faulty.summary!.resumes).toBeGreaterThanOrEqual(2);
    const cleanWords = normaliseWords(clean.summary!.finals.map((f) => f.text).join(' '));
    expect(cleanWords.length).toBeGreaterThan(12);
    expect(normaliseWords(faulty.summary!.finals.map((f) => f.text).join(' '))).toEqual(cleanWords);
    await kill9(server);
  }, 300_000);
});
