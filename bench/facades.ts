// The streaming facades against the native stream socket, in one run on one service.
//
// CPU: the same mu-law clips (back to back, unpaced, 20 ms messages) over the native socket
// (16-byte framed audio), AssemblyAI's /v3/ws (raw binary audio) and OpenAI's Realtime socket
// (base64 JSON appends), with the same native session options (mulaw_8000, vad commit mode,
// the native text defaults: what AssemblyAI's format_turns=true and OpenAI's defaults map to),
// through plain `ws` clients so the clients cost alike. Rounds alternate the order so load
// drifts hit each; each stream ends as its API ends one (native close -> closed; Terminate ->
// Termination; OpenAI commit -> its answer, then the socket closed). CPU is this process's
// (process.cpuUsage: the server's main thread and its recognizer workers, plus the clients),
// per audio second; printed with each facade's ratio to the native socket.
//
// Latency: each clip paced at real time (20 ms messages) over the native socket, Deepgram's
// live socket (interim_results), OpenAI's Realtime socket (server VAD) and AssemblyAI's, the
// four at once (the service has a recognizer for each); from the frame holding the first word
// (its start, from the native finals of the same clip) to the first partial text after it:
// native `partial`, Deepgram interim `Results`, OpenAI `...input_audio_transcription.delta`,
// AssemblyAI partial `Turn` with words. p50/p95 over every clip and round.
//
// Run: npx vite-node bench/facades.ts   (BENCH_ROUNDS, default 2 CPU rounds and 3 latency rounds)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import WebSocket from 'ws';
import { loadClips } from '../test/helpers/audio.js';
import { encodeAudioFrame } from '../src/core/frame.js';
import { createService } from '../src/service.js';
import { provisionAccount } from '../src/accounts/provision.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const LATENCY_ROUNDS = Number(process.env.BENCH_LATENCY_ROUNDS ?? 3);
const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const clips = loadClips();
const audio = Buffer.concat(clips.map((c) => c.mulaw8k));
const FRAME = 160; // 20 ms of 8 kHz mu-law

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-bench-facades-'));
const service = await createService({ maxDecoders: 4, host: '127.0.0.1', port: 0, dataDir, logger: pino({ level: 'silent' }) });
const port = new URL(await service.listen()).port;
const base = `http://127.0.0.1:${port}`;
const wsBase = `ws://127.0.0.1:${port}`;
const { accessKey } = await provisionAccount(service.store, 'bench', 100_000_000n);
// vite-node ends the run when its loop has no ref'd timer between sockets: hold it open.
const hold = setInterval(() => undefined, 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Msg = Record<string, any>;
/** A socket's messages, awaited by predicate. */
function connect(url: string, headers: Record<string, string>) {
  const ws = new WebSocket(url, { headers });
  const seen: { m: Msg; at: number }[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (d) => {
    seen.push({ m: JSON.parse(d.toString()) as Msg, at: performance.now() });
    waiters.splice(0).forEach((w) => w());
  });
  const until = async (pred: (m: Msg) => boolean): Promise<Msg> => {
    for (;;) {
      const hit = seen.find((s) => pred(s.m));
      if (hit) return hit.m;
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  const open = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, seen, until, open };
}

interface Stream {
  /** Ready for audio. */
  start(): Promise<void>;
  send(chunk: Buffer): void;
  /** Ends the stream as its API does; resolves when the server is done with it. */
  end(): Promise<void>;
  /** Times of partial text, and the native finals' first word start (ms), if any. */
  partials(): number[];
  firstWordMs(): number | null;
  /** Words of the final transcript (the same work done by each: checked equal). */
  words(): number;
}
const count = (texts: string[]) =>
  texts
    .join(' ')
    .split(/\s+/)
    .filter((w) => w !== '').length;

function nativeStream(): Stream {
  let c: ReturnType<typeof connect>;
  let epoch = 0;
  let offset = 0;
  return {
    async start() {
      const res = await fetch(`${base}${SESSIONS}`, {
        method: 'POST',
        headers: { accessKey, 'content-type': 'application/json', 'Idempotency-Key': `bench-${Math.random()}` },
        body: JSON.stringify({ title: 'bench native', options: { inputEncoding: 'mulaw_8000', segmentCommitMode: 'vad' } }),
      });
      const { data } = (await res.json()) as { data: { streamUrl: string; epoch: number } };
      epoch = data.epoch;
      c = connect(`${wsBase}${data.streamUrl}`, { accessKey });
      await c.open;
    },
    send(chunk) {
      c.ws.send(encodeAudioFrame({ epoch, sampleOffset: offset, payload: chunk }));
      offset += chunk.length;
    },
    async end() {
      c.ws.send(JSON.stringify({ type: 'close' }));
      await c.until((m) => m.type === 'closed');
      c.ws.close();
    },
    partials: () => c.seen.filter((s) => s.m.type === 'partial' && s.m.text.trim() !== '').map((s) => s.at),
    words: () => count(c.seen.filter((s) => s.m.type === 'final').map((s) => s.m.text as string)),
    firstWordMs: () => (c.seen.find((s) => s.m.type === 'final' && s.m.words?.length > 0)?.m.words[0].start.ms as number) ?? null,
  };
}

function assemblyAiStream(): Stream {
  let c: ReturnType<typeof connect>;
  return {
    async start() {
      c = connect(`${wsBase}/v3/ws?sample_rate=8000&encoding=pcm_mulaw&format_turns=true`, { Authorization: accessKey });
      await c.open;
      await c.until((m) => m.type === 'Begin');
    },
    send: (chunk) => c.ws.send(chunk),
    async end() {
      c.ws.send(JSON.stringify({ type: 'Terminate' }));
      await c.until((m) => m.type === 'Termination');
      c.ws.close();
    },
    partials: () => c.seen.filter((s) => s.m.type === 'Turn' && !s.m.end_of_turn && s.m.words.length > 0).map((s) => s.at),
    words: () => count(c.seen.filter((s) => s.m.type === 'Turn' && s.m.turn_is_formatted).map((s) => s.m.transcript as string)),
    firstWordMs: () => null,
  };
}

function openAiStream(): Stream {
  let c: ReturnType<typeof connect>;
  return {
    async start() {
      c = connect(`${wsBase}/v1/realtime?intent=transcription`, { Authorization: `Bearer ${accessKey}` });
      await c.open;
      await c.until((m) => m.type === 'session.created');
      c.ws.send(
        JSON.stringify({
          type: 'session.update',
          session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcmu' }, turn_detection: { type: 'server_vad' } } } },
        }),
      );
      await c.until((m) => m.type === 'session.updated');
    },
    send: (chunk) => c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: chunk.toString('base64') })),
    async end() {
      // The commit is answered after every append before it (the session's queue keeps the
      // order): an empty-buffer error, or the open turn's completed. Neither says the earlier
      // turns are done (unpaced, a loaded recognizer still completes them after the commit is
      // answered), so the stream is done once 15 s pass with no message after the answer (3 s,
      // and stopping at the empty-buffer error, closed the socket before the last turns); the
      // final word count printed checks that every turn came.
      const before = c.seen.length;
      c.ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
      const answered = (s: { m: Msg }) =>
        (s.m.type === 'error' && s.m.error.code === 'input_audio_buffer_commit_empty') ||
        s.m.type === 'conversation.item.input_audio_transcription.completed';
      while (!c.seen.slice(before).some(answered) || performance.now() - c.seen[c.seen.length - 1]!.at <= 15_000) await sleep(50);
      c.ws.close();
      await sleep(200);
    },
    partials: () => c.seen.filter((s) => s.m.type === 'conversation.item.input_audio_transcription.delta').map((s) => s.at),
    words: () =>
      count(
        c.seen.filter((s) => s.m.type === 'conversation.item.input_audio_transcription.completed').map((s) => s.m.transcript as string),
      ),
    firstWordMs: () => null,
  };
}

function deepgramStream(): Stream {
  let c: ReturnType<typeof connect>;
  return {
    async start() {
      c = connect(`${wsBase}/v1/listen?encoding=mulaw&sample_rate=8000&interim_results=true`, { Authorization: `Token ${accessKey}` });
      await c.open;
    },
    send: (chunk) => c.ws.send(chunk),
    async end() {
      c.ws.send(JSON.stringify({ type: 'CloseStream' }));
      await c.until((m) => m.type === 'Metadata');
      c.ws.close();
    },
    partials: () => c.seen.filter((s) => s.m.type === 'Results' && !s.m.is_final).map((s) => s.at),
    words: () =>
      count(c.seen.filter((s) => s.m.type === 'Results' && s.m.is_final).map((s) => s.m.channel.alternatives[0].transcript as string)),
    firstWordMs: () => null,
  };
}

const finalWords: Record<string, number[]> = {};
async function unpaced(make: () => Stream, kind = ''): Promise<number> {
  const c0 = process.cpuUsage();
  const s = make();
  await s.start();
  for (let at = 0; at < audio.length; at += FRAME) s.send(audio.subarray(at, at + FRAME));
  await s.end();
  const c = process.cpuUsage(c0);
  (finalWords[kind] ??= []).push(s.words());
  return (c.user + c.system) / 1e6;
}

// Warm-up (engine, JIT, store), and each clip's first word start from the native finals.
const firstWord = new Map<string, number>();
for (const clip of clips) {
  const s = nativeStream();
  await s.start();
  for (let at = 0; at < clip.mulaw8k.length; at += FRAME) s.send(clip.mulaw8k.subarray(at, at + FRAME));
  await s.end();
  const ms = s.firstWordMs();
  if (ms !== null) firstWord.set(clip.id, ms);
}
await unpaced(assemblyAiStream);
await unpaced(openAiStream);
console.error(`warm-up done; first words at ${[...firstWord.values()].join(', ')} ms`);

const kinds = { native: nativeStream, assemblyai: assemblyAiStream, openai: openAiStream } as const;
const cpu = { native: 0, assemblyai: 0, openai: 0 };
const order = Object.keys(kinds) as (keyof typeof kinds)[];
for (let r = 0; r < ROUNDS; r++) {
  for (const k of r % 2 === 0 ? order : [...order].reverse()) cpu[k] += await unpaced(kinds[k], k);
}
const audioSec = (ROUNDS * audio.length) / 8000;
console.error(`CPU rounds done: ${JSON.stringify(cpu)}; final words per stream ${JSON.stringify(finalWords)}`);

// Latency: the four APIs at once, each clip paced at real time.
const lat: Record<string, number[]> = { native: [], deepgram: [], openai: [], assemblyai: [] };
const paced = { native: nativeStream, deepgram: deepgramStream, openai: openAiStream, assemblyai: assemblyAiStream };
for (let r = 0; r < LATENCY_ROUNDS; r++) {
  for (const clip of clips) {
    const wordMs = firstWord.get(clip.id);
    const streams = Object.entries(paced).map(([k, make]) => [k, make()] as const);
    await Promise.all(streams.map(([, s]) => s.start()));
    const sentAt: number[] = [];
    const t0 = performance.now();
    for (let i = 0, at = 0; at < clip.mulaw8k.length; i++, at += FRAME) {
      const wait = t0 + i * 20 - performance.now();
      if (wait > 0) await sleep(wait);
      sentAt.push(performance.now());
      for (const [, s] of streams) s.send(clip.mulaw8k.subarray(at, at + FRAME));
    }
    await Promise.all(streams.map(([, s]) => s.end()));
    console.error(`latency round ${r + 1}, ${clip.id} done`);
    if (wordMs === undefined) continue;
    const speechAt = sentAt[Math.min(sentAt.length - 1, Math.floor((wordMs * 8) / FRAME))]!;
    for (const [k, s] of streams) {
      const first = s.partials().find((t) => t >= speechAt);
      if (first !== undefined) lat[k]!.push(first - speechAt);
    }
  }
}
await service.stop();
clearInterval(hold);
fs.rmSync(dataDir, { recursive: true, force: true });

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};
console.log(
  `facades: node ${process.version}, ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; CPU: ${ROUNDS} rounds x ${(audio.length / 8000).toFixed(1)} s of mu-law per socket, unpaced`,
);
for (const k of order)
  console.log(
    `${k.padEnd(10)} CPU ${cpu[k].toFixed(2)} s for ${audioSec.toFixed(1)} s of audio: ${(cpu[k] / audioSec).toFixed(4)} CPU s per audio s${
      k === 'native' ? '' : `, ratio to native ${(cpu[k] / cpu.native).toFixed(3)}x`
    }`,
  );
console.log(`final words per stream (the same audio recognized by each): ${JSON.stringify(finalWords)}`);
for (const [k, xs] of Object.entries(lat))
  console.log(
    `${k.padEnd(10)} first speech frame -> first partial, paced, 4 sockets at once, ${xs.length} streams: p50 ${pct(xs, 50).toFixed(0)} ms, p95 ${pct(xs, 95).toFixed(0)} ms`,
  );
