// The session's HTTP client (docs/ingest.md): create (idempotent on the stream id), resume and
// the transcript fetch, with what each answer means to the streamer: a StreamFatalError for a
// refusal no retry mends, a RetryableError for an unreachable server or a retryable status.
// The access key travels in the `accessKey` header only, and no foreign error message (which
// can quote a header value) reaches a message or a log.
import { createHash } from 'node:crypto';
import type { TranscriptJson } from '../core/transcript.js';
import { API_BASE } from '../core/protocol.js';
import { wireSamples } from './capture-accounting.js';
import type { FinalSegment } from './stream-events.js';

/** A failure the streamer cannot retry its way out of. */
export class StreamFatalError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'StreamFatalError';
  }
}

/** Transient: the server is unreachable or answered with a retryable status. */
export class RetryableError extends Error {}

/** 16-64 printable ASCII characters (the server's rule), stable for a stream id. */
export function idempotencyKeyFor(streamId: string): string {
  return `stream-${createHash('sha256').update(streamId, 'utf8').digest('hex').slice(0, 40)}`;
}

/** What a fetch() rejection means, described without its message: a TypeError with a
 * `cause` is a network failure (refused, reset, DNS, TLS) and worth retrying, as is a timeout;
 * any other error means the request itself could not be built (an access key that is not a
 * valid header value, say), which no retry can mend. */
export function describeFetchError(err: unknown): { network: boolean; reason: string } {
  const e = (err ?? {}) as { name?: unknown; cause?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return { network: true, reason: 'no answer in time' };
  if (err instanceof TypeError && e.cause !== undefined && e.cause !== null) {
    const cause = e.cause as { code?: unknown; message?: unknown; errors?: unknown };
    const inner = Array.isArray(cause.errors) ? (cause.errors[0] as { code?: unknown } | undefined) : undefined;
    const code =
      typeof cause.code === 'string'
        ? cause.code
        : typeof inner?.code === 'string'
          ? inner.code
          : typeof cause.message === 'string'
            ? cause.message.slice(0, 120)
            : 'unknown';
    return { network: true, reason: `network error (${code})` };
  }
  const name = typeof e.name === 'string' ? e.name : 'Error';
  return {
    network: false,
    reason: `the request could not be built (${name}); check that the access key is printable ASCII without spaces`,
  };
}

/** An error's message if this client wrote it, else only its name: foreign messages (fetch,
 * ws, http) can quote header values. */
export function safeMessage(err: unknown): string {
  if (err instanceof RetryableError || err instanceof StreamFatalError) return err.message;
  const e = err as { name?: unknown; code?: unknown } | null;
  return `${typeof e?.name === 'string' ? e.name : 'Error'}${typeof e?.code === 'string' ? ` ${e.code}` : ''}`;
}

/** An HTTP answer as this client reads it: the spec's envelope (`message` begins with the
 * error code), or a body that is not JSON kept as its message. */
export interface ApiBody<T> {
  message?: string;
  data?: T;
}

/** The `data` of a session's create and resume answers: the fields this client reads. */
interface SessionAnswer {
  sessionId: string;
  transcriptionId: string;
  status: string;
  epoch: number;
  capturedSamples: string | number;
  missingSamples?: string | number;
}

export function readBody<T>(text: string): ApiBody<T> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as ApiBody<T>;
  } catch {
    // not JSON: kept as the message below
  }
  return { message: text };
}

function answerData<T>(json: ApiBody<T>, what: string): T {
  if (typeof json.data !== 'object' || json.data === null)
    throw new StreamFatalError('UNKNOWN', `${what}: the server's answer has no data`);
  return json.data;
}

/** The error code an answer's message begins with. */
export function codeOf(json: ApiBody<unknown>): string {
  const m = typeof json.message === 'string' ? /^([A-Z_]+)/.exec(json.message) : null;
  return m ? m[1]! : 'UNKNOWN';
}

export interface CreateRequest {
  streamId: string;
  encoding: string;
  title?: string;
  sessionOptions?: Record<string, unknown>;
  call?: { callId: string; speaker: string };
}

export interface CreatedSession {
  sessionId: string;
  transcriptionId: string;
  status: string;
  /** The answer says an earlier run of this stream id got here first: re-attach by resuming. */
  earlierRun: boolean;
}

export type ResumeAnswer = { closed: true } | { closed: false; epoch: number; capturedSamples: number; missingSamples?: string | number };

export class SessionHttpClient {
  /** Aborts requests in flight when the stream is aborted. */
  private readonly requests = new AbortController();

  constructor(
    private readonly url: string,
    private readonly accessKey: string,
  ) {}

  abort(): void {
    this.requests.abort();
  }

  /** POST .../sessions with the Idempotency-Key of the stream id. */
  async create(req: CreateRequest): Promise<CreatedSession> {
    const body: Record<string, unknown> = { options: { ...(req.sessionOptions ?? {}), inputEncoding: req.encoding } };
    if (req.title !== undefined) body.title = req.title;
    if (req.call) {
      body.callId = req.call.callId;
      body.speaker = req.call.speaker;
    }
    const { status, json, headers } = await this.request<SessionAnswer>('POST', `${API_BASE}/stt/realtime/sessions`, body, {
      'Idempotency-Key': idempotencyKeyFor(req.streamId),
    });
    if (status !== 200)
      throw new StreamFatalError(codeOf(json), `creating the session failed: HTTP ${status} ${json?.message ?? ''}`, status);
    const data = answerData(json, 'creating the session');
    return {
      sessionId: data.sessionId,
      transcriptionId: data.transcriptionId,
      status: data.status,
      earlierRun:
        headers.get('idempotent-replayed') === 'true' ||
        wireSamples(data.capturedSamples) > 0 ||
        data.status === 'PAUSED' ||
        data.epoch > 1,
    };
  }

  /** POST .../resume: with the client's capture cursor, or without one to re-attach (`what`
   * names the step in messages). With `closedIsAnswer`, a SESSION_CLOSED refusal is the answer
   * `closed` (the client's own close went through) instead of an error. */
  async resume(
    sessionId: string,
    capturedSamples: number | undefined,
    what: 're-attaching' | 'resume',
    closedIsAnswer = false,
  ): Promise<ResumeAnswer> {
    const body = capturedSamples === undefined ? {} : { capturedSamples: String(capturedSamples) };
    const { status, json } = await this.request<SessionAnswer>('POST', `${API_BASE}/stt/realtime/sessions/${sessionId}/resume`, body);
    if (status === 409 && codeOf(json) === 'SESSION_CLOSED' && closedIsAnswer) return { closed: true };
    if (status !== 200) throw new StreamFatalError(codeOf(json), `${what} failed: HTTP ${status} ${json?.message ?? ''}`, status);
    const data = answerData(json, what);
    return { closed: false, epoch: data.epoch, capturedSamples: wireSamples(data.capturedSamples), missingSamples: data.missingSamples };
  }

  /** The transcription's complete transcript, each segment with the trigger of the final
   * received for it (the stored transcript has none). */
  async transcript(transcriptionId: string, received: ReadonlyMap<string, FinalSegment>): Promise<FinalSegment[]> {
    const { status, json } = await this.request<never>(
      'GET',
      `${API_BASE}/stt/transcriptions/${transcriptionId}/transcript?format=json`,
      undefined,
    );
    if (status !== 200 || !Array.isArray((json as Partial<TranscriptJson>).segments)) throw new Error(`HTTP ${status}`);
    return (json as TranscriptJson).segments.map((s) => {
      const trigger = received.get(s.id)?.trigger;
      return {
        segmentId: s.id,
        text: s.text,
        ...(trigger ? { trigger } : {}),
        startSample: s.startSample,
        endSample: s.endSample,
        startMs: s.startMs,
        endMs: s.endMs,
        words: s.words,
      };
    });
  }

  private async request<T>(
    method: string,
    path: string,
    body: unknown,
    extra: Record<string, string> = {},
  ): Promise<{ status: number; json: ApiBody<T>; headers: Headers }> {
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, {
        method,
        headers: { accessKey: this.accessKey, 'content-type': 'application/json', ...extra },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        // A resume waits for the server to restore the session's open segment after a restart.
        signal: AbortSignal.any([AbortSignal.timeout(60_000), this.requests.signal]),
      });
    } catch (err) {
      const failure = describeFetchError(err);
      // Only the description goes into messages and logs: the error's own message can quote
      // a header value (the access key).
      if (failure.network) throw new RetryableError(`${method} ${path}: ${failure.reason}`);
      throw new StreamFatalError('VALIDATION_FAILED', `${method} ${path}: ${failure.reason}`);
    }
    const json = readBody<T>(await res.text());
    if (res.status >= 500 || res.status === 429) throw new RetryableError(`${method} ${path}: HTTP ${res.status} ${json?.message ?? ''}`);
    return { status: res.status, json, headers: res.headers };
  }
}
