// OpenAI Realtime transcription events: the client's events read (pure), and a native
// session's events as the OpenAI events a transcription session sends. Each native segment is
// one conversation item (`item_id`); with server VAD its first words are
// `input_audio_buffer.speech_started` and its end (the native VAD final) `speech_stopped` then
// `committed`; with manual commit, `input_audio_buffer.commit` is the native commit and its
// `committed` names the item. A delta cannot be taken back, and the recognizer revises its
// partial hypothesis as it hears more: so a `...input_audio_transcription.delta` carries only
// words two partials in a row agree on (the stable prefix), and at the final the words of the
// transcript past as many as were sent. The final may still revise a word sent (compared
// without case and punctuation: the transcript is the readable text); `...completed` carries
// the whole transcript, which is what counts.
import type { FinalEvent, PartialEvent, ServerEvent } from '../../../core/protocol.js';

export type ClientEvent =
  | { type: 'session.update'; session: unknown; eventId: string | null }
  | { type: 'transcription_session.update'; session: unknown; eventId: string | null }
  | { type: 'input_audio_buffer.append'; audio: Buffer; eventId: string | null }
  | { type: 'input_audio_buffer.commit'; eventId: string | null }
  | { type: 'input_audio_buffer.clear'; eventId: string | null };

export interface OpenAiErrorEvent {
  type: 'error';
  event_id: string;
  error: {
    type: 'invalid_request_error' | 'server_error';
    code: string | null;
    message: string;
    param: string | null;
    event_id: string | null;
  };
}

export type ReadClient =
  { ok: true; event: ClientEvent } | { ok: false; code: string; message: string; param: string | null; eventId: string | null };

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** One text message of the client. */
export function readClientEvent(text: string): ReadClient {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { ok: false, code: 'invalid_json', message: 'The event is not valid JSON.', param: null, eventId: null };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { ok: false, code: 'invalid_json', message: 'An event is a JSON object.', param: null, eventId: null };
  const o = v as Record<string, unknown>;
  const eventId = typeof o.event_id === 'string' ? o.event_id : null;
  switch (o.type) {
    case 'session.update':
    case 'transcription_session.update':
      return { ok: true, event: { type: o.type, session: o.session, eventId } };
    case 'input_audio_buffer.append': {
      if (typeof o.audio !== 'string' || o.audio.length % 4 === 1 || !BASE64.test(o.audio)) {
        return {
          ok: false,
          code: 'invalid_value',
          message: 'audio: base64-encoded audio bytes in the session format',
          param: 'audio',
          eventId,
        };
      }
      return { ok: true, event: { type: o.type, audio: Buffer.from(o.audio, 'base64'), eventId } };
    }
    case 'input_audio_buffer.commit':
    case 'input_audio_buffer.clear':
      return { ok: true, event: { type: o.type, eventId } };
    default:
      return {
        ok: false,
        code: 'invalid_value',
        message: `Invalid value: '${String(o.type)}'. A transcription session takes session.update, transcription_session.update and input_audio_buffer.append, .commit and .clear.`,
        param: 'type',
        eventId,
      };
  }
}

export interface RealtimeMessageOptions {
  /** Server VAD (speech events, the native VAD commits) or manual commit. */
  vad: boolean;
  /** Prefix of the item ids (unique per session). */
  itemPrefix: string;
}

export type OutEvent = Record<string, unknown> | OpenAiErrorEvent;
type Out = OutEvent;

interface Item {
  id: string;
  /** Words sent in deltas. */
  sent: string[];
  /** Words of the previous partial. */
  last: string[];
  started: boolean;
  committed: boolean;
}

const wordsOf = (text: string): string[] => text.split(/\s+/).filter((w) => w !== '');
const bare = (w: string): string => w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '');
const same = (a: string, b: string): boolean => bare(a) === bare(b);

export class RealtimeMessages {
  private seq = 0;
  private readonly items = new Map<string, Item>();
  private previousItem: string | null = null;
  /** Segments open at an `input_audio_buffer.clear`: their events are not sent. */
  private readonly cleared = new Set<string>();
  private openSegment: string | null = null;
  /** The last segments completed (a late `committed` of theirs says nothing). */
  private readonly completed: string[] = [];

  constructor(private readonly o: RealtimeMessageOptions) {}

  eventId(): string {
    this.seq += 1;
    return `event_${this.o.itemPrefix}_${this.seq}`;
  }

  error(
    code: string | null,
    message: string,
    param: string | null = null,
    clientEventId: string | null = null,
    type: 'invalid_request_error' | 'server_error' = 'invalid_request_error',
  ): OpenAiErrorEvent {
    return { type: 'error', event_id: this.eventId(), error: { type, code, message, param, event_id: clientEventId } };
  }

  /** The segment open now is dropped from the events (`input_audio_buffer.clear`). */
  clear(): Out {
    if (this.openSegment !== null) this.cleared.add(this.openSegment);
    return { type: 'input_audio_buffer.cleared', event_id: this.eventId() };
  }

  translate(event: ServerEvent): Out[] {
    switch (event.type) {
      case 'partial':
        return this.partial(event);
      case 'final':
        return this.final(event);
      case 'committed':
        if (event.segmentId === null)
          return [this.error('input_audio_buffer_commit_empty', 'Error committing input audio buffer: the buffer holds no speech.')];
        // The native `committed` may come after its segment's final, which committed it already.
        if (this.cleared.has(event.segmentId) || this.completed.includes(event.segmentId)) return [];
        return this.committed(this.item(event.segmentId));
      case 'error':
        return [this.error(event.code.toLowerCase(), event.message, null, null, event.fatal ? 'server_error' : 'invalid_request_error')];
      case 'accepting':
        return event.accepting
          ? []
          : [
              this.error(
                (event.reason ?? 'not_accepting').toLowerCase(),
                `audio is not accepted now (${event.reason ?? 'not accepting'}); audio sent until it is accepted again is dropped`,
              ),
            ];
      default:
        return [];
    }
  }

  private item(segmentId: string): Item {
    let it = this.items.get(segmentId);
    if (!it) {
      it = { id: `item_${this.o.itemPrefix}_${segmentId.replace(/^seg_/, '')}`, sent: [], last: [], started: false, committed: false };
      this.items.set(segmentId, it);
    }
    return it;
  }

  private started(it: { id: string; started: boolean }, startMs: number): Out[] {
    if (it.started) return [];
    it.started = true;
    return this.o.vad
      ? [{ type: 'input_audio_buffer.speech_started', event_id: this.eventId(), audio_start_ms: startMs, item_id: it.id }]
      : [];
  }

  /** The words of `words` past those sent, as a delta (empty: nothing new). */
  private delta(it: Item, words: string[]): Out[] {
    if (words.length <= it.sent.length) return [];
    const more = words.slice(it.sent.length);
    const delta = `${it.sent.length > 0 ? ' ' : ''}${more.join(' ')}`;
    it.sent = [...it.sent, ...more];
    return [
      { type: 'conversation.item.input_audio_transcription.delta', event_id: this.eventId(), item_id: it.id, content_index: 0, delta },
    ];
  }

  private committed(it: { id: string; committed: boolean }): Out[] {
    if (it.committed) return [];
    it.committed = true;
    const out = { type: 'input_audio_buffer.committed', event_id: this.eventId(), previous_item_id: this.previousItem, item_id: it.id };
    this.previousItem = it.id;
    return [out];
  }

  private partial(e: PartialEvent): Out[] {
    this.openSegment = e.segmentId;
    if (this.cleared.has(e.segmentId) || e.text.trim() === '') return [];
    const it = this.item(e.segmentId);
    const words = wordsOf(e.text);
    // Words this partial and the previous one agree on, from the start.
    let stable = 0;
    while (stable < words.length && stable < it.last.length && same(words[stable]!, it.last[stable]!)) stable++;
    it.last = words;
    const out = this.started(it, e.start.ms);
    // A stable prefix that contradicts words already sent waits for the final.
    if (stable >= it.sent.length && it.sent.every((w, i) => same(w, words[i]!))) out.push(...this.delta(it, words.slice(0, stable)));
    return out;
  }

  private final(e: FinalEvent): Out[] {
    if (this.openSegment === e.segmentId) this.openSegment = null;
    if (this.cleared.delete(e.segmentId)) return [];
    const known = this.items.has(e.segmentId);
    // A segment that never had words and was not committed by the client: nothing was heard.
    if (e.text.trim() === '' && !(known && this.items.get(e.segmentId)!.committed)) return [];
    const it = this.item(e.segmentId);
    const out: Out[] = [...this.started(it, e.start.ms)];
    if (this.o.vad && !it.committed)
      out.push({ type: 'input_audio_buffer.speech_stopped', event_id: this.eventId(), audio_end_ms: e.end.ms, item_id: it.id });
    out.push(...this.committed(it));
    // The transcript's words past as many as were sent (those the final revised stay as sent).
    out.push(...this.delta({ ...it }, wordsOf(e.text)));
    const seconds = Math.max(0, Math.round((e.end.ms - e.start.ms) / 10) / 100);
    out.push({
      type: 'conversation.item.input_audio_transcription.completed',
      event_id: this.eventId(),
      item_id: it.id,
      content_index: 0,
      transcript: e.text,
      usage: { type: 'duration', seconds },
    });
    this.items.delete(e.segmentId);
    this.completed.push(e.segmentId);
    if (this.completed.length > 8) this.completed.shift();
    return out;
  }
}
