// SessionStreamer's options, their defaults, and the summary end() returns.
import type { Logger } from 'pino';
import type { InputEncodingName } from '../core/audio/encodings.js';
import { DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';
import type { ClientMetrics } from './metrics.js';
import type { FinalSegment } from './stream-events.js';

export interface SessionStreamerOptions {
  /** Server base, http(s)://host:port. */
  url: string;
  accessKey: string;
  encoding: InputEncodingName;
  /** Stable id of this stream (a call id, an RTP SSRC + source, a file name): the session's
   * Idempotency-Key is derived from it. */
  streamId: string;
  title?: string;
  /** Session options beside inputEncoding (segmentCommitMode, vocabularyHints, ...). */
  sessionOptions?: Record<string, unknown>;
  /** The call this session is a leg of, and its speaker there (both or neither): sent in the
   * create body, so they are part of its idempotency (a re-attach names the same call). */
  call?: { callId: string; speaker: string };
  /** Bound of the unacknowledged-audio ring, in samples. */
  bufferSamples: number;
  logger: Logger;
  metrics?: ClientMetrics;
  /** What write() does when the ring is full: 'block' waits for acknowledgements (files and
   * pipes, which can wait); 'drop-oldest' drops the oldest unacknowledged audio, counted and
   * logged as overflow (live capture, which cannot). Default 'block'. */
  onFull?: 'block' | 'drop-oldest';
  /** Largest frame, ms of audio (default 100). */
  frameMs?: number;
  /** Most audio sent but not yet acknowledged, ms (default 2000). */
  windowMs?: number;
  backoff?: BackoffPolicy;
  /** While the server says accepting: false (no Characters), how often to ask again by
   * resuming, ms (default 15000). */
  acceptingRetryMs?: number;
  /** How long start() keeps trying to create the session while the server cannot be reached
   * (a wrong --url, a server not started), ms (default 30000); then it fails with UNREACHABLE.
   * Once the session exists, reconnects go on without a bound (a server restart). */
  connectTimeoutMs?: number;
  /** How long the stream waits for the account to get Characters again, ms (default 60000);
   * then it fails with INSUFFICIENT_CHARACTERS, naming the fix. */
  noCreditTimeoutMs?: number;
}

/** The command an operator runs to give an account Characters (docs/operations.md). */
export const CREDIT_FIX = 'an operator adds Characters with `scribed accounts credit --account ACCOUNT_ID --characters N`';

export interface StreamSummary {
  sessionId: string;
  transcriptionId: string;
  /** Session-wide capture cursor at the end (audio of an earlier run of a re-attached
   * client included). */
  capturedSamples: number;
  /** Samples this run captured from its input. */
  capturedThisRun: number;
  acknowledgedSamples: number;
  /** The server's capturedSamples in its `closed` event (null if the close was confirmed by
   * a later SESSION_CLOSED instead). */
  serverCapturedSamples: number | null;
  overflowSamples: number;
  /** Samples this client sent that the server reported filling with silence (`gap`). */
  gapSamples: number;
  reconnects: number;
  resumes: number;
  segments: number;
  /** The complete transcript from the server when it could be fetched, else the finals
   * this client received. */
  finals: FinalSegment[];
}

export type Defaulted = 'onFull' | 'frameMs' | 'windowMs' | 'backoff' | 'acceptingRetryMs' | 'connectTimeoutMs' | 'noCreditTimeoutMs';

export type StreamerOptions = SessionStreamerOptions & Required<Pick<SessionStreamerOptions, Defaulted>>;

export function withDefaults(opts: SessionStreamerOptions): StreamerOptions {
  return {
    onFull: 'block',
    frameMs: 100,
    windowMs: 2000,
    backoff: DEFAULT_BACKOFF,
    acceptingRetryMs: 15_000,
    connectTimeoutMs: 30_000,
    noCreditTimeoutMs: 60_000,
    ...opts,
  };
}
