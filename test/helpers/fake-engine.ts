// A scripted, deterministic Engine (src/engine/types.ts) for unit tests of the session
// modules: no workers, no models. Each stream hears "words" as a script says: a word for
// every `samplesPerWord` samples accepted, named from `script` in turn; partials are the words
// so far of the open utterance, a final all of them. Voice activity (detect) is speech for a
// window whose mean absolute level is over `speechLevel`. Calls can be delayed (`latencyMs`),
// held until released (`hold`), or failed (`fail`), per method, to test what the session does
// while its recognizer is slow, stuck or lost.
import { ScribedError } from '../../src/core/errors.js';
import type {
  AcceptResult,
  Engine,
  EngineInfo,
  FinalResult,
  RecognitionStream,
  StreamRequest,
  VocabularyResult,
} from '../../src/engine/types.js';
import { VAD_RATE, VAD_WINDOW_SAMPLES } from '../../src/vad/window.js';

export type FakeCall = 'accept' | 'detect' | 'finish';

export interface FakeEngineOptions {
  /** Words the streams hear, in turn (cycled). */
  script?: string[];
  /** Samples of input per word (at the stream's input rate). */
  samplesPerWord?: number;
  /** Decoders the engine has; opening one more rejects with ENGINE_BUSY. */
  decoders?: number;
  speechLevel?: number;
}

export class FakeEngine implements Engine {
  readonly info: EngineInfo = { name: 'fake', sampleRate: 16_000, languages: ['en'] };
  readonly streams: FakeStream[] = [];
  /** Delay of each call, ms (0: resolves on the next tick). */
  readonly latencyMs: Record<FakeCall, number> = { accept: 0, detect: 0, finish: 0 };
  /** Calls held until release(call) (or forever). */
  private readonly held = new Set<FakeCall>();
  private readonly waiting: Array<{ call: FakeCall; go: () => void }> = [];
  /** Calls that reject with ENGINE_FAILED. */
  readonly failing = new Set<FakeCall>();
  private started = false;
  readonly script: string[];
  readonly samplesPerWord: number;
  readonly speechLevel: number;
  private readonly decoders: number;

  constructor(opts: FakeEngineOptions = {}) {
    this.script = opts.script ?? ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'];
    this.samplesPerWord = opts.samplesPerWord ?? 3200;
    this.decoders = opts.decoders ?? 4;
    this.speechLevel = opts.speechLevel ?? 500;
  }

  async start(): Promise<void> {
    this.started = true;
  }

  ready(): boolean {
    return this.started;
  }

  async open(req: StreamRequest): Promise<RecognitionStream> {
    if (this.busy() >= this.decoders) throw new ScribedError('ENGINE_BUSY', 'every fake decoder is in use');
    const s = new FakeStream(this, req);
    this.streams.push(s);
    return s;
  }

  async close(): Promise<void> {
    this.started = false;
  }

  capacity() {
    return { decoders: this.decoders, busy: this.busy() };
  }

  private busy(): number {
    return this.streams.filter((s) => !s.released).length;
  }

  /** Hold every later call of this kind until release(call). */
  hold(call: FakeCall): void {
    this.held.add(call);
  }

  /** Let held calls of this kind go on (and later ones run at once again). */
  release(call: FakeCall): void {
    this.held.delete(call);
    for (const w of this.waiting.filter((x) => x.call === call)) {
      this.waiting.splice(this.waiting.indexOf(w), 1);
      w.go();
    }
  }

  /** Calls of this kind waiting on hold(). */
  heldCount(call: FakeCall): number {
    return this.waiting.filter((w) => w.call === call).length;
  }

  fail(call: FakeCall): void {
    this.failing.add(call);
  }

  /** How a call goes: held, delayed, failed, in the order made. */
  async gate(call: FakeCall): Promise<void> {
    if (this.held.has(call)) await new Promise<void>((go) => this.waiting.push({ call, go }));
    const ms = this.latencyMs[call];
    await new Promise((r) => (ms > 0 ? setTimeout(r, ms) : setImmediate(r)));
    if (this.failing.has(call)) throw new ScribedError('ENGINE_FAILED', `fake ${call} failed`);
  }
}

export class FakeStream implements RecognitionStream {
  readonly inputRate: number;
  readonly vocabulary: VocabularyResult | null = null;
  released = false;
  /** Everything accepted, in order (the session must never change it afterwards). */
  readonly accepted: Int16Array[] = [];
  readonly finals: FinalResult[] = [];
  private utterance = 0;
  private wordsHeard = 0;
  private windowCarry = 0;
  private windowSum = 0;
  private readonly partialListeners: Array<(p: Pick<AcceptResult, 'partial' | 'partialSamples'>) => void> = [];
  private readonly lostListeners: Array<(err: Error) => void> = [];
  channel: number[] | null = null;

  constructor(
    private readonly engine: FakeEngine,
    readonly request: StreamRequest,
  ) {
    this.inputRate = request.inputRate;
  }

  private words(samples: number): string[] {
    const n = Math.floor(samples / this.engine.samplesPerWord);
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(this.engine.script[(this.wordsHeard + i) % this.engine.script.length]!);
    return out;
  }

  async accept(samples: Int16Array): Promise<AcceptResult> {
    this.accepted.push(samples);
    this.utterance += samples.length;
    await this.engine.gate('accept');
    return { partial: this.words(this.utterance).join(' '), partialSamples: this.utterance, cpuMs: 1, decodedSamples: samples.length };
  }

  async finish(): Promise<FinalResult> {
    const samples = this.utterance;
    this.utterance = 0;
    const heard = this.words(samples);
    this.wordsHeard += heard.length;
    await this.engine.gate('finish');
    const per = this.engine.samplesPerWord;
    const final: FinalResult = {
      text: heard.join(' '),
      words: heard.map((word, i) => ({ word, startSample: i * per, endSample: (i + 1) * per, confidence: null })),
      channelState: this.channel,
    };
    this.finals.push(final);
    return final;
  }

  async channelState(): Promise<number[] | null> {
    return this.channel;
  }

  async setChannelState(state: readonly number[]): Promise<boolean> {
    this.channel = [...state];
    return true;
  }

  async detect(samples: Int16Array): Promise<Uint8Array> {
    const window = (VAD_WINDOW_SAMPLES * this.inputRate) / VAD_RATE;
    const flags: number[] = [];
    for (const s of samples) {
      this.windowSum += Math.abs(s);
      if (++this.windowCarry === window) {
        flags.push(this.windowSum / window > this.engine.speechLevel ? 1 : 0);
        this.windowCarry = 0;
        this.windowSum = 0;
      }
    }
    await this.engine.gate('detect');
    return Uint8Array.from(flags);
  }

  onPartial(listener: (partial: Pick<AcceptResult, 'partial' | 'partialSamples'>) => void): void {
    this.partialListeners.push(listener);
  }

  onLost(listener: (err: Error) => void): void {
    this.lostListeners.push(listener);
  }

  /** The decoder dies (as a worker crash would): lost listeners are told. */
  crash(): void {
    for (const l of this.lostListeners) l(new ScribedError('ENGINE_FAILED', 'fake decoder lost'));
  }

  async release(): Promise<void> {
    this.released = true;
  }
}

/** `seconds` of a steady tone at `level` (speech to the fake detector), or silence at 0. */
export function tone(rate: number, seconds: number, level = 3000): Int16Array {
  const out = new Int16Array(Math.round(rate * seconds));
  for (let i = 0; i < out.length; i++) out[i] = i % 2 === 0 ? level : -level;
  return out;
}
