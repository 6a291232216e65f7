// segmentCommitMode "vad" on real speech: three read sentences separated by 1.5 s pauses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { concat, createSession, streamAndClose } from '../helpers/live.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { expectTurnsHeardOnTheirLegs } from '../helpers/turns.js';

const RATE = 16000;
const PAUSE = 1.5 * RATE;
const clips = ['librivox-0880', 'librivox-0890', 'librivox-0930'].map((id) => loadClips().find((c) => c.id === id)!);
const parts = clips.map(pcmSamples);
const audio = concat([parts[0]!, new Int16Array(PAUSE), parts[1]!, new Int16Array(PAUSE), parts[2]!, new Int16Array(RATE)]);
/** Where each clip lies in the stream. */
const placed = parts.reduce<Array<{ from: number; to: number }>>((acc, p, i) => {
  const from = i === 0 ? 0 : acc[i - 1]!.to + PAUSE;
  acc.push({ from, to: from + p.length });
  return acc;
}, []);

/** Reference speech extent of a clip: first and last 10 ms frame whose energy is within
 * 30 dB of the clip's loudest frame. */
function speechExtent(p: Int16Array): { start: number; end: number } {
  const frame = RATE / 100;
  const energies: number[] = [];
  for (let i = 0; i + frame <= p.length; i += frame) {
    let e = 0;
    for (let j = i; j < i + frame; j++) e += p[j]! * p[j]!;
    energies.push(e / frame);
  }
  const floor = Math.max(...energies) / 1000;
  const loud = energies.map((e, i) => (e >= floor ? i : -1)).filter((i) => i >= 0);
  return { start: loud[0]! * frame, end: (loud[loud.length - 1]! + 1) * frame };
}

let svc: TestService;
let acct: ProvisionedAccount;
beforeAll(async () => {
  svc = await startService();
  acct = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

describe('segmentCommitMode vad on real speech', () => {
  it('commits one segment per sentence, with boundaries in the pauses', async () => {
    const s = await createSession(svc, acct.accessKey, { segmentCommitMode: 'vad', commitSilenceMs: 500 });
    const { finals, events } = await streamAndClose(svc, acct.accessKey, s.streamUrl, audio);
    expect(events.filter((e) => e.type === 'notice' && e.code === 'OPTIONS_NOT_APPLIED')).toEqual([]);
    expect(finals.map((f) => f.trigger)).toEqual(['vad', 'vad', 'vad']);
    const report: string[] = [];
    finals.forEach((f, i) => {
      const start = Number(f.start.sample);
      const end = Number(f.end.sample);
      const ref = speechExtent(parts[i]!);
      const refStart = placed[i]!.from + ref.start;
      const refEnd = placed[i]!.from + ref.end;
      // the segment holds the whole sentence (the energy reference counts faint breath
      // before the first word as speech: 100 ms of slack)...
      expect(start).toBeLessThanOrEqual(refStart + 0.1 * RATE);
      expect(end).toBeGreaterThanOrEqual(refEnd);
      // ...and its boundaries are in the pauses around it, not in another sentence
      if (i > 0) expect(start).toBeGreaterThanOrEqual(placed[i - 1]!.to);
      if (i < finals.length - 1) expect(end).toBeLessThanOrEqual(placed[i + 1]!.from);
      // detected speech end: the commit point less the commit silence (whole 32 ms windows)
      const detectedEnd = end - Math.ceil(500 / 32) * 512;
      const errEnd = ((detectedEnd - refEnd) / RATE) * 1000;
      report.push(
        `seg ${i}: speech end error ${errEnd.toFixed(0)} ms, commit ${(((end - refEnd) / RATE) * 1000).toFixed(0)} ms after speech; "${f.text}"`,
      );
      expect(Math.abs(errEnd)).toBeLessThan(300);
      // word times (on a decoder that heard the earlier segments) lie inside their segment
      for (const w of f.words) {
        expect(Number(w.start.sample)).toBeGreaterThanOrEqual(start);
        expect(Number(w.end.sample)).toBeLessThanOrEqual(end);
      }
      expect(Number(f.words[0].start.sample)).toBeLessThan(refStart + 0.5 * RATE);
    });
    // Each segment holds its own sentence's words (the recognizer's: rawText): nearer its own
    // reference than the others'. Attribution, not accuracy: one sentence's word error rate
    // moves with the search settings, which segment it lands in does not.
    expectTurnsHeardOnTheirLegs(finals.map((f, i) => [clips[i]!.reference, f.rawText ?? f.text] as const));
    console.log(`VAD boundaries:\n${report.join('\n')}`);
  }, 120_000);

  it('works on 8 kHz mu-law too: the detector hears it resampled, segments stay in input samples', async () => {
    const { encodeMulaw } = await import('../../src/core/audio/encodings.js');
    const { StreamResampler } = await import('../../src/engine/resampler.js');
    const down = new StreamResampler(RATE, 8000);
    const narrow = concat([down.push(audio), down.flush()]);
    down.destroy();
    const s = await createSession(svc, acct.accessKey, { segmentCommitMode: 'vad', commitSilenceMs: 500, inputEncoding: 'mulaw_8000' });
    const client = await (
      await import('../helpers/stream-client.js')
    ).StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: acct.accessKey });
    await client.next('ready');
    const bytes = encodeMulaw(narrow);
    for (let at = 0; at < bytes.length; at += 320) client.audio(1, at, bytes.subarray(at, Math.min(bytes.length, at + 320)));
    client.control({ type: 'close' });
    await client.next('closed', () => true, 60_000);
    const finals = client.ofType('final');
    expect(finals.map((f) => f.trigger)).toEqual(['vad', 'vad', 'vad']);
    finals.forEach((f, i) => {
      // boundaries in the pauses, in 8 kHz samples
      if (i < 2) expect(Number(f.end.sample)).toBeLessThanOrEqual(placed[i + 1]!.from / 2);
      expect(Number(f.end.sample)).toBeGreaterThanOrEqual(placed[i]!.to / 2 - 0.2 * 8000);
    });
  }, 120_000);

  it('commitSilenceMs longer than the pauses keeps the sentences in one segment', async () => {
    const s = await createSession(svc, acct.accessKey, { segmentCommitMode: 'vad', commitSilenceMs: 5000 });
    const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, audio);
    // one segment from the first sentence to the last (committed by the length rule or the close)
    expect(finals).toHaveLength(1);
    expect(Number(finals[0]!.start.sample)).toBeLessThan(placed[0]!.to);
    expect(Number(finals[0]!.end.sample)).toBeGreaterThanOrEqual(placed[2]!.to - 0.2 * RATE);
  }, 120_000);

  it('speechDetectionThreshold 1 hears no speech: no segment, nothing recognized', async () => {
    const s = await createSession(svc, acct.accessKey, { segmentCommitMode: 'vad', speechDetectionThreshold: 1 });
    const { finals, events } = await streamAndClose(svc, acct.accessKey, s.streamUrl, audio);
    expect(finals).toEqual([]);
    expect(events.filter((e) => e.type === 'partial')).toEqual([]);
  }, 120_000);

  it('speechDetectionThreshold changes what counts as speech', async () => {
    // The same speech 40 dB down, where Silero's speech probabilities are middling: commit on
    // any 100 ms pause, so the audio kept in segments follows the detector's decisions.
    const quiet = audio.map((v) => Math.round(v / 100));
    const base = { segmentCommitMode: 'vad', commitSilenceMs: 100, minimumSilenceMs: 100, minimumSpeechMs: 100 };
    const kept = async (threshold: number) => {
      const s = await createSession(svc, acct.accessKey, { ...base, speechDetectionThreshold: threshold });
      const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, quiet);
      return finals.reduce((n, f) => n + (Number(f.end.sample) - Number(f.start.sample)), 0);
    };
    const lenient = await kept(0.3);
    const strict = await kept(0.9);
    expect(lenient).toBeGreaterThan(0);
    // a stricter threshold keeps less of the audio as speech
    expect(strict).toBeLessThan(lenient * 0.8);
  }, 120_000);

  it('minimumSilenceMs decides which pauses count: short pauses inside sentences split only when it is low', async () => {
    const segments = async (minimumSilenceMs: number) => {
      const s = await createSession(svc, acct.accessKey, { segmentCommitMode: 'vad', commitSilenceMs: 0, minimumSilenceMs });
      return (await streamAndClose(svc, acct.accessKey, s.streamUrl, audio)).finals.length;
    };
    expect(await segments(1000)).toBe(3);
    expect(await segments(60)).toBeGreaterThan(3);
  }, 120_000);

  it('a monologue without long pauses still yields finals: split at a short pause after half the bound, cut at the bound', async () => {
    const short = await startService({ maxSegmentSeconds: 4 });
    try {
      const a = await short.account(100_000n);
      const s = await createSession(short, a.accessKey, { segmentCommitMode: 'vad', commitSilenceMs: 5000 });
      const { finals } = await streamAndClose(short, a.accessKey, s.streamUrl, audio);
      expect(finals.length).toBeGreaterThanOrEqual(4);
      for (const f of finals.slice(0, -1)) {
        expect(f.trigger).toBe('bound');
        expect(Number(f.end.sample) - Number(f.start.sample)).toBeLessThanOrEqual(4 * RATE);
      }
    } finally {
      await short.stop();
    }
  }, 120_000);

  it('minimumSpeechMs longer than any sentence opens no segment', async () => {
    const s = await createSession(svc, acct.accessKey, { segmentCommitMode: 'vad', minimumSpeechMs: 6000 });
    const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, audio);
    expect(finals).toEqual([]);
  }, 120_000);

  it('a long pause inside speech: silence between segments never reaches the recognizer', async () => {
    // 20 s of silence, then a sentence: manual mode would feed the silence too
    const long = concat([new Int16Array(20 * RATE), parts[0]!]);
    const s = await createSession(svc, acct.accessKey, { segmentCommitMode: 'vad', commitSilenceMs: 500 });
    const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, long);
    expect(finals).toHaveLength(1);
    expect(Number(finals[0]!.start.sample)).toBeGreaterThan(19 * RATE);
  }, 120_000);
});
