// The batch runner against a real store and a real engine (no HTTP): failure handling,
// refunds, audio left behind, what a job carries from one segment to the next, and claims:
// a job taken over from a node that stopped renewing, which can then neither store, complete
// nor refund it. On the postgres project the audio is in the store (DatabaseBatchAudioStore).
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionAccount } from '../../src/accounts/provision.js';
import { validateBatchRequest } from '../../src/batch/request.js';
import { BatchRunner, LEFTOVER_GRACE_MS, type BatchRunnerDeps } from '../../src/batch/runner.js';
import { batchAudioStore, type BatchAudioStore } from '../../src/batch/audio-store.js';
import { planSegments } from '../../src/batch/segmenter.js';
import { charactersDue } from '../../src/core/billing.js';
import { newId } from '../../src/core/ids.js';
import { createEngine, kStall } from '../../src/engine/pool.js';
import type { Engine, RecognitionStream, StreamRequest } from '../../src/engine/types.js';
import { createMetrics } from '../../src/obs/metrics.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/store.js';
import { loadClips } from '../helpers/audio.js';
import { storeSettingsFor, tempDir, testStore } from '../helpers/service.js';

const clips = loadClips();
const ENGLISH = { languages: ['en'], detectsLanguage: false };
const log = pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' });

let engine: Engine;
beforeAll(async () => {
  engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 2 });
  await engine.start();
}, 60_000);
afterAll(async () => {
  await engine?.close();
});

interface Bench {
  store: Store;
  dir: string;
  /** Where the jobs' audio is: files in `dir` (sqlite project) or the store (postgres). */
  audio: BatchAudioStore;
  accountId: string;
  runner(overrides?: Partial<BatchRunnerDeps>): BatchRunner;
  /** A QUEUED job over `pcm` (s16le bytes at `rate`), charged as the route would. */
  queue(pcm: Buffer, rate?: number, options?: Record<string, unknown>): Promise<string>;
  balance(): Promise<bigint>;
}

async function bench(characters = 10_000n): Promise<Bench> {
  const dataDir = tempDir();
  const dir = path.join(dataDir, 'batch');
  fs.mkdirSync(dir, { recursive: true });
  const store = await openStore(await storeSettingsFor(dataDir));
  const { accountId } = await provisionAccount(store, 'runner', characters);
  const audio = batchAudioStore({ shared: testStore() === 'postgres', store, dir });
  return {
    store,
    dir,
    audio,
    accountId,
    runner: (overrides = {}) =>
      new BatchRunner({
        store,
        engine,
        metrics: createMetrics({ defaults: false }),
        log,
        dir,
        audio,
        maxDecoders: 1,
        maxSegmentSeconds: 30,
        ...overrides,
      }),
    async queue(pcm, rate = 16_000, options = {}) {
      const now = new Date();
      const id = newId('stt', now);
      const audioFile = `${id}.s16le`;
      const tmp = path.join(dir, `decode-${id}.s16le`);
      fs.writeFileSync(tmp, pcm);
      await audio.write(audioFile, tmp);
      const samples = BigInt(pcm.length / 2);
      const valid = validateBatchRequest({ options: JSON.stringify(options) }, rate, ENGLISH);
      const outcome = await store.createBatchJob({
        job: {
          transcriptionId: id,
          accountId,
          options: valid.effectiveOptions as unknown as Record<string, unknown>,
          notices: valid.notices,
          audioFile,
          charactersCharged: charactersDue(samples, rate),
          source: null,
          createdAt: now.toISOString(),
        },
        title: 'runner test',
        languageHint: null,
        sampleRateHz: rate,
        audioSamples: samples,
        idempotency: null,
      });
      expect(outcome.kind).toBe('created');
      return id;
    },
    balance: async () => (await store.getAccount(accountId))!.characters,
  };
}

/** The real engine, but every decoder it hands out hangs (a stuck native call). */
function hangingEngine(real: Engine): Engine {
  return {
    info: real.info,
    start: () => real.start(),
    ready: () => real.ready(),
    close: () => real.close(),
    async open(req: StreamRequest): Promise<RecognitionStream> {
      const stream = (await real.open(req)) as RecognitionStream & { [kStall](ms: number): Promise<void> };
      void stream[kStall](120_000).catch(() => undefined);
      return stream;
    },
  };
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);
}

describe('batch runner: a hung decoder', () => {
  it('is detected by the heartbeat: the job fails, is refunded, and stop() returns', async () => {
    const b = await bench();
    const before = await b.balance();
    const id = await b.queue(clips.find((c) => c.id === 'librivox-0880')!.pcm16k);
    const charged = before - (await b.balance());
    expect(charged).toBe(3n);
    const runner = b.runner({ engine: hangingEngine(engine), heartbeatIntervalMs: 1000 });
    await runner.start();
    await within(runner.idle(), 45_000, 'the job with a hung decoder ending');
    await within(runner.stop(), 5_000, 'stop()');
    const job = (await b.store.getBatchJob(id))!;
    expect(job.state).toBe('FAILED');
    expect(job.error).toMatch(/heartbeat|stopped answering/);
    expect(await b.balance()).toBe(before);
    expect((await b.store.getTranscription(id, b.accountId))!.status).toBe('FAILED');
    expect(fs.readdirSync(b.dir)).toEqual([]);
    expect(await b.audio.list()).toEqual([]);
    await b.store.close();
  }, 90_000);
});

describe('batch runner: refunds', () => {
  it('a job stored DONE stays DONE and charged when deleting its audio fails afterwards', async () => {
    const b = await bench();
    const before = await b.balance();
    const id = await b.queue(clips.find((c) => c.id === 'librivox-0880')!.pcm16k);
    // The real audio store, except that deleting fails (after DONE is stored).
    let removes = 0;
    const audio: BatchAudioStore = Object.assign(Object.create(b.audio) as BatchAudioStore, {
      async remove() {
        removes++;
        throw new Error('injected: cannot delete');
      },
    });
    const runner = b.runner({ audio });
    await runner.start();
    await within(runner.idle(), 60_000, 'the job');
    await runner.stop();
    expect(removes).toBe(1);
    expect(await b.store.getBatchJob(id)).toMatchObject({ state: 'DONE', error: null });
    expect((await b.store.getTranscription(id, b.accountId))!.status).toBe('COMPLETED');
    expect((await b.store.listSegments(id)).map((s) => s.text).join(' ')).not.toBe('');
    expect(await b.balance()).toBe(before - 3n);
    // The next start deletes the audio of the ended job.
    expect((await b.audio.list()).map((a) => a.name)).toEqual([`${id}.s16le`]);
    const next = b.runner();
    await next.start();
    await next.stop();
    expect(await b.audio.list()).toEqual([]);
    await b.store.close();
  }, 90_000);
});

describe('batch runner: files left by an earlier run', () => {
  it("start() deletes every file and audio no QUEUED or RUNNING job needs, and keeps (then transcribes) the pending job's audio", async () => {
    const b = await bench();
    const pending = await b.queue(clips.find((c) => c.id === 'librivox-0880')!.pcm16k);
    const delivered = await b.queue(Buffer.alloc(32_000));
    await b.store.setBatchJobState(delivered, 'DONE'); // crashed between DONE and deleting its audio
    const failed = await b.queue(Buffer.alloc(32_000));
    await b.store.failBatchJob(failed, 'x');
    // kill -9 during an upload, during a decode, and between writing the audio and the create
    for (const name of ['upload-0123456789abcdef', 'decode-0123456789abcdef.s16le']) fs.writeFileSync(path.join(b.dir, name), 'x');
    fs.mkdirSync(path.join(b.dir, 'stray-dir'));
    fs.writeFileSync(path.join(b.dir, 'stray-dir', 'f'), 'x');
    const orphan = 'stt_01aaaaaaaaaaaaaaaaaaaaaa.s16le';
    const young = 'stt_01bbbbbbbbbbbbbbbbbbbbbb.s16le';
    if (b.audio.kind === 'file') {
      fs.writeFileSync(path.join(b.dir, orphan), 'xx');
    } else {
      // On a shared store audio no job names is another node's upload until it is old.
      await b.store.putBatchAudioChunk(orphan, 0, Buffer.alloc(2), new Date(Date.now() - LEFTOVER_GRACE_MS - 1000));
      await b.store.putBatchAudioChunk(young, 0, Buffer.alloc(2), new Date());
    }

    const runner = b.runner();
    await runner.start();
    expect(fs.readdirSync(b.dir).filter((f) => f !== `${pending}.s16le`)).toEqual([]);
    const kept = (await b.audio.list()).map((a) => a.name).sort();
    expect(kept).toEqual(b.audio.kind === 'file' ? [`${pending}.s16le`] : [`${pending}.s16le`, young].sort());
    await within(runner.idle(), 60_000, 'the pending job');
    await runner.stop();
    expect((await b.store.getBatchJob(pending))!.state).toBe('DONE');
    expect((await b.store.listSegments(pending)).length).toBeGreaterThan(0);
    expect(fs.readdirSync(b.dir)).toEqual([]);
    expect((await b.audio.list()).map((a) => a.name)).toEqual(b.audio.kind === 'file' ? [] : [young]);
    await b.store.close();
  }, 90_000);
});

/** A stored segment's words as the recognizer said them (readableText, on by default, keeps
 * them in rawText when it changed the text). */
function recognizerText(s: { text: string; annotations?: { rawText?: string } }): string {
  return s.annotations?.rawText ?? s.text;
}

describe('batch runner: channel adaptation across segments', () => {
  // Three clips with 1 s pauses: several segments.
  const pcm = Buffer.concat(
    ['librivox-0870', 'librivox-0890', 'librivox-0920'].flatMap((id) => [clips.find((c) => c.id === id)!.pcm16k, Buffer.alloc(32_000)]),
  );
  const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2);
  const plan = planSegments(samples, { rate: 16_000, maxSegmentSeconds: 30 }).filter((s) => !s.silent);

  /** What one decoder fed the segments in order (finish() after each) says, and its channel
   * state after each segment: a real-time session's behaviour. */
  async function oneDecoder(): Promise<Array<{ text: string; state: number[] | null }>> {
    const stream = await engine.open({ inputRate: 16_000, profile: 'wideband' });
    try {
      const out: Array<{ text: string; state: number[] | null }> = [];
      for (const seg of plan) {
        const audio = samples.subarray(seg.startSample, seg.endSample);
        for (let i = 0; i < audio.length; i += 16_000) await stream.accept(audio.subarray(i, i + 16_000));
        const text = (await stream.finish()).text;
        out.push({ text, state: await stream.channelState() });
      }
      return out;
    } finally {
      await stream.release();
    }
  }

  it('each segment starts from the state the previous one left, as one decoder would; a resumed job from the stored state', async () => {
    expect(plan.length).toBeGreaterThanOrEqual(2);
    const expected = await oneDecoder();
    expect(expected[0]!.state).not.toBeNull();
    const b = await bench();
    const id = await b.queue(pcm);
    let runner = b.runner();
    await runner.start();
    await within(runner.idle(), 90_000, 'the job');
    await runner.stop();
    expect((await b.store.listSegments(id)).map(recognizerText)).toEqual(expected.map((e) => e.text));
    expect((await b.store.getBatchJob(id))!.channelState).toEqual(expected[expected.length - 1]!.state);

    // Resumed after a restart that had stored the first segment: the rest continues from the
    // state stored with it, so the words and the final state are the same.
    const resumed = await b.queue(pcm);
    const first = (await b.store.listSegments(id))[0]!;
    await b.store.appendBatchSegment({ ...first, transcriptionId: resumed }, expected[0]!.state);
    runner = b.runner();
    await runner.start();
    await within(runner.idle(), 90_000, 'the resumed job');
    await runner.stop();
    expect((await b.store.listSegments(resumed)).map(recognizerText)).toEqual(expected.map((e) => e.text));
    expect((await b.store.getBatchJob(resumed))!.channelState).toEqual(expected[expected.length - 1]!.state);
    await b.store.close();
  }, 240_000);
});

/** The real engine, but each decoder's finish() (one per segment) waits `ms` first. */
function slowEngine(real: Engine, ms: number): Engine {
  return {
    info: real.info,
    start: () => real.start(),
    ready: () => real.ready(),
    close: () => real.close(),
    async open(req: StreamRequest): Promise<RecognitionStream> {
      const stream = await real.open(req);
      return new Proxy(stream, {
        get(target, key) {
          if (key === 'finish') {
            return async () => {
              await new Promise((r) => setTimeout(r, ms));
              return target.finish();
            };
          }
          const v = Reflect.get(target, key, target) as unknown;
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
    },
  };
}

async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('batch runner: claims across nodes', () => {
  const pcm = Buffer.concat(
    ['librivox-0870', 'librivox-0890', 'librivox-0920'].flatMap((id) => [clips.find((c) => c.id === id)!.pcm16k, Buffer.alloc(32_000)]),
  );

  it("a node that lost a job's claim can neither store a segment, complete nor refund it", async () => {
    const b = await bench();
    const before = await b.balance();
    const id = await b.queue(Buffer.alloc(32_000));
    const charged = before - (await b.balance());
    const t0 = new Date();
    expect(await b.store.claimJob({ table: 'batch_jobs', key: id, node: 'node-a' }, 1000, t0)).toBe(true);
    // node-a stops renewing (it stalled); node-b claims the job once the lease ran out
    expect(
      await b.store.claimNextJob('batch_jobs', "state IN ('QUEUED', 'RUNNING')", 'node-b', 1000, new Date(t0.getTime() + 500)),
    ).toBeNull();
    expect(await b.store.claimNextJob('batch_jobs', "state IN ('QUEUED', 'RUNNING')", 'node-b', 1000, new Date(t0.getTime() + 1500))).toBe(
      id,
    );
    const seg = {
      transcriptionId: id,
      index: 0,
      startSample: 0n,
      endSample: 16_000n,
      text: 'zombie',
      words: [],
      createdAt: t0.toISOString(),
    };
    expect(await b.store.appendClaimedBatchSegment('node-a', seg, [1, 2])).toBe(false);
    expect(await b.store.setClaimedBatchJobState(id, 'node-a', 'DONE')).toBe(false);
    expect(await b.store.failClaimedBatchJob(id, 'node-a', 'zombie')).toBe(false);
    expect(await b.store.listSegments(id)).toEqual([]);
    expect(await b.store.getBatchJob(id)).toMatchObject({ state: 'QUEUED', channelState: null });
    expect(await b.balance()).toBe(before - charged);

    // The holder writes; segments stay first-write-wins on their index.
    expect(await b.store.appendClaimedBatchSegment('node-b', { ...seg, text: 'first' }, [3])).toBe(true);
    expect(await b.store.appendClaimedBatchSegment('node-b', { ...seg, text: 'second' }, [3])).toBe(true);
    expect((await b.store.listSegments(id)).map((s) => s.text)).toEqual(['first']);
    expect(await b.store.setClaimedBatchJobState(id, 'node-b', 'RUNNING')).toBe(true);
    expect(await b.store.failClaimedBatchJob(id, 'node-b', 'engine failed')).toBe(true);
    expect(await b.store.failClaimedBatchJob(id, 'node-b', 'engine failed')).toBe(false); // refunded once
    expect(await b.store.setClaimedBatchJobState(id, 'node-b', 'DONE')).toBe(false);
    expect(await b.balance()).toBe(before);
    await b.store.close();
  }, 30_000);

  it('a job whose node stopped renewing is completed by another node; the stalled node is fenced off, the words are the same, charged once', async () => {
    const b = await bench();
    // The reference: one undisturbed runner.
    const clean = await b.queue(pcm);
    const solo = b.runner();
    await solo.start();
    await within(solo.idle(), 90_000, 'the undisturbed job');
    await solo.stop();
    const expected = (await b.store.listSegments(clean)).map((s) => ({
      index: s.index,
      start: s.startSample,
      end: s.endSample,
      text: s.text,
    }));
    expect(expected.length).toBeGreaterThanOrEqual(2);

    const before = await b.balance();
    const id = await b.queue(pcm);
    const charged = before - (await b.balance());
    // Node A: slow segments, and its renewals never reach the database (a stalled node).
    const refused: string[] = [];
    const storeA = new Proxy(b.store, {
      get(target, key, receiver) {
        if (key === 'renewJobs') return async (_t: string, _n: string, keys: readonly string[]) => [...keys];
        if (key === 'appendClaimedBatchSegment') {
          return async (...args: Parameters<Store['appendClaimedBatchSegment']>) => {
            const ok = await target.appendClaimedBatchSegment(...args);
            if (!ok) refused.push(args[1].transcriptionId);
            return ok;
          };
        }
        const v = Reflect.get(target, key, receiver) as unknown;
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const a = b.runner({ store: storeA, engine: slowEngine(engine, 3000), node: 'node-a', shared: true, leaseMs: 1000, pollMs: 200 });
    await a.start();
    await until('node A running the job', 10_000, async () => (await b.store.getBatchJob(id))!.state === 'RUNNING');
    const bNode = b.runner({ node: 'node-b', shared: true, leaseMs: 1000, pollMs: 200 });
    await bNode.start();
    await until('node B completing the job', 90_000, async () => (await b.store.getBatchJob(id))!.state === 'DONE');
    await within(a.idle(), 30_000, 'node A leaving the job');
    await a.stop();
    await bNode.stop();
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((r) => r === id)).toBe(true);
    const got = (await b.store.listSegments(id)).map((s) => ({ index: s.index, start: s.startSample, end: s.endSample, text: s.text }));
    expect(got).toEqual(expected);
    expect((await b.store.getTranscription(id, b.accountId))!.status).toBe('COMPLETED');
    expect(await b.balance()).toBe(before - charged);
    expect(await b.audio.list()).toEqual([]);
    await b.store.close();
  }, 180_000);
});
