// Phrase spotting (docs/analytics.md, "Phrase spotting"): a session whose account has a live
// rule or a post-call category asking to spot its phrases (`spot: true`) runs a second decoder,
// a keyphrase search (src/engine/keyphrase.ts), on the same audio as its recognizer. What it
// detects counts as the phrase said even when the transcript garbles it: a live rule alerts
// (source "spotted", rule-alerts.ts), and the detections are stored with the leg for its
// call's categories (store.saveLegSpots).
//
// Costs: the decoder is opened only for a session whose account spots phrases (decided on its
// first audio, from the account's rules and categories), and it is a decoder of the pool: it
// counts against maxDecoders while the session holds it, as the recognizer does. When none is
// free the session goes on without spotting (scribed_phrase_spotters_total{outcome="busy"}):
// spotting never refuses a session or takes a recognizer's place.
//
// The audio is fed in pieces of at least FEED_MS; the search's utterance is ended (and its
// detections read with their times) as soon as it reports one, else at a quiet piece once it
// is UTTERANCE_MS long, and at MAX_UTTERANCE_MS whatever the audio: a phrase said across that
// cut can be missed, so cuts wait for quiet.
import type { Logger } from 'pino';
import { ScribedError } from '../core/errors.js';
import { spotPhrase, type PhraseSpotting } from '../core/rules.js';
import type { ServerEvent } from '../core/protocol.js';
import type { Engine, Keyphrase, RecognitionStream } from '../engine/types.js';
import type { Metrics } from '../obs/metrics.js';
import type { Store } from '../store/store.js';
import type { SessionContext } from './session-context.js';

const FEED_MS = 200;
const UTTERANCE_MS = 8_000;
const MAX_UTTERANCE_MS = 20_000;
/** A piece below this level (dBFS) is quiet enough to end the search's utterance in. */
const QUIET_DBFS = -40;
/** Audio held while the decoder opens, or while it runs behind; past it the oldest is dropped. */
const MAX_PENDING_MS = 30_000;

/** A phrase the keyphrase search detected, on the session's audio time line. */
export interface SpotDetection {
  phrase: string;
  startMs: number;
  endMs: number;
}

/** Phrase conditions that ask for spotting, as an account's rules and categories give them. */
export interface SpotSource {
  phrases: readonly string[];
  spot?: PhraseSpotting;
}

/** The keyphrase list for an account's spotting conditions: each phrase once, at the loosest
 * threshold any condition asks of it (the search takes one threshold a phrase). */
export function keyphrasesOf(sources: readonly SpotSource[]): Keyphrase[] {
  const byPhrase = new Map<string, number>();
  for (const s of sources) {
    if (!s.spot) continue;
    for (const p of s.phrases) {
      const phrase = spotPhrase(p);
      if (phrase === '') continue;
      byPhrase.set(phrase, Math.min(byPhrase.get(phrase) ?? Infinity, s.spot.threshold));
    }
  }
  return [...byPhrase].map(([phrase, threshold]) => ({ phrase, threshold }));
}

export interface PhraseSpottingDeps {
  store: Store;
  engine: Engine;
  metrics: Metrics;
  log: Logger;
  /** A detection, as it is made (live rules: RuleAlerts.spotted); resolves once its alerts are
   * out, so a session's last detections alert before it reports itself closed. */
  spotted(ctx: SessionContext, detection: SpotDetection, emit: (e: ServerEvent) => void): Promise<void>;
}

/** One per node: LiveSessionDeps.spotting. */
export class PhraseSpotters {
  constructor(private readonly deps: PhraseSpottingDeps) {}

  /** The session's spotter; it finds out on its own whether the account spots anything. */
  open(ctx: SessionContext, emit: (e: ServerEvent) => void): SessionSpotter {
    return new SessionSpotter(ctx, this.deps, emit, () => this.keyphrases(ctx.accountId));
  }

  /** The account's spotting conditions: enabled phrase rules and categories with spot. */
  async keyphrases(accountId: string): Promise<Keyphrase[]> {
    const [rules, categories] = await Promise.all([this.deps.store.listRules(accountId), this.deps.store.listCategories(accountId)]);
    const sources: SpotSource[] = [];
    for (const r of rules) if (r.enabled && r.condition.kind === 'phrases') sources.push(r.condition);
    for (const c of categories) {
      if (!c.enabled) continue;
      for (const cond of c.conditions) if (cond.test.kind === 'phrases') sources.push(cond.test);
    }
    return keyphrasesOf(sources);
  }
}

function dbfs(samples: Int16Array): number {
  let sum = 0;
  for (const s of samples) sum += s * s;
  const rms = Math.sqrt(sum / Math.max(1, samples.length)) / 32768;
  return rms > 0 ? 20 * Math.log10(rms) : -120;
}

export class SessionSpotter {
  private state: 'loading' | 'on' | 'off' | 'closed' = 'loading';
  private stream: RecognitionStream | null = null;
  private pending: Array<{ at: bigint; samples: Int16Array }> = [];
  private pendingSamples = 0;
  private chain: Promise<void> = Promise.resolve();
  private uttStart: bigint | null = null;
  private uttSamples = 0;
  private readonly found: SpotDetection[] = [];
  private readonly ready: Promise<void>;

  constructor(
    private readonly ctx: SessionContext,
    private readonly deps: PhraseSpottingDeps,
    private readonly emit: (e: ServerEvent) => void,
    private readonly keyphrases: () => Promise<Keyphrase[]>,
  ) {
    this.ready = this.start();
  }

  /** Detections so far (the session's time line). */
  get detections(): readonly SpotDetection[] {
    return this.found;
  }

  private async start(): Promise<void> {
    const { ctx, deps } = this;
    try {
      const keyphrases = await this.keyphrases();
      if (keyphrases.length === 0 || this.state === 'closed') {
        this.off();
        return;
      }
      const stream = await deps.engine.open({ inputRate: ctx.rate, profile: ctx.encoding.profile, keyphrases });
      if ((this.state as string) === 'closed') {
        await stream.release();
        return;
      }
      this.stream = stream;
      this.state = 'on';
      deps.metrics.phraseSpotters.inc({ outcome: 'opened' });
      ctx.log.info({ phrases: keyphrases.length }, 'phrase spotting on');
      this.pump();
    } catch (err) {
      const busy = err instanceof ScribedError && err.code === 'ENGINE_BUSY';
      deps.metrics.phraseSpotters.inc({ outcome: busy ? 'busy' : 'failed' });
      ctx.log.warn({ err }, busy ? 'no decoder free for phrase spotting: the session goes on without it' : 'phrase spotting not started');
      this.off();
    }
  }

  private off(): void {
    if (this.state !== 'closed') this.state = 'off';
    this.pending = [];
    this.pendingSamples = 0;
  }

  /** The session's audio as it is taken (frame-intake.ts), shared read-only. */
  audio(at: bigint, samples: Int16Array): void {
    if (this.state === 'off' || this.state === 'closed') return;
    this.pending.push({ at, samples });
    this.pendingSamples += samples.length;
    const max = (MAX_PENDING_MS * this.ctx.rate) / 1000;
    while (this.pendingSamples > max && this.pending.length > 1) {
      // Behind: the oldest audio goes unspotted, and the search starts a new utterance after it.
      this.pendingSamples -= this.pending.shift()!.samples.length;
      this.uttStart = null;
    }
    if (this.state === 'on') this.pump();
  }

  /** Feed what is pending once a piece is long enough (or everything, at the end). */
  private pump(all = false): void {
    if (this.pendingSamples < (FEED_MS * this.ctx.rate) / 1000 && !(all && this.pendingSamples > 0)) return;
    const parts = this.pending;
    this.pending = [];
    const length = this.pendingSamples;
    this.pendingSamples = 0;
    const samples = new Int16Array(length);
    let o = 0;
    for (const p of parts) {
      samples.set(p.samples, o);
      o += p.samples.length;
    }
    // Fed a piece at a time (so a detection is reported, and cut at, within a piece of it).
    const piece = (FEED_MS * this.ctx.rate) / 1000;
    for (let i = 0; i < samples.length; i += piece) {
      const at = parts[0]!.at + BigInt(i);
      const part = samples.subarray(i, i + piece);
      this.chain = this.chain.then(() => this.feed(at, part)).catch((err: unknown) => this.fail(err));
    }
  }

  private async feed(at: bigint, samples: Int16Array): Promise<void> {
    const stream = this.stream;
    if (!stream) return;
    if (this.uttStart === null || at !== this.uttStart + BigInt(this.uttSamples)) {
      // A new utterance: the first, or after audio was dropped.
      if (this.uttStart !== null && this.uttSamples > 0) await this.cut(stream);
      this.uttStart = at;
      this.uttSamples = 0;
    }
    const r = await stream.accept(samples);
    this.uttSamples += samples.length;
    const ms = (this.uttSamples * 1000) / this.ctx.rate;
    if (r.partial !== '' || ms >= MAX_UTTERANCE_MS || (ms >= UTTERANCE_MS && dbfs(samples) < QUIET_DBFS)) await this.cut(stream);
  }

  /** End the search's utterance and report what it detected, on the session's time line. */
  private async cut(stream: RecognitionStream): Promise<void> {
    const start = this.uttStart ?? 0n;
    const r = await stream.finish();
    this.uttStart = start + BigInt(this.uttSamples);
    this.uttSamples = 0;
    const toMs = (s: bigint) => Number((s * 1000n) / BigInt(this.ctx.rate));
    for (const w of r.words) {
      const d = { phrase: w.word, startMs: toMs(start + BigInt(w.startSample)), endMs: toMs(start + BigInt(w.endSample)) };
      this.found.push(d);
      this.ctx.log.info({ phrase: d.phrase, startMs: d.startMs }, 'phrase spotted');
      await this.deps.spotted(this.ctx, d, this.emit);
    }
  }

  private fail(err: unknown): void {
    this.ctx.log.warn({ err }, 'phrase spotting stopped');
    const stream = this.stream;
    this.stream = null;
    this.off();
    void stream?.release().catch(() => undefined);
  }

  /** The session ends here (closed, stopping, or moved on): the rest of the audio is searched,
   * the decoder goes back to the pool and, when `keep`, the detections are stored with the leg
   * (its call's categories read them). */
  async close(keep: boolean): Promise<void> {
    if (this.state === 'closed') return;
    await this.ready;
    const wasOn = this.state === 'on';
    this.state = 'closed';
    if (wasOn && keep) this.pump(true);
    this.pending = [];
    this.pendingSamples = 0;
    await this.chain;
    const stream = this.stream;
    this.stream = null;
    if (stream) {
      if (keep && this.uttSamples > 0)
        await this.cut(stream).catch((err: unknown) => this.ctx.log.warn({ err }, 'phrase spotting: last audio not searched'));
      await stream.release().catch(() => undefined);
    }
    if (keep && wasOn)
      await this.ctx.store
        .saveLegSpots(this.ctx.transcriptionId, this.found)
        .catch((err: unknown) => this.ctx.log.warn({ err }, "the leg's spotted phrases could not be stored"));
  }
}
