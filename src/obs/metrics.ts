// Prometheus metrics. Names follow the conventions: `scribed_` prefix, `_total` for
// counters, `_seconds` / `_bytes` for units. One registry per server instance so tests can
// build several apps in one process.
//
// Every labelled counter starts its known label values at 0 (seriesAtZero below): a series
// that first appears at its first increment has no earlier sample, so rate() and increase()
// never see that increment and alerts on it never fire. Nodes are told apart by the scrape's
// `instance` label (docs/operations.md, "Metrics"), not by a label of their own.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ERRORS, type ErrorCode } from '../core/errors.js';
import { INPUT_ENCODING_NAMES } from '../core/audio/encodings.js';
import type { FinalTrigger } from '../core/protocol.js';
import { RULE_CONDITION_KINDS } from '../core/rules.js';

/** How often the event-loop lag metric samples the loop. prom-client's default, 10 ms, is a
 * timer that wakes the event loop 100 times a second, busy or idle: about 6 ms of CPU a second
 * on an idle node here, the largest part of its idle cost (docs/scaling.md). Ten samples a second still
 * see every stall long enough to matter to a 20 ms frame stream. */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** prom-client's defaults that are gauges named `*_total`: promtool's lint refuses them
 * ("non-counter metrics should not have _total suffix"); the same figures are exported
 * without the suffix (`nodejs_active_handles` ...), so these are dropped. */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** prom-client's process and Node.js metrics under `prefix`, minus the misnamed gauges. */
export function collectProcessMetrics(registry: Registry, prefix: string, opts: { eventLoopMonitoringPrecision?: number } = {}): void {
  collectDefaultMetrics({ register: registry, prefix, ...opts });
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(`${prefix}${name}`);
}

/** Start each listed label set of a counter at 0, so its first increment is seen by rate(). */
export function seriesAtZero<L extends string>(counter: Counter<L>, labelSets: Iterable<Partial<Record<L, string | number>>>): void {
  for (const labels of labelSets) counter.inc(labels, 0);
}

/** States a session held in memory can be in: a closed session leaves memory at once (its
 * closes are counted by scribed_sessions_closed_total instead). */
export const LIVE_SESSION_STATES = ['RECORDING', 'PAUSED'] as const;
export const FINAL_TRIGGERS: ReadonlyArray<FinalTrigger | 'batch'> = ['commit', 'close', 'bound', 'pause', 'shutdown', 'vad', 'batch'];
/** Codes a socket frame or message is rejected with (LiveSession.emitError). */
export const FRAME_ERROR_CODES: readonly ErrorCode[] = [
  'MALFORMED_FRAME',
  'INVALID_SAMPLE_SIZE',
  'FRAME_TOO_LARGE',
  'STALE_EPOCH',
  'GAP_TOO_LARGE',
  'NOT_ACCEPTING',
  'SESSION_CLOSED',
  'INSUFFICIENT_CHARACTERS',
  'ENGINE_FAILED',
  'INTERNAL',
];
export const TICKET_OUTCOMES = [
  'issued',
  'accepted',
  'used',
  'expired',
  'unknown',
  'forged',
  'wrong_session',
  'wrong_scope',
  'desk_session_ended',
] as const;
export const BATCH_JOB_OUTCOMES = ['queued', 'completed', 'failed'] as const;
export const INTERPRETATION_RETRY_OUTCOMES = ['retried', 'replayed', 'key_mismatch', 'not_found', 'refused', 'insufficient'] as const;
export const CALLBACK_OUTCOMES = ['delivered', 'retry', 'failed'] as const;
/** A webhook attempt's outcome (src/core/webhook-delivery.ts AttemptVerdict). */
export const WEBHOOK_OUTCOMES = ['delivered', 'retry', 'failed', 'gone'] as const;
export const WATCHER_DROP_REASONS = ['slow'] as const;
/** The two sockets and what became of an upgrade request: `upgraded` (the socket is open and
 * its session attached), `refused` (an error answer before the upgrade: the HTTP status and
 * code are in scribed_http_errors_total), `attach_failed` (upgraded, then the session could
 * not take the socket: closed at once with the code). */
export const WS_SOCKETS = ['stream', 'watch'] as const;
export const WS_UPGRADE_OUTCOMES = ['upgraded', 'refused', 'attach_failed'] as const;
export type WsSocket = (typeof WS_SOCKETS)[number];
export type WsUpgradeOutcome = (typeof WS_UPGRADE_OUTCOMES)[number];

/** HTTP request duration buckets: up to the 600 s request timeout (batch uploads, long
 * polls), so the slowest requests land in a bucket and not only in +Inf. */
export const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export function createMetrics(opts: { defaults?: boolean } = {}) {
  const registry = new Registry();
  if (opts.defaults !== false) collectProcessMetrics(registry, 'scribed_', { eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const r = [registry];

  const metrics = {
    registry,
    sessions: new Gauge({
      name: 'scribed_sessions',
      help: 'Live real-time sessions held in memory, by state (RECORDING, PAUSED)',
      labelNames: ['state'],
      registers: r,
    }),
    readyChecks: new Gauge({
      name: 'scribed_ready_checks',
      help: 'The /readyz checks at this scrape, 1 passing and 0 failing: store (open), engine (started), capacity (a recognizer free for a new socket)',
      labelNames: ['check'],
      registers: r,
    }),
    storeFailovers: new Counter({
      name: 'scribed_store_failovers_total',
      help: 'Times this node moved its PostgreSQL pool to another host of --database-url (the primary was lost and another host is read-write)',
      registers: r,
    }),
    sessionsClosed: new Counter({
      name: 'scribed_sessions_closed_total',
      help: 'Real-time sessions closed on this node (their final transcript completed)',
      registers: r,
    }),
    decodeBacklog: new Gauge({
      name: 'scribed_decode_backlog_seconds',
      help: 'Live audio acknowledged and sent to the decoders but not decoded yet, summed over streams (how far recognition runs behind)',
      registers: r,
    }),
    sessionsCreated: new Counter({
      name: 'scribed_sessions_created_total',
      help: 'Real-time sessions created (idempotent replays excluded)',
      registers: r,
    }),
    callsCreated: new Counter({
      name: 'scribed_calls_created_total',
      help: 'Calls created (idempotent replays excluded); their legs count as sessions',
      registers: r,
    }),
    /** Counted by the resume route, once per 200 answer, whichever path the resume took
     * (the session in this node's memory, or only in the store). */
    resumesAnswered: new Counter({
      name: 'scribed_session_resumes_total',
      help: 'Session resumes answered 200 by this node',
      registers: r,
    }),
    audioSeconds: new Counter({
      name: 'scribed_audio_received_seconds_total',
      help: 'Audio accepted into sessions, in seconds of input audio (gap fill included)',
      labelNames: ['encoding'],
      registers: r,
    }),
    audioBytes: new Counter({
      name: 'scribed_audio_received_bytes_total',
      help: 'Audio payload bytes received on sockets',
      labelNames: ['encoding'],
      registers: r,
    }),
    duplicateSamples: new Counter({
      name: 'scribed_duplicate_samples_total',
      help: 'Samples dropped because they had already been received',
      registers: r,
    }),
    gapSamples: new Counter({ name: 'scribed_gap_samples_total', help: 'Samples of silence inserted for gaps in the audio', registers: r }),
    acks: new Counter({ name: 'scribed_acks_total', help: 'Audio acknowledgements sent', registers: r }),
    frameErrors: new Counter({
      name: 'scribed_frame_errors_total',
      help: 'Socket frames rejected, by error code',
      labelNames: ['code'],
      registers: r,
    }),
    segments: new Counter({
      name: 'scribed_segments_total',
      help: 'Final segments emitted, by trigger',
      labelNames: ['trigger'],
      registers: r,
    }),
    recognitionLatency: new Histogram({
      name: 'scribed_recognition_latency_seconds',
      help: "Time from the end of a segment's audio (commit, close or bound) to its final result",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: r,
    }),
    // Deferred recognition (src/core/recognition-backlog.ts): sessions admitted while every
    // recognizer was busy, and how far behind their audio recognition ran.
    recognitionDeferred: new Counter({
      name: 'scribed_recognition_deferred_total',
      help: 'Sockets served while every recognizer was busy: their recognition waited for one (deferred)',
      registers: r,
    }),
    recognizerYields: new Counter({
      name: 'scribed_recognizer_yields_total',
      help: 'Recognizers a session gave back between segments for an account below its fair share (its recognition then waited, deferred)',
      registers: r,
    }),
    deferredSessions: new Gauge({
      name: 'scribed_recognition_deferred_sessions',
      help: 'Sessions whose recognition runs behind their audio: waiting for a recognizer or catching up',
      registers: r,
    }),
    deferredBacklog: new Gauge({
      name: 'scribed_recognition_deferred_backlog_seconds',
      help: 'Acknowledged audio of deferred sessions waiting for a recognizer, summed over the node (bounded by --max-deferred-seconds)',
      registers: r,
    }),
    recognitionWait: new Histogram({
      name: 'scribed_recognition_wait_seconds',
      help: 'How long a deferred session waited for a recognizer',
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900],
      registers: r,
    }),
    recognitionLag: new Histogram({
      name: 'scribed_recognition_lag_seconds',
      help: 'How long deferred audio waited between its acknowledgement and the recognizer hearing it',
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900],
      registers: r,
    }),
    engineRtf: new Histogram({
      name: 'scribed_engine_realtime_factor',
      help: 'Recognizer time divided by audio time, per processed frame batch',
      buckets: [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5],
      registers: r,
    }),
    watchers: new Gauge({
      name: 'scribed_session_watchers',
      help: "Watch sockets open on this node (read-only subscribers to a session's events, docs/protocol.md)",
      registers: r,
    }),
    watchersDropped: new Counter({
      name: 'scribed_session_watchers_dropped_total',
      help: 'Watch sockets the server let go, by reason (slow: over the buffered-bytes bound)',
      labelNames: ['reason'],
      registers: r,
    }),
    tickets: new Counter({
      name: 'scribed_ticket_outcomes_total',
      help: 'Ticket issue and handshake outcomes',
      labelNames: ['outcome'],
      registers: r,
    }),
    batchJobs: new Counter({
      name: 'scribed_batch_jobs_total',
      help: 'Batch jobs by outcome (queued, completed, failed)',
      labelNames: ['outcome'],
      registers: r,
    }),
    batchAudioSeconds: new Counter({
      name: 'scribed_batch_audio_seconds_total',
      help: 'Audio transcribed by completed batch jobs, in seconds',
      registers: r,
    }),
    charactersDebited: new Counter({
      name: 'scribed_characters_debited_total',
      help: 'Characters debited for real-time audio',
      registers: r,
    }),
    interpretationRetries: new Counter({
      name: 'scribed_interpretation_retries_total',
      help: 'Interpretation retry requests, by outcome (retried, replayed, refused, ...)',
      labelNames: ['outcome'],
      registers: r,
    }),
    callbackDeliveries: new Counter({
      name: 'scribed_callback_deliveries_total',
      help: 'Voice design callback delivery attempts, by outcome (delivered, retry, failed)',
      labelNames: ['outcome'],
      registers: r,
    }),
    webhookDeliveries: new Counter({
      name: 'scribed_webhook_attempts_total',
      help: 'Webhook delivery attempts made by this node, by outcome (delivered, retry, failed, gone)',
      labelNames: ['outcome'],
      registers: r,
    }),
    webhookAttemptSeconds: new Histogram({
      name: 'scribed_webhook_attempt_seconds',
      help: 'Time from sending a webhook to its answer (or timeout, or connection error)',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
    webhookOutboxDepth: new Gauge({
      name: 'scribed_webhook_outbox_depth',
      help: 'Webhook deliveries pending in the store (all nodes), sampled by this node',
      registers: r,
    }),
    webhookOutboxOldestSeconds: new Gauge({
      name: 'scribed_webhook_outbox_oldest_seconds',
      help: 'Age of the oldest pending webhook delivery (0 when none), sampled by this node',
      registers: r,
    }),
    recordingBytes: new Counter({
      name: 'scribed_voice_recording_bytes_total',
      help: 'Bytes of voice recordings accepted into the library',
      registers: r,
    }),
    httpErrors: new Counter({
      name: 'scribed_http_errors_total',
      help: 'HTTP requests and socket handshakes answered with an error, by error code (src/core/errors.ts) and status',
      labelNames: ['code', 'status_code'],
      registers: r,
    }),
    wsUpgrades: new Counter({
      name: 'scribed_ws_upgrades_total',
      help: 'WebSocket upgrade requests by socket (stream, watch) and outcome (upgraded, refused, attach_failed)',
      labelNames: ['socket', 'outcome'],
      registers: r,
    }),
    connectionsDropped: new Counter({
      name: 'scribed_http_connections_dropped_total',
      help: 'Connections closed at once because SCRIBED_MAX_CONNECTIONS were open',
      registers: r,
    }),
    // Admission by capacity (src/engine/calibration.ts, docs/scaling.md "Sizing a node"): set
    // once at start; the labelled ones only when a calibration exists (no series otherwise).
    maxDecoders: new Gauge({
      name: 'scribed_engine_max_decoders',
      help: 'Decoders the pool may run (--max-decoders, or the measured capacity when not set)',
      registers: r,
    }),
    capacityStreams: new Gauge({
      name: 'scribed_capacity_streams',
      help: 'Real-time 8 kHz streams this node carries within the latency goal (measured capacity), labelled by the limit that binds (cpu, memory, bound)',
      labelNames: ['limit'],
      registers: r,
    }),
    capacityLimitStreams: new Gauge({
      name: 'scribed_capacity_limit_streams',
      help: 'Real-time streams each resource allows: cpu (cores x 0.8 / cost), memory (available x 0.9 / per decoder)',
      labelNames: ['resource'],
      registers: r,
    }),
    capacityCores: new Gauge({
      name: 'scribed_capacity_cores',
      help: 'Cores this node may use (scheduler affinity, cut by a cgroup CPU quota)',
      registers: r,
    }),
    recognizerCost: new Gauge({
      name: 'scribed_recognizer_cost_ratio',
      help: 'Measured recognizer CPU seconds per second of real-time audio, by audio profile (start-up calibration: telephony)',
      labelNames: ['profile'],
      registers: r,
    }),
    decoderMemory: new Gauge({
      name: 'scribed_decoder_memory_bytes',
      help: 'Measured resident memory one further decoder adds (the first also loads the shared models), by audio profile (start-up calibration)',
      labelNames: ['profile'],
      registers: r,
    }),
    httpDuration: new Histogram({
      name: 'scribed_http_request_duration_seconds',
      help: 'HTTP request durations by route and status',
      labelNames: ['method', 'route', 'status_code'],
      buckets: HTTP_DURATION_BUCKETS,
      registers: r,
    }),
    ruleAlerts: new Counter({
      name: 'scribed_rule_alerts_total',
      help: "Alerts raised by live rules (docs/rules.md), by the rule's condition",
      labelNames: ['condition'],
      registers: r,
    }),
    phraseSpotters: new Counter({
      name: 'scribed_phrase_spotters_total',
      help: 'Keyphrase decoders asked for by sessions whose account spots phrases (docs/analytics.md), by outcome: opened, busy (no decoder free: the session goes on without spotting), failed',
      labelNames: ['outcome'],
      registers: r,
    }),
    categoryMatches: new Counter({
      name: 'scribed_category_matches_total',
      help: 'Finished calls (and lone transcriptions) that matched a post-call category (docs/analytics.md), by category id',
      labelNames: ['category'],
      registers: r,
    }),
  };
  const m = metrics;
  for (const state of LIVE_SESSION_STATES) m.sessions.set({ state }, 0);
  seriesAtZero(
    m.audioSeconds,
    INPUT_ENCODING_NAMES.map((encoding) => ({ encoding })),
  );
  seriesAtZero(
    m.audioBytes,
    INPUT_ENCODING_NAMES.map((encoding) => ({ encoding })),
  );
  seriesAtZero(
    m.frameErrors,
    FRAME_ERROR_CODES.map((code) => ({ code })),
  );
  seriesAtZero(
    m.segments,
    FINAL_TRIGGERS.map((trigger) => ({ trigger })),
  );
  seriesAtZero(
    m.tickets,
    TICKET_OUTCOMES.map((outcome) => ({ outcome })),
  );
  seriesAtZero(
    m.batchJobs,
    BATCH_JOB_OUTCOMES.map((outcome) => ({ outcome })),
  );
  seriesAtZero(
    m.interpretationRetries,
    INTERPRETATION_RETRY_OUTCOMES.map((outcome) => ({ outcome })),
  );
  seriesAtZero(
    m.callbackDeliveries,
    CALLBACK_OUTCOMES.map((outcome) => ({ outcome })),
  );
  seriesAtZero(
    m.webhookDeliveries,
    WEBHOOK_OUTCOMES.map((outcome) => ({ outcome })),
  );
  seriesAtZero(
    m.watchersDropped,
    WATCHER_DROP_REASONS.map((reason) => ({ reason })),
  );
  seriesAtZero(
    m.httpErrors,
    (Object.keys(ERRORS) as ErrorCode[]).map((code) => ({ code, status_code: String(ERRORS[code].http) })),
  );
  seriesAtZero(
    m.phraseSpotters,
    ['opened', 'busy', 'failed'].map((outcome) => ({ outcome })),
  );
  seriesAtZero(
    m.ruleAlerts,
    RULE_CONDITION_KINDS.map((condition) => ({ condition })),
  );
  seriesAtZero(
    m.wsUpgrades,
    WS_SOCKETS.flatMap((socket) => WS_UPGRADE_OUTCOMES.map((outcome) => ({ socket, outcome }))),
  );
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;

/** Count an error answer (HTTP, or a refused socket handshake) by its code. */
export function countHttpError(metrics: Metrics, code: ErrorCode): void {
  metrics.httpErrors.inc({ code, status_code: String(ERRORS[code].http) });
}

/** A gauge of float sums (the engine adds and subtracts seconds per batch) can be left at a
 * rounding residue such as 5.55e-17 when nothing is pending: report whole microseconds. */
export function roundedSeconds(seconds: number): number {
  return Math.max(0, Math.round(seconds * 1e6) / 1e6);
}
