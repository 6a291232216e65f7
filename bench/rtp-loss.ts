// RTP loss handling: the development clips sent as RTP calls (PCMU, 20 ms packets) by a
// crafted sender that drops, bursts, reorders and duplicates packets with a seeded random
// generator, into `RtpIngest` and a real service. For each condition it reports what the
// receiver counted against what the sender did, the samples on the server's timeline
// against the call's length, and the word error rate against the reference text and against
// the clean (0% loss) run.
//
// Baseline: the same surviving packets concatenated without placement (what a receiver that
// ignores RTP timestamps would send), streamed directly: its timeline is short by every lost
// packet, and its WER shows what placement by timestamp buys.
//
// Run: npx vite-node bench/rtp-loss.ts   (after npm run build, for the native addon)
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { pino } from 'pino';
import { startLocalService } from '../test/helpers/local-service.js';
import { chunks, devSetDir, loadClips, type Clip } from '../test/helpers/audio.js';
import { packetize, RtpTestSender, type PacketPlan } from '../test/helpers/rtp.js';
import { RtpIngest, type RtpSessionReport } from '../src/rtp/ingest.js';
import { buildPayloadTypeMap } from '../src/rtp/payload-types.js';
import { SessionStreamer } from '../src/client/session-streamer.js';
import { wordErrorRate } from '../src/core/wer.js';

/** WER compares the recognizer's words with the references: readableText (numerals, sentence
 * case) is formatting, so it is off here. */
const RECOGNIZER_TEXT = { readableText: false };

interface Condition {
  name: string;
  loss: number; // probability a packet is dropped
  burst: number; // packets per loss event
  reorder: number; // probability a packet is swapped with the next
  duplicate: number; // probability a packet is sent twice
}

const CONDITIONS: Condition[] = [
  { name: 'clean', loss: 0, burst: 1, reorder: 0, duplicate: 0 },
  { name: '1% loss', loss: 0.01, burst: 1, reorder: 0, duplicate: 0 },
  { name: '5% loss', loss: 0.05, burst: 1, reorder: 0, duplicate: 0 },
  { name: '10% loss', loss: 0.1, burst: 1, reorder: 0, duplicate: 0 },
  { name: '20% loss', loss: 0.2, burst: 1, reorder: 0, duplicate: 0 },
  { name: '5% loss in bursts of 3', loss: 0.05 / 3, burst: 3, reorder: 0, duplicate: 0 },
  { name: '10% reordered, 5% duplicated', loss: 0, burst: 1, reorder: 0.1, duplicate: 0.05 },
];

/** mulberry32: a small seeded generator, so every run impairs the same packets. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Plan {
  sends: PacketPlan[];
  dropped: Set<number>;
  reordered: number;
  duplicated: number;
  survivors: Buffer;
}

function impair(packets: PacketPlan[], c: Condition, random: () => number): Plan {
  const dropped = new Set<number>();
  for (let k = 1; k < packets.length - 1; k++) {
    if (random() < c.loss) for (let b = 0; b < c.burst && k + b < packets.length - 1; b++) dropped.add(k + b);
  }
  const order = packets.map((_, k) => k).filter((k) => !dropped.has(k));
  let reordered = 0;
  for (let i = 0; i + 1 < order.length; i++) {
    if (random() < c.reorder) {
      [order[i], order[i + 1]] = [order[i + 1]!, order[i]!];
      reordered++;
      i++;
    }
  }
  const sends: PacketPlan[] = [];
  let duplicated = 0;
  for (const k of order) {
    sends.push(packets[k]!);
    if (random() < c.duplicate) {
      sends.push(packets[k]!);
      duplicated++;
    }
  }
  const survivors = Buffer.concat(packets.filter((_, k) => !dropped.has(k)).map((p) => Buffer.from(p.payload)));
  return { sends, dropped, reordered, duplicated, survivors };
}

const logger = pino({ level: process.env.SCRIBED_BENCH_LOG ?? 'silent' });

async function main(): Promise<void> {
  const dir = devSetDir();
  const clips = loadClips(dir);
  const svc = await startLocalService({ maxDecoders: 2 });
  const { accessKey } = await svc.account(10_000_000n);
  const ingest = new RtpIngest({
    host: '127.0.0.1',
    port: 0,
    rtcpPort: 0,
    payloadTypes: buildPayloadTypeMap([]),
    idleTimeoutMs: 2000,
    jitter: { concealMs: Number(process.env.CONCEAL_MS ?? 0) },
    url: svc.baseUrl,
    accessKey,
    logger,
    sessionOptions: RECOGNIZER_TEXT,
  });
  const address = await ingest.start();
  const totalSec = clips.reduce((s, c) => s + c.mulaw8k.length / 8000, 0);
  console.log(
    `rtp-loss: ${clips.length} clips from ${dir}, ${totalSec.toFixed(1)} s, PCMU 20 ms packets sent at 4x real time; node ${process.version}, ${os.cpus()[0]?.model}`,
  );

  async function sendCall(clip: Clip, plan: Plan, ssrc: number): Promise<RtpSessionReport> {
    const sender = await RtpTestSender.open(ssrc);
    const done = new Promise<RtpSessionReport>((resolve) => {
      const onDone = (r: RtpSessionReport) => {
        if (r.ssrc !== ssrc) return;
        ingest.off('done', onDone);
        resolve(r);
      };
      ingest.on('done', onDone);
    });
    for (const p of plan.sends) {
      await sender.send(p, address.port);
      await new Promise((r) => setTimeout(r, 5));
    }
    await sender.bye(address.rtcpPort!);
    const report = await done;
    sender.close();
    void clip;
    return report;
  }

  async function directText(audio: Buffer): Promise<{ text: string; captured: number }> {
    const s = new SessionStreamer({
      url: svc.baseUrl,
      accessKey,
      encoding: 'mulaw_8000',
      streamId: randomUUID(),
      bufferSamples: 400_000,
      logger,
      sessionOptions: RECOGNIZER_TEXT,
    });
    await s.start();
    for (const c of chunks(audio, 1, 160)) await s.write(c);
    const summary = await s.end();
    return { text: summary.finals.map((f) => f.text).join(' '), captured: summary.serverCapturedSamples ?? 0 };
  }

  const cleanText = new Map<string, string>();
  const rows: string[] = [];
  for (const [ci, c] of CONDITIONS.entries()) {
    const random = rng(0x5c1bed + ci);
    let sentPkts = 0;
    let droppedPkts = 0;
    let lostCounted = 0;
    let reorderedSent = 0;
    let reorderedCounted = 0;
    let dupSent = 0;
    let dupCounted = 0;
    let expectedSamples = 0;
    let placedSamples = 0;
    let silenceSamples = 0;
    let naiveSamples = 0;
    let refWords = 0;
    let errVsRef = 0;
    let errVsClean = 0;
    let cleanWords = 0;
    let naiveErrVsRef = 0;
    for (const [i, clip] of clips.entries()) {
      const packets = packetize(clip.mulaw8k, { payloadType: 0, seq0: Math.floor(random() * 65536), ts0: Math.floor(random() * 2 ** 32) });
      const plan = impair(packets, c, random);
      const report = await sendCall(clip, plan, 0x10000 * (ci + 1) + i);
      if (report.error) throw new Error(`${c.name}/${clip.id}: ${report.error}`);
      const text = report.summary!.finals.map((f) => f.text).join(' ');
      if (c.name === 'clean') cleanText.set(clip.id, text);
      sentPkts += packets.length;
      droppedPkts += plan.dropped.size;
      lostCounted += report.end.stats.lost;
      reorderedSent += plan.reordered;
      reorderedCounted += report.end.stats.reordered;
      dupSent += plan.duplicated;
      dupCounted += report.end.stats.duplicate;
      expectedSamples += clip.mulaw8k.length;
      placedSamples += report.summary!.serverCapturedSamples ?? 0;
      silenceSamples += report.end.stats.silenceSamples;
      const vsRef = wordErrorRate(clip.reference, text);
      refWords += vsRef.refWords;
      errVsRef += vsRef.substitutions + vsRef.deletions + vsRef.insertions;
      const vsClean = wordErrorRate(cleanText.get(clip.id)!, text);
      cleanWords += vsClean.refWords;
      errVsClean += vsClean.substitutions + vsClean.deletions + vsClean.insertions;
      if (plan.dropped.size > 0) {
        const naive = await directText(plan.survivors);
        naiveSamples += naive.captured;
        const n = wordErrorRate(clip.reference, naive.text);
        naiveErrVsRef += n.substitutions + n.deletions + n.insertions;
      } else {
        naiveSamples += clip.mulaw8k.length;
        naiveErrVsRef += vsRef.substitutions + vsRef.deletions + vsRef.insertions;
      }
    }
    const pct = (n: number, d: number) => `${((100 * n) / Math.max(1, d)).toFixed(1)}%`;
    rows.push(
      [
        c.name.padEnd(29),
        `dropped ${String(droppedPkts).padStart(3)}/${sentPkts} lost counted ${String(lostCounted).padStart(3)}`,
        `reord ${reorderedSent}/${reorderedCounted} dup ${dupSent}/${dupCounted}`,
        `samples ${placedSamples}/${expectedSamples} (silence ${(silenceSamples / 8000).toFixed(2)} s)`,
        `WER ref ${pct(errVsRef, refWords)} vs clean ${pct(errVsClean, cleanWords)}`,
        `| concatenated: samples ${naiveSamples} WER ref ${pct(naiveErrVsRef, refWords)}`,
      ].join('  '),
    );
    console.log(rows.at(-1));
  }
  await ingest.stop();
  await svc.stop();
}

await main();
