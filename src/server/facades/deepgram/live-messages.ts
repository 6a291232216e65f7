// A native live session's events (docs/protocol.md) as Deepgram's live messages: partials and
// finals as Results, SpeechStarted when a segment opens, UtteranceEnd once enough audio passed
// the last final word with no new speech, Metadata when the stream ends. Pure and stateful
// (one per socket): the route feeds it every event and sends what it returns. Events with no
// Deepgram counterpart (ready, ack, committed, notices) are consumed.
import type { FinalEvent, PartialEvent, ServerEvent, TimePoint } from '../../../core/protocol.js';

export interface LiveWord {
  word: string;
  start: number;
  end: number;
  confidence: number;
  punctuated_word: string;
}

export interface ResultsMessage {
  type: 'Results';
  channel_index: [number, number];
  start: number;
  duration: number;
  is_final: boolean;
  speech_final: boolean;
  from_finalize: boolean;
  channel: { alternatives: [{ transcript: string; confidence: number; words: LiveWord[] }] };
  metadata: { request_id: string; model_info: { name: string; version: string; arch: string }; model_uuid: string };
}

export interface MetadataMessage {
  type: 'Metadata';
  transaction_key: 'deprecated';
  request_id: string;
  sha256: string;
  created: string;
  duration: number;
  channels: number;
  models: string[];
  model_info: Record<string, { name: string; version: string; arch: string }>;
  /** scribed's: the History row of the stream, as on pre-recorded answers. */
  transcription_ids: string[];
}

export interface UtteranceEndMessage {
  type: 'UtteranceEnd';
  channel: [number, number];
  last_word_end: number;
}

export interface SpeechStartedMessage {
  type: 'SpeechStarted';
  channel: [number, number];
  timestamp: number;
}

/** A native error as a text message (Deepgram's live API reports errors by close code; a frame
 * scribed dropped is named here rather than lost silently). */
export interface ErrorMessage {
  type: 'Error';
  err_code: string;
  err_msg: string;
  request_id: string;
}

export type LiveMessage = ResultsMessage | MetadataMessage | UtteranceEndMessage | SpeechStartedMessage | ErrorMessage;

export interface LiveMessageOptions {
  requestId: string;
  transcriptionId: string;
  /** ISO time the stream opened. */
  created: string;
  sampleRate: number;
  /** The recognizer serving the stream, named in metadata. */
  modelName: string;
  interimResults: boolean;
  vadEvents: boolean;
  utteranceEndMs: number | null;
  /** [index, count] of the channel this translator speaks for (default [0, 1]). With more
   * than one channel the stream's Metadata is sent by the route once every channel closed
   * (streamMetadata), not by each channel's translator. */
  channel?: [number, number];
}

const seconds = (t: TimePoint): number => t.ms / 1000;
const round3 = (s: number): number => Math.round(s * 1000) / 1000;
export class DeepgramLiveMessages {
  private readonly openedSegments = new Set<string>();
  private lastPartialText = new Map<string, string>();
  /** End of the last final word (s) while no UtteranceEnd was sent for it. */
  private pendingUtteranceEnd: number | null = null;
  private capturedSamples = 0n;
  private readonly modelInfo: { name: string; version: string; arch: string };
  private readonly channel: [number, number];

  constructor(private readonly opts: LiveMessageOptions) {
    this.modelInfo = { name: opts.modelName, version: 'scribed', arch: opts.modelName };
    this.channel = opts.channel ?? [0, 1];
  }

  get transcriptionId(): string {
    return this.opts.transcriptionId;
  }

  /** The stream's audio so far, in seconds. */
  get durationSeconds(): number {
    return Number(this.capturedSamples) / this.opts.sampleRate;
  }

  translate(event: ServerEvent): LiveMessage[] {
    switch (event.type) {
      case 'ack':
      case 'gap':
        this.capturedSamples = BigInt(event.capturedSamples);
        return this.utteranceEndDue();
      case 'partial':
        return this.partial(event);
      case 'final':
        return this.final(event);
      case 'closed':
        this.capturedSamples = BigInt(event.capturedSamples);
        return this.channel[1] === 1 ? [...this.utteranceEndDue(true), this.metadata()] : this.utteranceEndDue(true);
      case 'error':
        return [{ type: 'Error', err_code: event.code, err_msg: event.message, request_id: this.opts.requestId }];
      case 'accepting':
        // A Deepgram client cannot hold its audio back: it is told, and what it sends meanwhile
        // is dropped (the route stops framing it) until audio is accepted again.
        return event.accepting
          ? []
          : [
              {
                type: 'Error',
                err_code: event.reason ?? 'NOT_ACCEPTING',
                err_msg: `audio is not accepted now (${event.reason ?? 'not accepting'}); audio sent until it is accepted again is dropped`,
                request_id: this.opts.requestId,
              },
            ];
      default:
        return [];
    }
  }

  metadata(): MetadataMessage {
    return streamMetadata([this]);
  }

  /** The fields of the stream's Metadata this channel's translator holds. */
  metadataFields(): Pick<MetadataMessage, 'request_id' | 'created' | 'models' | 'model_info'> {
    return {
      request_id: this.opts.requestId,
      created: this.opts.created,
      models: [this.opts.modelName],
      model_info: { [this.opts.modelName]: this.modelInfo },
    };
  }

  private speechStarted(segmentId: string, start: TimePoint): LiveMessage[] {
    if (this.openedSegments.has(segmentId)) return [];
    this.openedSegments.add(segmentId);
    return this.opts.vadEvents ? [{ type: 'SpeechStarted', channel: this.channel, timestamp: round3(seconds(start)) }] : [];
  }

  private partial(e: PartialEvent): LiveMessage[] {
    if (e.text.trim() === '') return [];
    // New speech after a final: the utterance goes on, no UtteranceEnd for the words before.
    this.pendingUtteranceEnd = null;
    const out = this.speechStarted(e.segmentId, e.start);
    if (!this.opts.interimResults || this.lastPartialText.get(e.segmentId) === e.text) return out;
    this.lastPartialText.set(e.segmentId, e.text);
    out.push(this.results(e.start, e.end, e.text, interimWords(e), false, false, false));
    return out;
  }

  private final(e: FinalEvent): LiveMessage[] {
    this.lastPartialText.delete(e.segmentId);
    const words: LiveWord[] = (e.words ?? []).map((w) => ({
      word: w.word.toLowerCase(),
      start: round3(seconds(w.start)),
      end: round3(seconds(w.end)),
      confidence: w.confidence ?? 0,
      punctuated_word: w.word,
    }));
    const out = e.text.trim() === '' ? [] : this.speechStarted(e.segmentId, e.start);
    out.push(this.results(e.start, e.end, e.text, words, true, e.trigger === 'vad' || e.trigger === 'close', e.trigger === 'commit'));
    if (words.length > 0) this.pendingUtteranceEnd = words[words.length - 1]!.end;
    out.push(...this.utteranceEndDue());
    return out;
  }

  /** UtteranceEnd when the audio held passed the last final word by utterance_end_ms (or the
   * stream ended) with no new speech since. */
  private utteranceEndDue(ending = false): LiveMessage[] {
    const gap = this.opts.utteranceEndMs;
    const last = this.pendingUtteranceEnd;
    if (gap === null || last === null) return [];
    if (!ending && this.durationSeconds < last + gap / 1000) return [];
    this.pendingUtteranceEnd = null;
    return [{ type: 'UtteranceEnd', channel: this.channel, last_word_end: last }];
  }

  private results(
    start: TimePoint,
    end: TimePoint,
    transcript: string,
    words: LiveWord[],
    isFinal: boolean,
    speechFinal: boolean,
    fromFinalize: boolean,
  ): ResultsMessage {
    const confidence = words.length === 0 ? 0 : words.reduce((s, w) => s + w.confidence, 0) / words.length;
    return {
      type: 'Results',
      channel_index: this.channel,
      start: round3(seconds(start)),
      duration: round3(Math.max(0, seconds(end) - seconds(start))),
      is_final: isFinal,
      speech_final: speechFinal,
      from_finalize: fromFinalize,
      channel: { alternatives: [{ transcript, confidence: round3(confidence), words }] },
      metadata: { request_id: this.opts.requestId, model_info: this.modelInfo, model_uuid: this.opts.modelName },
    };
  }
}

/** The Metadata of a stream whose channels these translators speak for (in channel order):
 * its duration the longest channel's, a History row per channel. */
export function streamMetadata(channels: readonly DeepgramLiveMessages[]): MetadataMessage {
  return {
    type: 'Metadata',
    transaction_key: 'deprecated',
    sha256: '',
    ...channels[0]!.metadataFields(),
    duration: round3(Math.max(...channels.map((c) => c.durationSeconds))),
    channels: channels.length,
    transcription_ids: channels.map((c) => c.transcriptionId),
  };
}

/** A partial carries text only: its words share the partial's span evenly (derived, not
 * measured, like the native `characters`), with no confidence (0). */
function interimWords(e: PartialEvent): LiveWord[] {
  const tokens = e.text.split(/\s+/).filter((t) => t !== '');
  const start = seconds(e.start);
  const step = tokens.length === 0 ? 0 : Math.max(0, seconds(e.end) - start) / tokens.length;
  return tokens.map((t, i) => ({
    word: t.toLowerCase(),
    start: round3(start + i * step),
    end: round3(start + (i + 1) * step),
    confidence: 0,
    punctuated_word: t,
  }));
}
