// Memory per decoder (issue 13): resident memory of one process holding N telephony decoders.
//
// Two ways, each in a fresh child process so one does not inherit the other's heap:
//   direct  createPocketsphinx() N times on the main thread (native memory only);
//   engine  createEngine({ maxDecoders: N }) and N open telephony streams, on the pool's
//           decoder threads (one per core, SCRIBED_DECODER_THREADS), as the service runs them
//           (adds each worker thread's V8 heap, once per thread).
// Every decoder first decodes one 8 kHz mu-law dev clip (search buffers and the telephony
// resampler grow on first use), then VmRSS is read. "Per additional decoder" is
// (RSS(N) - RSS(1)) / (N - 1): the first decoder also pays the process-wide shared models.
// The addon's counters (shared model loads) are printed when it has them.
//
// Run: npx tsx bench/decoder-memory.ts            (BENCH_N=1,2,4,8 BENCH_MODES=direct,engine)
//      SCRIBED_POCKETSPHINX_ADDON=/path/to.node to measure another build of the addon.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createPocketsphinx, pocketsphinxSharing } from '../src/engine/backends/pocketsphinx.js';
import { createEngine } from '../src/engine/pool.js';
import { devSetDir, loadClips, mulawSamples } from '../test/helpers/audio.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const ASSETS = path.join(ROOT, 'models', 'telephony');
const NS = (process.env.BENCH_N ?? '1,2,4,8').split(',').map(Number);
const MODES = (process.env.BENCH_MODES ?? 'direct,engine').split(',');

function rssKiB(): number {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}

function stats(): Record<string, number> | null {
  return pocketsphinxSharing() as Record<string, number> | null;
}

async function child(mode: string, n: number): Promise<void> {
  const clip = loadClips(devSetDir())[0]!;
  const mulaw = mulawSamples(clip);
  const before = rssKiB();
  if (mode === 'direct') {
    // The engine rate is 16 kHz: repeat each 8 kHz sample (good enough to exercise the search).
    const pcm16 = new Int16Array(mulaw.length * 2);
    for (let i = 0; i < mulaw.length; i++) pcm16[2 * i] = pcm16[2 * i + 1] = mulaw[i]!;
    const ds = [];
    for (let i = 0; i < n; i++) {
      const d = createPocketsphinx({ engine: 'pocketsphinx', profile: 'telephony', assetsDir: ASSETS });
      for (let at = 0; at < pcm16.length; at += 320) d.process(pcm16.subarray(at, at + 320));
      d.endUtterance();
      ds.push(d);
    }
    global.gc?.();
    process.stdout.write(JSON.stringify({ mode, n, rssKiB: rssKiB(), baseKiB: before, stats: stats() }) + '\n');
    for (const d of ds) d.destroy();
    return;
  }
  const engine = createEngine({ engine: 'pocketsphinx', maxDecoders: n + 1, assetsDir: ASSETS });
  await engine.start();
  const streams = [];
  for (let i = 0; i < n; i++) streams.push(await engine.open({ inputRate: 8000, profile: 'telephony' }));
  await Promise.all(
    streams.map(async (s) => {
      for (let at = 0; at < mulaw.length; at += 160) await s.accept(mulaw.subarray(at, at + 160));
      await s.finish();
    }),
  );
  // engine.start() spawns a wideband decoder besides the N telephony ones (maxDecoders N + 1
  // keeps it rather than recycling it): count it.
  const decoders = n + 1;
  process.stdout.write(JSON.stringify({ mode, n, decoders, rssKiB: rssKiB(), baseKiB: before, stats: stats() }) + '\n');
  for (const s of streams) await s.release();
  await engine.close();
}

async function main(): Promise<void> {
  if (process.env.DECODER_MEMORY_CHILD) {
    const [mode, n] = process.env.DECODER_MEMORY_CHILD.split(':');
    await child(mode!, Number(n));
    return;
  }
  console.log(`decoder memory: dev set ${devSetDir()}, addon ${process.env.SCRIBED_POCKETSPHINX_ADDON ?? '(build/Release)'}`);
  for (const mode of MODES) {
    const rows: Array<{ n: number; decoders: number; rss: number; stats: Record<string, number> | null }> = [];
    for (const n of NS) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', import.meta.filename], {
        env: { ...process.env, DECODER_MEMORY_CHILD: `${mode}:${n}` },
        encoding: 'utf8',
        maxBuffer: 16 << 20,
      });
      const line = r.stdout.trim().split('\n').pop() ?? '';
      if (r.status !== 0 || !line.startsWith('{')) throw new Error(`child ${mode}:${n} failed: ${r.stderr}`);
      const j = JSON.parse(line) as { n: number; decoders?: number; rssKiB: number; stats: Record<string, number> | null };
      rows.push({ n, decoders: j.decoders ?? n, rss: j.rssKiB / 1024, stats: j.stats });
    }
    console.log(
      `\n${mode}: ${mode === 'engine' ? 'worker threads (N telephony streams + the wideband decoder start() makes)' : 'decoders on the main thread'}`,
    );
    console.log('N  decoders  RSS MiB  per additional decoder MiB  addon stats');
    const first = rows[0]!;
    for (const r of rows) {
      const per = r.decoders > first.decoders ? (r.rss - first.rss) / (r.decoders - first.decoders) : Number.NaN;
      console.log(
        `${String(r.n).padEnd(3)}${String(r.decoders).padEnd(10)}${r.rss.toFixed(0).padStart(7)}  ${Number.isNaN(per) ? '-'.padStart(26) : per.toFixed(1).padStart(26)}  ${r.stats ? JSON.stringify(r.stats) : ''}`,
      );
    }
  }
}

await main();
