// Ingest overhead: how fast a real server takes audio over the socket (frame decode, cursor,
// billing, store progress, acks, worker hand-off, recognition), against feeding the same
// audio straight into a recognizer stream from the same engine in the same process (the
// baseline). Both run in this process on this machine now, so the ratio is what to read.
//
// A/B: BENCH_BEFORE_DIST=/path/to/another/checkout/dist measures that build as well, in the
// same run (rounds alternating), both builds then from their dist/ (npm run build:ts in each),
// and prints the ratios this/before.
//
// Run: npx vite-node bench/ingest.ts   (after npm run build, for the native addon)
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { startLocalService, tempDir } from '../test/helpers/local-service.js';
import { chunks, loadClips } from '../test/helpers/audio.js';
import { StreamClient } from '../test/helpers/stream-client.js';
import { decodeToPcm16 } from '../src/core/audio/encodings.js';
import type { Service } from '../src/service.js';
import type { ProvisionedAccount } from '../src/accounts/provision.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const BEFORE_DIST = process.env.BENCH_BEFORE_DIST;

/** A service to measure: this checkout's (from source, or its dist/ in an A/B), or another's. */
interface Build {
  label: 'this' | 'before';
  service: Service;
  baseUrl: string;
  wsBase: string;
  account: ProvisionedAccount;
  stop(): Promise<void>;
}

async function fromSource(): Promise<Build> {
  const svc = await startLocalService({ maxDecoders: 1 });
  return {
    label: 'this',
    service: svc.service,
    baseUrl: svc.baseUrl,
    wsBase: svc.wsBase,
    account: await svc.account(1_000_000n),
    stop: svc.stop,
  };
}

/** A build's dist/ (its service and account provisioning), started as startLocalService does. */
async function fromDist(label: Build['label'], dist: string): Promise<Build> {
  const { createService } = (await import(path.join(dist, 'service.js'))) as typeof import('../src/service.js');
  const { provisionAccount } = (await import(path.join(dist, 'accounts', 'provision.js'))) as typeof import('../src/accounts/provision.js');
  const service = await createService({
    maxDecoders: 1,
    host: '127.0.0.1',
    port: 0,
    dataDir: tempDir('scribed-bench-ingest-'),
    logger: pino({ level: 'silent' }),
  });
  const port = new URL(await service.listen()).port;
  const account = await provisionAccount(service.store, 'bench', 1_000_000n);
  return { label, service, baseUrl: `http://127.0.0.1:${port}`, wsBase: `ws://127.0.0.1:${port}`, account, stop: () => service.stop() };
}

export async function benchIngest(): Promise<void> {
  const clips = loadClips();
  const audioSec = clips.reduce((s, c) => s + c.mulaw8k.length / 8000, 0);
  const builds = BEFORE_DIST
    ? [await fromDist('before', path.resolve(BEFORE_DIST)), await fromDist('this', path.resolve(import.meta.dirname, '..', 'dist'))]
    : [await fromSource()];

  async function viaSocket(b: Build): Promise<number> {
    const t0 = performance.now();
    for (const clip of clips) {
      const created = (await (
        await fetch(`${b.baseUrl}/sound_clone/api/v1/stt/realtime/sessions`, {
          method: 'POST',
          headers: { accessKey: b.account.accessKey, 'Idempotency-Key': `bench-${randomUUID()}`, 'content-type': 'application/json' },
          body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
        })
      ).json()) as any;
      const c = await StreamClient.connect(`${b.wsBase}${created.data.streamUrl}`, { accessKey: b.account.accessKey });
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

  async function direct(b: Build): Promise<number> {
    const t0 = performance.now();
    for (const clip of clips) {
      const stream = await b.service.engine.open({ inputRate: 8000, profile: 'telephony' });
      for (const f of chunks(clip.mulaw8k, 1, 160)) await stream.accept(decodeToPcm16('mulaw_8000', f));
      await stream.finish();
      await stream.release();
    }
    return (performance.now() - t0) / 1000;
  }

  for (const b of builds) await direct(b); // warm the decoder and the JIT
  const times = new Map(builds.map((b) => [b.label, { socket: [] as number[], direct: [] as number[] }]));
  for (let i = 0; i < ROUNDS; i++) {
    for (const b of i % 2 === 0 ? builds : [...builds].reverse()) {
      times.get(b.label)!.direct.push(await direct(b));
      times.get(b.label)!.socket.push(await viaSocket(b));
    }
  }
  for (const b of builds) await b.stop();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `ingest: ${clips.length} clips, ${audioSec.toFixed(1)} s of mu-law 8 kHz audio, ${ROUNDS} rounds, node ${process.version}, ${os.cpus()[0]?.model}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const ratios = new Map<string, { s: number; d: number }>();
  for (const b of builds) {
    const t = times.get(b.label)!;
    const s = median(t.socket);
    const d = median(t.direct);
    ratios.set(b.label, { s, d });
    if (builds.length > 1) console.log(`${b.label}${b.label === 'before' ? ` (${BEFORE_DIST})` : ''}:`);
    console.log(`  baseline (engine stream direct): ${d.toFixed(3)} s wall = ${(audioSec / d).toFixed(1)}x real time`);
    console.log(`  through the server (socket)    : ${s.toFixed(3)} s wall = ${(audioSec / s).toFixed(1)}x real time`);
    console.log(`  ratio server/baseline          : ${(s / d).toFixed(3)} (1.000 = no service overhead)`);
  }
  const before = ratios.get('before');
  const after = ratios.get('this')!;
  if (before) {
    console.log(
      `this/before: socket ${(after.s / before.s).toFixed(3)}, direct ${(after.d / before.d).toFixed(3)}, server/baseline ratio ${(after.s / after.d / (before.s / before.d)).toFixed(3)}`,
    );
  }
}

// Run on import, as the other benches (bench/run.ts imports it among them): vite-node keeps
// no script path in process.argv, so a "run when it is the entry" test never held there. A
// build from before the checkpointer's fix (src/store/sql/wal-checkpointer.ts) waits in
// stop() on an unref'd thread: a ref'd timer keeps the process alive until the end.
const hold = setInterval(() => undefined, 1000);
await benchIngest();
clearInterval(hold);
