// The recognition interface: all that the session layer knows about a speech engine.
// An engine hands out streams; a stream is one decoder bound to one session at a time.
// All calls are async because decoders run off the event loop (worker threads).

/** Which front-end configuration a stream needs. Telephony audio (8 kHz, mu-law or narrow
 * PCM) is upsampled to the engine rate but keeps its band limit, so it needs its own
 * normalisation settings. */
export type AudioProfile = 'wideband' | 'telephony';

export interface WordTiming {
  word: string;
  /** Start and end, in samples of the stream's input rate, counted from the start of the
   * current utterance (the first sample fed after open() or the previous finish()). */
  startSample: number;
  endSample: number;
  /** Posterior probability in [0, 1] where the engine gives one. */
  confidence: number | null;
}

export interface FinalResult {
  text: string;
  words: WordTiming[];
  /** The channel state right after this utterance (as channelState() would read it then;
   * later audio may already be queued on the decoder); absent or null when the engine keeps
   * none. */
  channelState?: number[] | null;
}

export interface AcceptResult {
  /** Latest partial hypothesis of the open utterance ('' when nothing yet). With batched
   * decoding (StreamRequest.decodeBatchMs) it is the one of the last batch decoded, which
   * may lag the samples accepted by up to a batch and the decoding queue. */
  partial: string;
  /** Input samples of the open utterance the partial covers (its end, from the utterance's
   * first sample). */
  partialSamples: number;
  /** Engine CPU milliseconds spent on the input samples in `decodedSamples`, for the
   * real-time-factor metric: this call's work, or with batching the batches that finished
   * decoding since the previous call. */
  cpuMs: number;
  decodedSamples: number;
}

export interface RecognitionStream {
  readonly inputRate: number;
  /** What the engine did with the request's vocabularyHints; null when none were given or
   * the engine cannot use them. */
  readonly vocabulary: VocabularyResult | null;
  /** Feed int16 mono samples at inputRate; resampling to the engine rate happens inside.
   *
   * `samples` is shared read-only, not handed over: the stream may keep the array itself
   * (batched decoding gathers the callers' arrays until a batch is due, then copies them into
   * a buffer of its own that moves to the worker), so the caller must never write to it after
   * this call, nor to the buffer under it (a pooled or reused buffer must be copied first). The
   * caller may keep reading it (its spool, a deferral backlog): the stream never writes to it,
   * nor detaches its buffer by transferring it. */
  accept(samples: Int16Array): Promise<AcceptResult>;
  /** End the current utterance and return its final result; the stream stays usable and the
   * next accept() starts a new utterance whose times restart at zero. */
  finish(): Promise<FinalResult>;
  /** The recognizer's channel adaptation (pocketsphinx: the live cepstral mean) as it is
   * now, between utterances (read it after finish()); opaque numbers, or null when the
   * engine has none. Given to setChannelState() of a later stream of the same profile, that
   * stream normalises audio as this one would have (crash recovery, src/session). */
  channelState(): Promise<number[] | null>;
  /** Continue from a state channelState() returned; call before the first accept(). False
   * when the engine keeps no channel state (nothing set). */
  setChannelState(state: readonly number[]): Promise<boolean>;
  /** Voice activity flags (1 speech, 0 not), one per detector window (32 ms of audio) that
   * these samples complete. Only on streams opened with `vad`. `samples` is shared read-only,
   * as accept()'s are. */
  detect(samples: Int16Array): Promise<Uint8Array>;
  /** Batched decoding: called with each new partial of the open utterance as its batch is
   * decoded (so partials do not wait for the next accept()). Partials of an utterance whose
   * finish() was called are not reported. Without batching, partials come from accept(). */
  onPartial(listener: (partial: Pick<AcceptResult, 'partial' | 'partialSamples'>) => void): void;
  /** Called once if the decoder behind this stream is lost (worker crash, or a missed
   * heartbeat) before release(). Not called when the engine itself is closing. */
  onLost(listener: (err: Error) => void): void;
  /** Return the decoder to its engine. Safe to call twice. `dropPending`: audio accepted and
   * not decoded yet is not decoded (nobody wants its results: the session moved to another
   * node, which decodes it from the shared spool), so the release does not wait for it. */
  release(options?: { dropPending?: boolean }): Promise<void>;
}

/** What a recognizer did with vocabularyHints. */
export interface VocabularyResult {
  /** Hint words made likelier. */
  boosted: string[];
  /** Of those, words the dictionary lacked, added with a derived pronunciation. */
  added: string[];
  /** Hint words that could not be applied (no pronunciation). */
  unknown: string[];
}

export interface StreamRequest {
  inputRate: number;
  profile: AudioProfile;
  /** Run a voice activity detector beside the decoder (segmentCommitMode "vad"). */
  vad?: { threshold: number } | null;
  /** Keepalive between the session and its recognition worker: the pool keeps one ping in
   * flight and declares the worker lost when that ping has had no reply for this long. Only
   * the ping's round trip is measured: the worker answers pings ahead of queued work, between
   * pieces of decoding, so the bound is on one synchronous decoder call, not on the work
   * queued (src/engine/decoder-stream.ts, startHeartbeat). */
  heartbeatIntervalMs?: number | null;
  /** vocabularyHints to bias recognition toward (engine permitting). */
  vocabularyHints?: string[];
  /** Batched decoding: accept() gathers input until this much audio is waiting, then sends
   * it to the decoder without waiting for the result, and resolves at once with the latest
   * partial. The decoder wakes once per batch instead of once per 20 ms frame (a paced
   * decoder that wakes every frame spends about 30% more CPU on the same audio: cold caches,
   * and a partial backtrace per call) and the caller never waits on decoding. finish()
   * decodes what is gathered. 0 or absent: each accept() is decoded before it resolves. */
  decodeBatchMs?: number;
  /** Phrase spotting (src/engine/keyphrase.ts): a decoder searching for these phrases in the
   * audio instead of transcribing it; its finals' words are the phrases detected. A decoder
   * of the pool like any other, retired after the stream. pocketsphinx only. */
  keyphrases?: readonly Keyphrase[];
}

/** A phrase to spot and its detection threshold (pocketsphinx -kws: smaller detects more). */
export interface Keyphrase {
  phrase: string;
  threshold: number;
}

export interface EngineInfo {
  name: string;
  /** Rate the recognizer runs at internally. */
  sampleRate: number;
  /** Languages the loaded model recognizes (BCP-47 primary tags). */
  languages: string[];
  /** True when results can name the spoken language (neither engine here can). */
  detectsLanguage?: boolean;
}

export interface Engine {
  readonly info: EngineInfo;
  /** Load models and warm at least one decoder; resolves when the engine can serve. */
  start(): Promise<void>;
  /** True once start() resolved and the engine has not been closed. */
  ready(): boolean;
  /** Check out a decoder. Rejects with ScribedError ENGINE_BUSY when all are in use. */
  open(req: StreamRequest): Promise<RecognitionStream>;
  /** Stop all decoders and workers. Safe to call twice. */
  close(): Promise<void>;
  /** Read-only: how many decoders the engine may run and how many are checked out now
   * (readiness, src/server/routes/health.ts). Optional so wrappers and fakes need not
   * implement it; without it a caller must assume a decoder is free. */
  capacity?(): EngineCapacity;
  /** Audio accepted by streams with batched decoding and not decoded yet, in seconds, summed
   * over the streams (how far recognition runs behind the acknowledgements). */
  decodeBacklogSeconds?(): number;
  /** Phrase spotting: the words of these phrases the engine cannot spot (no pronunciation);
   * absent when the engine cannot spot phrases at all. */
  missingKeyphraseWords?(phrases: readonly string[]): Promise<string[]>;
}

/** A snapshot of the decoder pool. */
export interface EngineCapacity {
  /** maxDecoders: the most decoders that may exist at once. */
  decoders: number;
  /** Decoders checked out (streaming, starting, or held by a paused session or a batch
   * segment); decoders - busy can be had by the next open() (idle ones, or room to start one). */
  busy: number;
}

// ---------------------------------------------------------------------------------------
// Inside a recognition worker thread. A backend wraps one native decoder; its calls are
// synchronous and only ever run in a worker, never on the main event loop. The generic
// worker (worker.ts) resamples input to `engineRate` before calling process() and converts
// word times back to input-rate samples, so backends know nothing of sessions or rates.

export type EngineKind = 'pocketsphinx' | 'sherpa-onnx';

export interface BackendConfig {
  engine: EngineKind;
  profile: AudioProfile;
  /** Model directory: required for sherpa-onnx, optional override for pocketsphinx. */
  modelDir?: string;
  /** Extra directory with generated assets (e.g. the telephony feat.params). */
  assetsDir?: string;
  /** A keyphrase search for these instead of transcription (StreamRequest.keyphrases). */
  keyphrases?: readonly Keyphrase[];
}

export interface BackendWord {
  word: string;
  /** Times in engine-rate samples from the start of the utterance. */
  startSample: number;
  endSample: number;
  confidence: number | null;
}

export interface DecoderBackend {
  readonly engineRate: number;
  /** Feed engine-rate samples of the open utterance (opened implicitly on first call);
   * returns the current partial hypothesis, or '' without computing it when `withPartial`
   * is false (a batch fed in pieces asks on its last piece only). */
  process(samples: Int16Array, withPartial?: boolean): string;
  /** Close the open utterance and return its words; the next process() opens a new one. */
  endUtterance(): { text: string; words: BackendWord[] };
  /** Channel adaptation state between utterances (RecognitionStream.channelState); absent
   * or null when the engine keeps none. */
  getChannelState?(): number[] | null;
  setChannelState?(state: readonly number[]): boolean;
  destroy(): void;
}

export type BackendFactory = (config: BackendConfig) => DecoderBackend;
