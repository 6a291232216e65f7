// Ingest overhead: how fast a real server takes audio over the socket (frame decode, cursor,
// billing, store progress, acks, worker hand-off, recognition), against feeding the same
// audio straight into a recognizer stream from the same engine in the same process (the
// baseline). Both run in this process on this machine now, so the ratio is what to read.
//
// Run: npx vite-node bench/ingest.ts   (after npm run build, for the native addon)
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { startService } from '../test/helpers/service.js';
import { chunks, loadClips } from '../test/helpers/audio.js';
import { StreamClient } from '../test/helpers/stream-client.js';
import { decodeToPcm16 } from '../src/core/audio/encodings.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

export async function benchIngest(): Promise<void> {
  const clips = loadClips();
  const svc = await startService({ maxDecoders: 1 });
  const account = await svc.account(1_000_000n);
  const audioSec = clips.reduce((s, c) => s + c.mulaw8k.length / 8000, 0);

  async function viaSocket(): Promise<number> {
    const t0 = performance.now();
    for (const clip of clips) {
      const created = (await (
        await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions`, {
          method: 'POST',
          headers: { accessKey: account.accessKey, 'Idempotency-Key': `bench-${randomUUID()}`, 'content-type': 'application/json' },
          body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
        })
      ).json()) as any;
      const c = await StreamClient.connect(`${svc.wsBase}${created.data.streamUrl}`, { accessKey: account.accessKey });
      await c.next('ready');
      let off = 0;
      for (const f of chunks(clip.mulaw8k, 1, 160)) {
        c.audio(1, off, f);
        off += f.length;
      }
      c.control({ type: 'close' });
      await c.next('closed', () => true, 120_000);
    }
    return (performance.now() - t0) / 1000;
  }

  async function direct(): Promise<number> {
    const t0 = performance.now();
    for (const clip of clips) {
      const stream = await svc.service.engine.open({ inputRate: 8000, profile: 'telephony' });
      for (const f of chunks(clip.mulaw8k, 1, 160)) await stream.accept(decodeToPcm16('mulaw_8000', f));
      await stream.finish();
      await stream.release();
    }
    return (performance.now() - t0) / 1000;
  }

  await direct(); // warm the decoder and the JIT
  const socketTimes: number[] = [];
  const directTimes: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    directTimes.push(await direct());
    socketTimes.push(await viaSocket());
  }
  await svc.stop();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const s = median(socketTimes);
  const d = median(directTimes);
  console.log(`ingest: ${clips.length} clips, ${audioSec.toFixed(1)} s of mu-law 8 kHz audio, ${ROUNDS} rounds, node ${process.version}, ${os.cpus()[0]?.model}`);
  console.log(`  baseline (engine stream direct): ${d.toFixed(3)} s wall = ${(audioSec / d).toFixed(1)}x real time`);
  console.log(`  through the server (socket)    : ${s.toFixed(3)} s wall = ${(audioSec / s).toFixed(1)}x real time`);
  console.log(`  ratio server/baseline          : ${(s / d).toFixed(3)} (1.000 = no service overhead)`);
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('bench/ingest.ts')) {
  await benchIngest();
}
