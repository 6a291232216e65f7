// The one table of error codes. Every failure the service reports, over HTTP, over the
// socket or from the CLI, is a ScribedError carrying one of these identifiers. Adapters
// never invent message prefixes or status codes of their own; docs/api.md mirrors this
// table and a test keeps the two in step.

export interface ErrorSpec {
  /** Numeric envelope code: the spec's code where it defines one, otherwise -1. */
  readonly wire: number;
  /** HTTP status used when the error ends an HTTP request. */
  readonly http: number;
  /** What the identifier means, for docs and default messages. */
  readonly summary: string;
}

export const ERRORS = {
  // generic
  VALIDATION_FAILED: { wire: -1, http: 422, summary: 'a field is missing, of the wrong type or out of range' },
  BAD_REQUEST: { wire: -1, http: 400, summary: 'the request could not be parsed (malformed JSON, wrong content type)' },
  UNAUTHORIZED: { wire: -1, http: 401, summary: 'missing, unknown or wrong-kind credential' },
  NOT_FOUND: { wire: -1, http: 404, summary: 'the object does not exist or is not owned by the caller' },
  PAYLOAD_TOO_LARGE: { wire: -1, http: 413, summary: 'the request body is over its size limit' },
  INTERNAL: { wire: -1, http: 500, summary: 'an unexpected server fault; logged with its cause' },
  METHOD_NOT_ALLOWED: { wire: -1, http: 405, summary: 'the route does not take this method (see the Allow header)' },
  URI_TOO_LONG: { wire: -1, http: 414, summary: 'a path segment is longer than any id this service issues (over 100 characters)' },
  HEADERS_TOO_LARGE: { wire: -1, http: 431, summary: 'the request line and headers are over 16 KiB' },
  REQUEST_TIMEOUT: {
    wire: -1,
    http: 408,
    summary: 'the headers or the whole request did not arrive in time (docs/api.md, Connections and timeouts)',
  },
  UPGRADE_INVALID: {
    wire: -1,
    http: 400,
    summary:
      'a WebSocket upgrade is malformed (method, Upgrade, Sec-WebSocket-Key, Sec-WebSocket-Version 13 or 8, Sec-WebSocket-Protocol) or names a path with no socket',
  },

  // real-time sessions
  IDEMPOTENCY_KEY_REQUIRED: { wire: -1, http: 400, summary: 'the Idempotency-Key header is missing or malformed' },
  IDEMPOTENCY_CONFLICT: { wire: -1, http: 409, summary: 'the Idempotency-Key was used before with a different body' },
  SESSION_CLOSED: { wire: -1, http: 409, summary: 'the session is closed and takes no more audio or resumes' },
  CAPTURE_CURSOR_MISMATCH: { wire: -1, http: 409, summary: "resume's capturedSamples is below the samples the server already holds" },
  INSUFFICIENT_CHARACTERS: { wire: -1, http: 402, summary: 'the account has no Characters left for more audio' },

  // socket (sent as typed `error` events; HTTP status applies to the handshake only)
  TICKET_INVALID: { wire: -1, http: 401, summary: 'the ticket is unknown, already used, expired, or for another session' },
  ACCESS_KEY_IN_URL: { wire: -1, http: 401, summary: 'an access key was placed in the socket URL; use the header or a ticket' },
  SESSION_BUSY: { wire: -1, http: 409, summary: 'another socket is already attached to this session epoch' },
  SESSION_MOVED: {
    wire: -1,
    http: 409,
    summary: 'this node no longer serves the session: a resume moved it on, or another node adopted it; resume to continue',
  },
  RESUME_REQUIRED: { wire: -1, http: 409, summary: 'the session is paused; call resume before opening a socket' },
  MALFORMED_FRAME: { wire: -1, http: 400, summary: 'a socket frame does not follow docs/protocol.md' },
  INVALID_SAMPLE_SIZE: { wire: -1, http: 400, summary: 'an audio payload is not a whole number of samples' },
  FRAME_TOO_LARGE: { wire: -1, http: 413, summary: 'an audio frame is over the per-frame limit' },
  STALE_EPOCH: { wire: -1, http: 409, summary: 'an audio frame carries an epoch other than the current one' },
  GAP_TOO_LARGE: { wire: -1, http: 422, summary: 'an audio frame starts further ahead than the largest gap the server fills' },
  NOT_ACCEPTING: { wire: -1, http: 409, summary: 'the session is not accepting audio (see the last accepting event)' },
  ENGINE_BUSY: { wire: -1, http: 503, summary: 'every recognizer is in use; try again later' },
  NODE_DRAINING: {
    wire: -1,
    http: 503,
    summary: 'this node is draining before it stops and takes no new socket or resume; another node does (through the balancer)',
  },
  ACCOUNT_STREAM_LIMIT: {
    wire: -1,
    http: 429,
    summary: 'this account already streams as many sessions as it may at once on this node; close one or try later',
  },
  ENGINE_FAILED: { wire: -1, http: 500, summary: 'the recognizer failed for this session' },
  // watch sockets (docs/protocol.md, "Watching a session")
  WATCHER_LIMIT: { wire: -1, http: 429, summary: 'the session already has as many watchers as it may (8); close one or try later' },
  WATCHER_READ_ONLY: { wire: -1, http: 403, summary: 'a watch socket takes only ping; audio, commit and close go on the stream socket' },
  WATCHER_TOO_SLOW: {
    wire: -1,
    http: 503,
    summary: 'the watcher did not read its events fast enough and was let go (close 4002); reconnect',
  },
  SESSION_ELSEWHERE: {
    wire: -1,
    http: 409,
    summary:
      'this node does not serve the session (another node does, or none yet): watch it through the node that holds its stream socket; retry',
  },
  // calls (docs/calls.md)
  CALL_SPEAKER_TAKEN: {
    wire: -1,
    http: 409,
    summary: 'the call already has a leg with this speaker; each party or channel joins once, under its own label',
  },
  CALL_LEG_LIMIT: { wire: -1, http: 409, summary: 'the call already holds as many legs as it may (16)' },
  // erasure (docs/redaction.md)
  TRANSCRIPTION_IN_PROGRESS: {
    wire: -1,
    http: 409,
    summary: 'the transcription (or a leg of the call) is still recording or processing; delete it once it has ended',
  },

  // webhooks (docs/webhooks.md)
  WEBHOOK_ENDPOINT_LIMIT: {
    wire: -1,
    http: 409,
    summary: 'the account already has as many webhook endpoints as it may (20); delete one first',
  },
  WEBHOOK_URL_TOO_LONG: { wire: -1, http: 422, summary: 'a webhook endpoint url is over 2048 characters' },
  WEBHOOK_URL_FORBIDDEN: {
    wire: -1,
    http: 422,
    summary:
      'a webhook endpoint url names a destination webhooks may not reach (loopback, private, link-local, metadata, multicast; docs/webhooks.md)',
  },

  // music projects (spec codes)
  MUSIC_BRIEF_INVALID: { wire: 47001, http: 422, summary: 'the creative brief failed validation' },
  MUSIC_PROJECT_NOT_FOUND: { wire: 47009, http: 404, summary: 'the music project does not exist or is not owned by the account' },
  MUSIC_PROJECT_BUSY: { wire: 47010, http: 409, summary: 'another operation is in progress for the music project' },
  MUSIC_QUOTE_STALE: {
    wire: -1,
    http: 409,
    summary: "the quote is not the project's current active quote (or it expired); request a new quote",
  },

  // interpretation retry (spec codes)
  INTERPRETATION_NOT_RETRYABLE: {
    wire: 47118,
    http: 409,
    summary: 'the target cannot be retried (wrong state or stale plan); request a new retry plan',
  },
  INTERPRETATION_INSUFFICIENT_CHARACTERS: { wire: 47110, http: 402, summary: 'not enough Characters available for the retry' },
  INTERPRETATION_TARGET_NOT_FOUND: {
    wire: 47117,
    http: 404,
    summary: 'the target does not exist, is not in this project, or is not owned by the account',
  },
  INTERPRETATION_IDEMPOTENCY_MISMATCH: { wire: 47111, http: 409, summary: 'the Idempotency-Key was used before with a different body' },

  // voice library
  VOICE_PREBUILT: { wire: -1, http: 403, summary: 'prebuilt voices cannot be changed or deleted' },
  VOICE_FILE_LIMIT: { wire: -1, http: 422, summary: 'a voice holds at most 25 recordings, counting those given at creation' },
  UNSUPPORTED_AUDIO: {
    wire: -1,
    http: 415,
    summary: 'an uploaded file is not audio in a format the endpoint accepts (checked by content, not by name)',
  },
  VOICE_DESIGN_NOT_READY: { wire: -1, http: 409, summary: 'the voice design has not completed' },
  VOICE_DESIGN_QUEUE_FULL: {
    wire: -1,
    http: 429,
    summary: 'the account already has the most voice designs waiting for synthesis; wait for one to finish',
  },
  CALLBACK_URL_FORBIDDEN: {
    wire: -1,
    http: 422,
    summary:
      'callbackUrl names a destination callbacks may not reach (loopback, private, link-local, metadata, multicast; docs/security.md)',
  },

  // dashboard user groups
  USER_GROUP_TOKEN_MISMATCH: { wire: -1, http: 403, summary: "current_token is not the group's current token" },

  // live rules (docs/rules.md)
  RULE_LIMIT: { wire: -1, http: 409, summary: 'the account already has as many live rules as it may (50); delete one first' },
  CATEGORY_LIMIT: { wire: -1, http: 409, summary: 'the account already has as many post-call categories as it may (50); delete one first' },
  RULE_PATTERN_INVALID: {
    wire: -1,
    http: 422,
    summary: 'pattern is not a regular expression this server runs (RE2 syntax: no backreferences or lookaround)',
  },
  PHRASE_NOT_SPOTTABLE: {
    wire: -1,
    http: 422,
    summary: 'a phrase asked to be spotted has a word the keyphrase search has no pronunciation for, or the engine cannot spot phrases',
  },
  // the desk (docs/desk.md)
  DESK_REQUEST_REFUSED: {
    wire: -1,
    http: 403,
    summary: "a desk request that changes state came from another origin or without the page's CSRF token",
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

export class ScribedError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, detail?: string, opts?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(`${code}: ${detail ?? ERRORS[code].summary}`, opts?.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ScribedError';
    this.code = code;
    this.details = opts?.details;
  }

  get spec(): ErrorSpec {
    return ERRORS[this.code];
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERRORS, value);
}

/** Errors that crossed a worker boundary lose their class; rebuild them from their code. */
export function toScribedError(err: unknown): ScribedError {
  if (err instanceof ScribedError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (isErrorCode(code)) {
    const msg = String((err as { message?: unknown }).message ?? '');
    const detail = msg.startsWith(`${code}: `) ? msg.slice(code.length + 2) : msg || undefined;
    return new ScribedError(code, detail, { cause: err });
  }
  return new ScribedError('INTERNAL', undefined, { cause: err });
}
