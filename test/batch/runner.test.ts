// The batch runner against a real store and a real engine (no HTTP): failure handling,
// refunds, files left behind, and what a job carries from one segment to the next.
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionAccount } from '../../src/accounts/provision.js';
import { validateBatchRequest } from '../../src/batch/request.js';
import { BatchRunner, type BatchRunnerDeps } from '../../src/batch/runner.js';
import { planSegments } from '../../src/batch/segmenter.js';
import { charactersDue } from '../../src/core/billing.js';
import { newId } from '../../src/core/ids.js';
import { createEngine, kStall } from '../../src/engine/pool.js';
import type { Engine, RecognitionStream, StreamRequest } from '../../src/engine/types.js';
import { createMetrics } from '../../src/obs/metrics.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/store.js';
import { loadClips } from '../helpers/audio.js';
import { storeSettingsFor, tempDir } from '../helpers/service.js';

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
  return {
    store,
    dir,
    accountId,
    runner: (overrides = {}) => new BatchRunner({ store, engine, metrics: createMetrics({ defaults: false }), log, dir, maxDecoders: 1, maxSegmentSeconds: 30, ...overrides }),
    async queue(pcm, rate = 16_000, options = {}) {
      const now = new Date();
      const id = newId('stt', now);
      const audioFile = `${id}.s16le`;
      fs.writeFileSync(path.join(dir, audioFile), pcm);
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
    await b.store.close();
  }, 90_000);
});

describe('batch runner: refunds', () => {
  it('a job stored DONE stays DONE and charged when deleting its audio fails afterwards', async () => {
    const b = await bench();
    const before = await b.balance();
    const id = await b.queue(clips.find((c) => c.id === 'librivox-0880')!.pcm16k);
    const audio = path.join(b.dir, `${id}.s16le`);
    // The real store, except that storing DONE also turns the audio file into a non-empty
    // directory, so the runner's delete that follows fails.
    const store = new Proxy(b.store, {
      get(target, key, receiver) {
        if (key === 'setBatchJobState') {
          return async (tid: string, state: string, error?: string) => {
            await target.setBatchJobState(tid, state as 'DONE', error);
            if (state === 'DONE') {
              fs.rmSync(audio);
              fs.mkdirSync(audio);
              fs.writeFileSync(path.join(audio, 'x'), 'x');
            }
          };
        }
        const v = Reflect.get(target, key, receiver) as unknown;
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const runner = b.runner({ store });
    await runner.start();
    await within(runner.idle(), 60_000, 'the job');
    await runner.stop();
    expect(await b.store.getBatchJob(id)).toMatchObject({ state: 'DONE', error: null });
    expect((await b.store.getTranscription(id, b.accountId))!.status).toBe('COMPLETED');
    expect((await b.store.listSegments(id)).map((s) => s.text).join(' ')).not.toBe('');
    expect(await b.balance()).toBe(before - 3n);
    await b.store.close();
  }, 90_000);
});

describe('batch runner: files left by an earlier run', () => {
  it('start() deletes every file no QUEUED or RUNNING job names, and keeps (then transcribes) the pending job\'s audio', async () => {
    const b = await bench();
    const pending = await b.queue(clips.find((c) => c.id === 'librivox-0880')!.pcm16k);
    const delivered = await b.queue(Buffer.alloc(32_000));
    await b.store.setBatchJobState(delivered, 'DONE'); // crashed between DONE and deleting its audio
    const failed = await b.queue(Buffer.alloc(32_000));
    await b.store.failBatchJob(failed, 'x');
    // kill -9 during an upload, during a decode, and between the rename and the create
    for (const name of ['upload-0123456789abcdef', 'decode-0123456789abcdef.s16le', 'stt_01aaaaaaaaaaaaaaaaaaaaaa.s16le']) fs.writeFileSync(path.join(b.dir, name), 'x');
    fs.mkdirSync(path.join(b.dir, 'stray-dir'));
    fs.writeFileSync(path.join(b.dir, 'stray-dir', 'f'), 'x');
    expect(fs.readdirSync(b.dir).length).toBe(7);

    const runner = b.runner();
    await runner.start();
    const left = fs.readdirSync(b.dir);
    expect(left.filter((f) => f !== `${pending}.s16le`)).toEqual([]);
    await within(runner.idle(), 60_000, 'the pending job');
    await runner.stop();
    expect((await b.store.getBatchJob(pending))!.state).toBe('DONE');
    expect((await b.store.listSegments(pending)).length).toBeGreaterThan(0);
    expect(fs.readdirSync(b.dir)).toEqual([]);
    await b.store.close();
  }, 90_000);
});

describe('batch runner: channel adaptation across segments', () => {
  // Three clips with 1 s pauses: several segments.
  const pcm = Buffer.concat(['librivox-0870', 'librivox-0890', 'librivox-0920'].flatMap((id) => [clips.find((c) => c.id === id)!.pcm16k, Buffer.alloc(32_000)]));
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
    expect((await b.store.listSegments(id)).map((s) => s.text)).toEqual(expected.map((e) => e.text));
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
    expect((await b.store.listSegments(resumed)).map((s) => s.text)).toEqual(expected.map((e) => e.text));
    expect((await b.store.getBatchJob(resumed))!.channelState).toEqual(expected[expected.length - 1]!.state);
    await b.store.close();
  }, 240_000);
});
