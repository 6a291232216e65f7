// Fault injection against real `scribed serve` processes sharing one data dir and port:
// a SessionStreamer streams several concatenated sample clips while the test cuts its socket
// and kill -9s / restarts the server mid-stream. Every captured sample must be held by the
// server exactly once and the transcript's words must equal an uninterrupted run's.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { SessionStreamer, type FinalSegment } from '../../src/client/session-streamer.js';
import { tempDir } from '../helpers/service.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { createAccount, freePort, serve as serveOn } from '../helpers/serve-process.js';

const logger = pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' });
// The five sample clips twice: about 50 s of 8 kHz mu-law, so the 30 s segment bound falls
// in the middle and a kill lands after a segment was finalized too.
const clipAudio = loadClips().map((c) => c.mulaw8k);
const audio = Buffer.concat([...clipAudio, ...clipAudio]);
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

const words = (finals: FinalSegment[]) => finals.flatMap((f) => f.text.split(/\s+/).filter(Boolean));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const serve = (dataDir: string, port: number) => serveOn(dataDir, port, children);

describe('ingest under faults (real server processes)', () => {
  it('kill -9 / restart and socket cuts mid-stream: captured = acknowledged = server-held, same words', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const accessKey = createAccount(dataDir);
    let server = await serve(dataDir, port);
    const url = `http://127.0.0.1:${port}`;

    async function run(faults: Array<{ at: number; kind: 'cut' | 'kill'; afterFirstFinal?: boolean }>) {
      const streamer = new SessionStreamer({
        url,
        accessKey,
        encoding: 'mulaw_8000',
        streamId: randomUUID(),
        bufferSamples: 60 * 8000,
        logger,
        backoff: { baseMs: 50, maxMs: 500 },
      });
      await streamer.start();
      const pieces = chunks(audio, 1, 800); // 100 ms each
      const log: Array<{ kind: string; acknowledged: number; finalizedEnd: number }> = [];
      let finalizedEnd = 0;
      streamer.on('final', (f: FinalSegment) => (finalizedEnd = Math.max(finalizedEnd, Number(f.endSample))));
      for (let i = 0; i < pieces.length; i++) {
        await streamer.write(pieces[i]!);
        await sleep(10); // about 10x real time, so faults land mid-stream
        for (const f of faults.filter((x) => x.at === i)) {
          // Wait until the stream is back and nearly caught up, so every fault hits a live
          // stream with acknowledged audio that is not final yet.
          // A fault meant for a later segment also waits for the first final: acks do not wait
          // for decoding, so at 10x real time the finals trail the acknowledgements.
          const ready = () =>
            streamer.stats().connected &&
            streamer.stats().acknowledged >= streamer.stats().captured - 1600 &&
            (!f.afterFirstFinal || finalizedEnd > 0);
          for (let w = 0; w < 6000 && !ready(); w++) await sleep(10);
          log.push({ kind: f.kind, acknowledged: streamer.stats().acknowledged, finalizedEnd });
          if (f.kind === 'cut') streamer.cutSocket();
          else {
            server.kill('SIGKILL');
            await new Promise((r) => server.once('exit', r));
            server = await serve(dataDir, port);
          }
        }
      }
      const summary = await streamer.end();
      return { summary, log };
    }

    const clean = await run([]);
    expect(clean.summary.serverCapturedSamples).toBe(audio.length);
    const cleanWords = words(clean.summary.finals);
    expect(cleanWords.length).toBeGreaterThan(100);
    expect(clean.summary.finals.length).toBeGreaterThanOrEqual(2);

    // Kills and socket cuts land in both segments (30 s bound = chunk 300). The kill in the
    // second segment needs the channel state spooled at the first final: the restored decoder
    // continues the channel normalisation (live CMN) the lost one had adapted, so the words
    // still equal the clean run's (docs/ingest.md, "Recovery").
    const faults = [
      { at: 40, kind: 'cut' as const },
      { at: 80, kind: 'kill' as const },
      { at: 170, kind: 'kill' as const },
      { at: 260, kind: 'kill' as const },
      { at: 330, kind: 'cut' as const },
      { at: 380, kind: 'kill' as const, afterFirstFinal: true },
      { at: 420, kind: 'cut' as const },
    ];
    const faulted = await run(faults);
    const s = faulted.summary;
    // Each kill hit acknowledged audio that was not final yet: the spool had to carry it.
    for (const k of faulted.log.filter((l) => l.kind === 'kill')) expect(k.acknowledged).toBeGreaterThan(k.finalizedEnd);
    // ... and one of them came after the first final: a later segment was restored.
    expect(faulted.log.some((l) => l.kind === 'kill' && l.finalizedEnd > 0)).toBe(true);
    expect(s.capturedSamples).toBe(audio.length);
    expect(s.acknowledgedSamples).toBe(audio.length);
    expect(s.serverCapturedSamples).toBe(audio.length);
    expect(s.overflowSamples).toBe(0);
    expect(s.reconnects).toBeGreaterThanOrEqual(faults.length);
    expect(s.resumes).toBeGreaterThanOrEqual(faults.length);
    const session = (await (
      await fetch(`${url}/sound_clone/api/v1/stt/realtime/sessions/${s.sessionId}`, { headers: { accessKey } })
    ).json()) as any;
    expect(session.data.capturedSamples).toBe(String(audio.length));
    const transcribedEnd = Math.max(...s.finals.map((f) => Number(f.endSample)));
    expect(transcribedEnd).toBe(audio.length);
    expect(words(s.finals)).toEqual(cleanWords);
    process.stderr.write(
      `fault injection: captured ${s.capturedSamples}, acknowledged ${s.acknowledgedSamples}, server-held ${s.serverCapturedSamples}, ` +
        `transcribed to sample ${transcribedEnd}; ${faults.filter((f) => f.kind === 'kill').length} kill -9, ${faults.filter((f) => f.kind === 'cut').length} cuts, ` +
        `${s.reconnects} reconnects, ${s.resumes} resumes; ${cleanWords.length} words, equal to the clean run; at kills acked/final: ${JSON.stringify(faulted.log)}\n`,
    );
  }, 400_000);
});
