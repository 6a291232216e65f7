// A native real-time session's events as AssemblyAI Universal-Streaming messages (pure). Each
// native segment is one turn (`turn_order` from 0): its partials are Turns with
// `end_of_turn: false`, its final the Turn with `end_of_turn: true` (followed, with
// format_turns, by the same turn formatted: `turn_is_formatted: true`, the native readable
// text). As AssemblyAI does, a partial Turn's `transcript` holds only its final words and
// `words` every word heard so far, `word_is_final` telling them apart; a word is final here
// once two partials in a row agree on it (the recognizer revises its last words as it hears
// more). The end-of-turn Turn's words are the recognizer's, timed and with confidences; a
// partial's words share the partial's span evenly (the recognizer times only finals), with
// confidence 0. The session's `closed` is `Termination`.
import type { ClosedEvent, FinalEvent, PartialEvent, ServerEvent } from '../../../../core/protocol.js';

export interface StreamingWord {
  start: number;
  end: number;
  text: string;
  confidence: number;
  word_is_final: boolean;
}

export interface TurnMessage {
  type: 'Turn';
  turn_order: number;
  turn_is_formatted: boolean;
  end_of_turn: boolean;
  transcript: string;
  end_of_turn_confidence: number;
  words: StreamingWord[];
}

/** An error frame as the SDK reads it (`error`, `error_code`). */
export interface ErrorMessage {
  type: 'Error';
  error_code: number;
  error: string;
}

export interface TerminationMessage {
  type: 'Termination';
  audio_duration_seconds: number;
  session_duration_seconds: number;
}

export type OutMessage = TurnMessage | ErrorMessage | TerminationMessage;

/** AssemblyAI's codes (close codes and `error_code`) the SDK knows. */
export const AAI_CODES = {
  authFailed: 4001,
  insufficientFunds: 4002,
  serverError: 3005,
  inputValidation: 3006,
  maxSessionDuration: 3008,
  concurrencyLimit: 3009,
} as const;

const wordsOf = (text: string): string[] => text.split(/\s+/).filter((w) => w !== '');
const bare = (w: string): string => w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '');

/** Words spread evenly over [startMs, endMs] (the partial's span). */
function spread(words: string[], startMs: number, endMs: number, finalCount: number): StreamingWord[] {
  const step = words.length > 0 ? Math.max(0, endMs - startMs) / words.length : 0;
  return words.map((text, i) => ({
    start: Math.round(startMs + i * step),
    end: Math.round(startMs + (i + 1) * step),
    text,
    confidence: 0,
    word_is_final: i < finalCount,
  }));
}

export interface StreamingMessageOptions {
  formatTurns: boolean;
  sampleRate: number;
}

export class StreamingMessages {
  private turnOrder = 0;
  /** The open segment and the words of its previous partial. */
  private segment: string | null = null;
  private last: string[] = [];
  private heard = false;

  constructor(private readonly o: StreamingMessageOptions) {}

  translate(event: ServerEvent): OutMessage[] {
    switch (event.type) {
      case 'partial':
        return this.partial(event);
      case 'final':
        return this.final(event);
      case 'error':
        return [
          {
            type: 'Error',
            error_code: event.code === 'INSUFFICIENT_CHARACTERS' ? AAI_CODES.insufficientFunds : AAI_CODES.serverError,
            error: event.message,
          },
        ];
      case 'accepting':
        return event.accepting
          ? []
          : [
              {
                type: 'Error',
                error_code: event.reason === 'INSUFFICIENT_CHARACTERS' ? AAI_CODES.insufficientFunds : AAI_CODES.serverError,
                error: `audio is not accepted now (${event.reason ?? 'not accepting'}); audio sent until it is accepted again is dropped`,
              },
            ];
      default:
        return [];
    }
  }

  /** The session's end: its audio (samples captured) and the socket's wall-clock time. */
  termination(closed: ClosedEvent, sessionMs: number): TerminationMessage {
    return {
      type: 'Termination',
      audio_duration_seconds: Math.round(Number(closed.capturedSamples) / this.o.sampleRate),
      session_duration_seconds: Math.round(sessionMs / 1000),
    };
  }

  private partial(e: PartialEvent): OutMessage[] {
    if (this.segment !== e.segmentId) {
      this.segment = e.segmentId;
      this.last = [];
    }
    const words = wordsOf(e.text);
    if (words.length === 0) return [];
    let stable = 0;
    while (stable < words.length && stable < this.last.length && bare(words[stable]!) === bare(this.last[stable]!)) stable++;
    this.last = words;
    this.heard = true;
    return [
      {
        type: 'Turn',
        turn_order: this.turnOrder,
        turn_is_formatted: false,
        end_of_turn: false,
        transcript: words.slice(0, stable).join(' '),
        end_of_turn_confidence: 0,
        words: spread(words, e.start.ms, e.end.ms, stable),
      },
    ];
  }

  private final(e: FinalEvent): OutMessage[] {
    const heard = this.heard && this.segment === e.segmentId;
    this.segment = null;
    this.last = [];
    this.heard = false;
    // A segment with no words that showed none: nothing was said, no turn.
    if (e.text.trim() === '' && !heard) return [];
    const words: StreamingWord[] = e.words
      ? e.words.map((w) => ({
          start: Math.round(w.start.ms),
          end: Math.round(w.end.ms),
          text: w.word,
          confidence: w.confidence ?? 0,
          word_is_final: true,
        }))
      : spread(wordsOf(e.text), e.start.ms, e.end.ms, Number.MAX_SAFE_INTEGER);
    const turn = (formatted: boolean, transcript: string): TurnMessage => ({
      type: 'Turn',
      turn_order: this.turnOrder,
      turn_is_formatted: formatted,
      end_of_turn: true,
      transcript,
      end_of_turn_confidence: 1,
      words,
    });
    const out: OutMessage[] = this.o.formatTurns ? [turn(false, e.rawText ?? e.text), turn(true, e.text)] : [turn(false, e.text)];
    this.turnOrder += 1;
    return out;
  }
}
