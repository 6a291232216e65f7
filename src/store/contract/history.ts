// History rows (real-time and batch alike) and their final segments (areas/history.ts).
import type { SessionEndReason, TranscriptionStatus } from '../../core/session-status.js';
import type { SegmentWord } from '../../core/word-span.js';

export type { SessionEndReason, TranscriptionStatus, SegmentWord };

export interface TranscriptionRecord {
  id: string; // stt_...
  accountId: string;
  kind: 'realtime' | 'batch';
  sessionId: string | null;
  title: string;
  status: TranscriptionStatus;
  languageHint: string | null;
  /** Input sample rate of the audio, so segment sample positions convert to time. */
  sampleRateHz: number;
  audioSamples: bigint;
  /** The call this row is a leg of, and its speaker there (both null outside a call). */
  callId: string | null;
  speaker: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  /** A real-time row once its session ended: closed, or expired idle; null before, and for batch rows. */
  endReason: SessionEndReason | null;
}

export interface SegmentRecord {
  transcriptionId: string;
  index: number;
  /** Session-wide sample positions, input rate. */
  startSample: bigint;
  endSample: bigint;
  text: string;
  words: SegmentWord[];
  /** Text-option results (rawText, entities); absent when no text option was set. */
  annotations?: Record<string, unknown>;
  createdAt: string;
}

/** Keyset position in the History list: the last row of the previous page. */
export interface HistoryPosition {
  createdAt: string;
  id: string;
}

export interface HistoryStore {
  getTranscription(transcriptionId: string, accountId: string): Promise<TranscriptionRecord | null>;
  /** `endReason`: why the session ended, written with its final status (the first one given stays). */
  setTranscriptionStatus(
    transcriptionId: string,
    status: TranscriptionStatus,
    audioSamples?: bigint,
    endReason?: SessionEndReason,
  ): Promise<void>;
  /** Insert a final segment (idempotent on (transcriptionId, index)). */
  appendSegment(segment: SegmentRecord): Promise<void>;
  listSegments(transcriptionId: string): Promise<SegmentRecord[]>;
  /** An account's History rows of both kinds, newest first ((createdAt, id) descending),
   * strictly after `after` when given. */
  listTranscriptions(accountId: string, limit: number, after?: HistoryPosition): Promise<TranscriptionRecord[]>;
}
