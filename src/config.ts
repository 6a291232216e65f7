// Service configuration: flags over environment over defaults, validated once and frozen.
import fs from 'node:fs';
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { EngineKind } from './engine/types.js';
import { POSTGRES_DEFAULTS } from './store/sql/postgres-db.js';
import type { StoreSettings } from './store/index.js';
import { DEFAULT_RETRY_BASE_MS } from './core/webhook-delivery.js';
import { ARRANGEMENT_RETRY_ENV, DEFAULT_ARRANGEMENT_RETRY_BASE_MS, MAX_ARRANGEMENT_RETRY_BASE_MS } from './music/arrangement-retry.js';
import { DEFAULT_DESIGN_CONCURRENCY, DESIGN_CONCURRENCY_ENV, MAX_DESIGN_CONCURRENCY } from './voices/design-limits.js';
import { OutboundPolicy, splitCidrList } from './core/outbound-policy.js';
import { parsePostgresUrl } from './core/postgres-url.js';
import { parseClientSecrets } from './core/audiohook/signature.js';
import { checkSiprecSettings, siprecSettingsFrom, type SiprecFlags, type SiprecSettings } from './core/sip/settings.js';
import { packageRoot } from './threads/package-root.js';
import type { Resolver } from './outbound/guarded-transport.js';

// Its home is below the engine (which needs it); re-exported for the callers that import it from here.
export { packageRoot };

/** The provisional --max-decoders without the operator's: the measured capacity replaces it
 * at start (src/engine/calibration.ts), and it applies as is when the measurement fails. */
export const FALLBACK_MAX_DECODERS = 4;
/** How long a draining node keeps calls that have not moved (or cannot move) before it stops:
 * long, as Deepgram self-hosted's grace is, so a call that cannot resume elsewhere (a facade's)
 * normally ends by itself first. 30 min. */
export const DEFAULT_DRAIN_GRACE_MS = 30 * 60_000;
/** How long a session with no socket and nothing stored lives before it ends (docs/protocol.md,
 * "Idle sessions expire"): an hour, long beside any reconnect (peers that end a session after
 * seconds without audio are what their users complain of), short beside a forgotten one. */
export const DEFAULT_SESSION_IDLE_EXPIRY_MS = 60 * 60_000;

export interface ServiceConfig {
  host: string;
  port: number;
  /** Node-local state: the SQLite store (without a database URL), spools, batch audio, keys. */
  dataDir: string;
  /** postgres://... : the store shared by every node (docs/scaling.md); absent: SQLite. */
  databaseUrl: string | undefined;
  /** Derived once from databaseUrl: nodes share the store (PostgreSQL), so spools, recordings,
   * server keys and job claims live in it; false: one node on its embedded SQLite store. */
  sharedStore: boolean;
  /** PostgreSQL pool per process: connections, wait for one, statement bound. */
  databasePoolSize: number;
  databaseConnectTimeoutMs: number;
  databaseStatementTimeoutMs: number;
  /** With several hosts in the URL: how long an operation waits for a read-write one once the
   * primary is lost (docs/scaling.md, "Database failover"). */
  databaseFailoverTimeoutMs: number;
  /** This process's name in session ownership (docs/scaling.md); unique per process start. */
  nodeId: string;
  /** A node serving a session renews its lease every third of this; a node that stops
   * renewing loses its sessions to others after at most this long. */
  sessionLeaseMs: number;
  engine: EngineKind;
  modelDir: string | undefined;
  /** Generated engine assets (telephony feat.params); see scripts/build-telephony-model.sh. */
  assetsDir: string;
  /** Decoders the pool may run: real-time streams plus batch segments at once. Unless the
   * operator sets it (maxDecodersSet), createService replaces this provisional value with the
   * node's measured capacity (src/engine/calibration.ts, docs/scaling.md "Sizing a node"). */
  maxDecoders: number;
  /** True when --max-decoders / SCRIBED_MAX_DECODERS (or the caller) gave maxDecoders. */
  maxDecodersSet: boolean;
  /** The operator's cap on live sockets one account may hold on this node at once; 0 or
   * undefined: no cap, the recognizers are shared fairly (src/core/fair-share.ts). */
  maxStreamsPerAccount: number | undefined;
  /** Deferred recognition's bound: seconds of acknowledged audio that may wait for a
   * recognizer on this node (src/core/recognition-backlog.ts); 0: never defer, a busy node
   * refuses with ENGINE_BUSY. Undefined: 600 on the embedded store, 0 on a shared one, where
   * the balancer retries another node instead (docs/scaling.md). */
  maxDeferredSeconds: number | undefined;
  /** HAProxy agent-check port (src/server/agent-check.ts): answers each check with the
   * node's weight from its free recognizers. Undefined: no listener. */
  agentPort: number | undefined;
  /** Browser ticket lifetime. */
  ticketTtlSeconds: number;
  /** A paused session keeps its decoder this long before its open segment is finalized. */
  pausedDecoderHoldMs: number;
  /** A session with no socket whose row has not changed for this long (never streamed to, or
   * its socket gone and never resumed) ends COMPLETED with `session.expired`
   * (src/session/session-expiry.ts); 0: sessions never expire. */
  sessionIdleExpiryMs: number;
  /** Live audio is decoded in batches of this much (StreamRequest.decodeBatchMs); partials
   * come at this cadence. 0 decodes every frame as it arrives. */
  decodeBatchMs: number;
  /** Longest segment before a final is forced, in seconds of audio. */
  maxSegmentSeconds: number;
  /** Largest gap filled with silence, in seconds of audio. */
  maxGapSeconds: number;
  maxFramePayloadBytes: number;
  /** Batch jobs (each one decoder, one segment at a time) running at once. */
  batchMaxDecoders: number;
  /** Largest batch upload, checked while the file streams in. */
  batchMaxUploadBytes: number;
  /** Longest audio one batch upload may decode to (seconds); see src/batch/limits.ts. */
  batchMaxAudioSeconds: number;
  /** Batch uploads probed and decoded (ffmpeg) at once; more wait their turn. */
  batchMaxConcurrentDecodes: number;
  shutdownTimeoutMs: number;
  /** SIGTERM drains first (src/server/drain.ts, docs/operations.md "Draining a node"): live
   * calls are moved to other nodes or kept until they end, for at most this long; then the
   * stop. 0: no drain, SIGTERM stops at once as before. */
  drainGraceMs: number;
  /** A draining node waits this long before its first `reconnect` event, so the balancer has
   * taken it out by the time clients resume (the reference HAProxy: fall 2 x inter 1 s). */
  drainNoticeMs: number;
  /** Batch window of the audio spool's fdatasync before acks; negative: no sync (docs/protocol.md). */
  spoolFsyncMs: number;
  logLevel: string;
  /** Queue delay before an arrangement job runs (tests lengthen it to observe the
   * ARRANGEMENT_GENERATING state). */
  arrangementJobDelayMs: number;
  /** espeak-ng syntheses of voice designs run at once (src/voices/design-limits.ts). */
  voiceDesignConcurrency: number;
  /** First retry delay of a failed arrangement job, doubled per retry (src/music/arrangement-retry.ts). */
  arrangementRetryBaseMs: number;
  /** First retry delay of a failed webhook delivery, x4 per attempt (src/core/webhook-delivery.ts;
   * SCRIBED_WEBHOOK_RETRY_BASE_MS: tests shorten it). */
  webhookRetryBaseMs: number;
  /** Voice design callbacks: first retry delay (doubles per attempt) and attempts in all. */
  callbackBaseDelayMs: number;
  callbackMaxAttempts: number;
  /** HTTP connection bounds (src/server/connections.ts; docs/api.md, Connections and timeouts):
   * headers must arrive within headersTimeoutMs and a whole request, body included, within
   * requestTimeoutMs (a batch upload too: 10 min carries 100 MiB at 1.4 Mbit/s); a connection
   * silent for idleTimeoutMs while the client owes something is closed, and idle between
   * requests for keepAliveTimeoutMs; at most maxConnections at once, sockets included. */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** Callbacks may reach private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7 ...),
   * not loopback (docs/security.md). Default false. */
  callbackAllowPrivate: boolean;
  /** Loopback or private ranges callbacks may reach, as CIDRs (`127.0.0.1/32`, `10.20.0.0/16`).
   * Link-local, metadata, multicast and the like stay closed whatever is listed. Default none. */
  callbackAllowCidrs: readonly string[];
  /** A file of more such CIDRs (one or more a line, `#` comments), read at start and again on
   * SIGHUP (callbackAllowCidrsNow), so the list changes without a restart. Default none. */
  callbackAllowCidrFile: string | undefined;
  /** The CIDRs of the flags or the environment alone (fixed for the process's life); the
   * file's are added to them. */
  callbackAllowCidrsFixed: readonly string[];
  /** How callback host names are resolved (default: the system resolver). A seam for tests
   * that script DNS answers; the answers are checked like any others. */
  callbackResolver: Resolver | undefined;
  /** Genesys AudioHook client secrets by organization id (docs/audiohook.md), read from the
   * JSON file SCRIBED_AUDIOHOOK_SECRETS_FILE names: an organization listed must sign its
   * upgrades. Default none. */
  audiohookClientSecrets: ReadonlyMap<string, string>;
  /** How browsers reach this server (`https://scribed.example`): the desk's login links point
   * there and its Origin check accepts exactly it (docs/desk.md). Unset: only the address a
   * browser connected to directly (a loopback or lab install); `accounts login-link` then
   * wants --base-url. Stored as the origin. */
  publicUrl: string | undefined;
  /** The bearer token /metrics asks for (docs/operations.md, "Metrics"). Unset: /metrics
   * answers only requests made to this process over loopback with no proxy header. */
  metricsToken: string | undefined;
  /** The SIPREC recording server (docs/siprec.md); unset (no SCRIBED_SIPREC_PORT): off. */
  siprec: SiprecSettings | undefined;
}

export type ConfigInput = Partial<ServiceConfig> & { siprecFlags?: SiprecFlags };

/** A string setting; an empty value (`NAME=` in a systemd EnvironmentFile) is unset, as the
 * numeric and boolean ones are. */
function envStr(name: string): string | undefined {
  const v = process.env[name];
  return v === undefined || v === '' ? undefined : v;
}

function envBool(name: string): boolean | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  if (/^(1|true|yes|on)$/i.test(v)) return true;
  if (/^(0|false|no|off)$/i.test(v)) return false;
  throw new Error(`${name} must be true or false, got ${JSON.stringify(v)}`);
}

function envInt(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got ${JSON.stringify(v)}`);
  return n;
}

function audiohookSecretsFrom(file: string | undefined): ReadonlyMap<string, string> {
  if (file === undefined) return new Map();
  try {
    return parseClientSecrets(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`SCRIBED_AUDIOHOOK_SECRETS_FILE ${file}: ${(err as Error).message}`);
  }
}

export function loadConfig(input: ConfigInput = {}): Readonly<ServiceConfig> {
  const env = process.env;
  const cfg: ServiceConfig = {
    host: input.host ?? envStr('SCRIBED_HOST') ?? '127.0.0.1',
    port: input.port ?? envInt('SCRIBED_PORT') ?? 8080,
    dataDir: path.resolve(input.dataDir ?? envStr('SCRIBED_DATA_DIR') ?? './data'),
    databaseUrl: input.databaseUrl ?? envStr('SCRIBED_DATABASE_URL'),
    sharedStore: false,
    databasePoolSize: input.databasePoolSize ?? envInt('SCRIBED_DATABASE_POOL_SIZE') ?? POSTGRES_DEFAULTS.poolSize,
    databaseConnectTimeoutMs:
      input.databaseConnectTimeoutMs ?? envInt('SCRIBED_DATABASE_CONNECT_TIMEOUT_MS') ?? POSTGRES_DEFAULTS.connectTimeoutMs,
    databaseStatementTimeoutMs:
      input.databaseStatementTimeoutMs ?? envInt('SCRIBED_DATABASE_STATEMENT_TIMEOUT_MS') ?? POSTGRES_DEFAULTS.statementTimeoutMs,
    databaseFailoverTimeoutMs:
      input.databaseFailoverTimeoutMs ?? envInt('SCRIBED_DATABASE_FAILOVER_TIMEOUT_MS') ?? POSTGRES_DEFAULTS.failoverTimeoutMs,
    // Host, pid and a random part: a restarted process is a new node, so nothing it did
    // before can be mistaken for what it does now.
    nodeId: input.nodeId ?? `${os.hostname()}-${process.pid}-${crypto.randomBytes(3).toString('hex')}`,
    sessionLeaseMs: input.sessionLeaseMs ?? envInt('SCRIBED_SESSION_LEASE_MS') ?? 10_000,
    engine: (input.engine ?? envStr('SCRIBED_ENGINE') ?? 'pocketsphinx') as EngineKind,
    modelDir: input.modelDir ?? envStr('SCRIBED_MODEL_DIR') ?? undefined,
    assetsDir: path.resolve(input.assetsDir ?? envStr('SCRIBED_ASSETS_DIR') ?? path.join(packageRoot(), 'models', 'telephony')),
    maxDecoders: input.maxDecoders ?? envInt('SCRIBED_MAX_DECODERS') ?? FALLBACK_MAX_DECODERS,
    maxDecodersSet: (input.maxDecoders ?? envInt('SCRIBED_MAX_DECODERS')) !== undefined,
    maxStreamsPerAccount: input.maxStreamsPerAccount ?? envInt('SCRIBED_MAX_STREAMS_PER_ACCOUNT'),
    maxDeferredSeconds: input.maxDeferredSeconds ?? envInt('SCRIBED_MAX_DEFERRED_SECONDS'),
    agentPort: input.agentPort ?? envInt('SCRIBED_AGENT_PORT'),
    ticketTtlSeconds: input.ticketTtlSeconds ?? envInt('SCRIBED_TICKET_TTL_SECONDS') ?? 60,
    pausedDecoderHoldMs: input.pausedDecoderHoldMs ?? 60_000,
    sessionIdleExpiryMs: input.sessionIdleExpiryMs ?? envInt('SCRIBED_SESSION_IDLE_EXPIRY_MS') ?? DEFAULT_SESSION_IDLE_EXPIRY_MS,
    decodeBatchMs: input.decodeBatchMs ?? envInt('SCRIBED_DECODE_BATCH_MS') ?? 200,
    maxSegmentSeconds: input.maxSegmentSeconds ?? 30,
    maxGapSeconds: input.maxGapSeconds ?? 10,
    maxFramePayloadBytes: input.maxFramePayloadBytes ?? 131_072,
    batchMaxDecoders: input.batchMaxDecoders ?? envInt('SCRIBED_BATCH_MAX_DECODERS') ?? 1,
    batchMaxUploadBytes: input.batchMaxUploadBytes ?? envInt('SCRIBED_BATCH_MAX_UPLOAD_BYTES') ?? 100 * 1024 * 1024,
    batchMaxAudioSeconds: input.batchMaxAudioSeconds ?? envInt('SCRIBED_BATCH_MAX_AUDIO_SECONDS') ?? 4 * 3600,
    batchMaxConcurrentDecodes: input.batchMaxConcurrentDecodes ?? envInt('SCRIBED_BATCH_MAX_CONCURRENT_DECODES') ?? 2,
    shutdownTimeoutMs: input.shutdownTimeoutMs ?? 10_000,
    drainGraceMs: input.drainGraceMs ?? envInt('SCRIBED_DRAIN_GRACE_MS') ?? DEFAULT_DRAIN_GRACE_MS,
    drainNoticeMs: input.drainNoticeMs ?? envInt('SCRIBED_DRAIN_NOTICE_MS') ?? 2_500,
    spoolFsyncMs: input.spoolFsyncMs ?? envInt('SCRIBED_SPOOL_FSYNC_MS') ?? 50,
    logLevel: input.logLevel ?? envStr('SCRIBED_LOG_LEVEL') ?? 'info',
    arrangementJobDelayMs: input.arrangementJobDelayMs ?? 0,
    voiceDesignConcurrency: input.voiceDesignConcurrency ?? envInt(DESIGN_CONCURRENCY_ENV) ?? DEFAULT_DESIGN_CONCURRENCY,
    arrangementRetryBaseMs: input.arrangementRetryBaseMs ?? envInt(ARRANGEMENT_RETRY_ENV) ?? DEFAULT_ARRANGEMENT_RETRY_BASE_MS,
    webhookRetryBaseMs: input.webhookRetryBaseMs ?? envInt('SCRIBED_WEBHOOK_RETRY_BASE_MS') ?? DEFAULT_RETRY_BASE_MS,
    callbackBaseDelayMs: input.callbackBaseDelayMs ?? 2000,
    callbackMaxAttempts: input.callbackMaxAttempts ?? 6,
    headersTimeoutMs: input.headersTimeoutMs ?? envInt('SCRIBED_HEADERS_TIMEOUT_MS') ?? 10_000,
    requestTimeoutMs: input.requestTimeoutMs ?? envInt('SCRIBED_REQUEST_TIMEOUT_MS') ?? 600_000,
    idleTimeoutMs: input.idleTimeoutMs ?? envInt('SCRIBED_IDLE_TIMEOUT_MS') ?? 60_000,
    // Longer than a balancer's idle timeout (HAProxy's `timeout server`, 60 s in
    // deploy/haproxy.cfg), so the balancer, not this server, ends an idle kept-alive connection
    // and never sends a request on one this server is closing.
    keepAliveTimeoutMs: input.keepAliveTimeoutMs ?? envInt('SCRIBED_KEEP_ALIVE_TIMEOUT_MS') ?? 72_000,
    maxConnections: input.maxConnections ?? envInt('SCRIBED_MAX_CONNECTIONS') ?? 1024,
    callbackAllowPrivate: input.callbackAllowPrivate ?? envBool('SCRIBED_CALLBACK_ALLOW_PRIVATE') ?? false,
    callbackAllowCidrsFixed: Object.freeze([...(input.callbackAllowCidrs ?? splitCidrList(env.SCRIBED_CALLBACK_ALLOW_CIDRS ?? ''))]),
    callbackAllowCidrFile: input.callbackAllowCidrFile ?? envStr('SCRIBED_CALLBACK_ALLOW_CIDR_FILE'),
    callbackAllowCidrs: [],
    callbackResolver: input.callbackResolver,
    audiohookClientSecrets: input.audiohookClientSecrets ?? audiohookSecretsFrom(envStr('SCRIBED_AUDIOHOOK_SECRETS_FILE')),
    publicUrl: publicOrigin(input.publicUrl ?? envStr('SCRIBED_PUBLIC_URL')),
    metricsToken: input.metricsToken ?? metricsTokenFrom(envStr('SCRIBED_METRICS_TOKEN'), envStr('SCRIBED_METRICS_TOKEN_FILE')),
    siprec: input.siprec ?? siprecSettingsFrom(input.host ?? envStr('SCRIBED_HOST') ?? '127.0.0.1', input.siprecFlags ?? {}, envStr),
  };
  if (cfg.siprec) checkSiprecSettings(cfg.siprec);
  if (cfg.metricsToken !== undefined && cfg.metricsToken.length < 16)
    throw new Error('the metrics token (SCRIBED_METRICS_TOKEN or --metrics-token-file) must be at least 16 characters');
  if (!['pocketsphinx', 'sherpa-onnx'].includes(cfg.engine)) throw new Error(`unknown engine ${cfg.engine}`);
  if (cfg.engine === 'sherpa-onnx' && !cfg.modelDir) throw new Error('--engine sherpa-onnx needs --model-dir DIR');
  if (!(cfg.port >= 0 && cfg.port <= 65535)) throw new Error(`port out of range: ${cfg.port}`);
  if (cfg.databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(cfg.databaseUrl)) {
    throw new Error('--database-url must be a postgres:// or postgresql:// URL');
  }
  if (cfg.databaseUrl !== undefined) {
    try {
      parsePostgresUrl(cfg.databaseUrl);
    } catch (err) {
      throw new Error(`--database-url: ${(err as Error).message}`);
    }
  }
  if (!(cfg.databaseFailoverTimeoutMs >= 100 && cfg.databaseFailoverTimeoutMs <= 3_600_000))
    throw new Error('database failover timeout must be 100..3600000 ms');
  if (!(cfg.sessionLeaseMs >= 300 && cfg.sessionLeaseMs <= 600_000)) throw new Error('SCRIBED_SESSION_LEASE_MS must be 300..600000');
  if (!(cfg.databasePoolSize >= 1 && cfg.databasePoolSize <= 1000)) throw new Error('database pool size must be 1..1000');
  if (!(cfg.databaseConnectTimeoutMs >= 100 && cfg.databaseConnectTimeoutMs <= 600_000))
    throw new Error('database connect timeout must be 100..600000 ms');
  if (!(cfg.databaseStatementTimeoutMs >= 100 && cfg.databaseStatementTimeoutMs <= 3_600_000))
    throw new Error('database statement timeout must be 100..3600000 ms');
  if (!(cfg.maxDecoders >= 1 && cfg.maxDecoders <= 64)) throw new Error('maxDecoders must be 1..64');
  // Without --max-decoders the bound is checked against the measured capacity at start.
  if (!(cfg.batchMaxDecoders >= 1 && cfg.batchMaxDecoders <= (cfg.maxDecodersSet ? cfg.maxDecoders : 64)))
    throw new Error('batchMaxDecoders must be 1..maxDecoders');
  if (!(cfg.batchMaxUploadBytes >= 1024)) throw new Error('batchMaxUploadBytes must be at least 1024');
  if (!(cfg.batchMaxAudioSeconds >= 1 && cfg.batchMaxAudioSeconds <= 24 * 3600)) throw new Error('batchMaxAudioSeconds must be 1..86400');
  if (!(cfg.batchMaxConcurrentDecodes >= 1 && cfg.batchMaxConcurrentDecodes <= 64))
    throw new Error('batchMaxConcurrentDecodes must be 1..64');
  if (
    cfg.maxStreamsPerAccount !== undefined &&
    !(Number.isInteger(cfg.maxStreamsPerAccount) && cfg.maxStreamsPerAccount >= 0 && cfg.maxStreamsPerAccount <= 100_000)
  ) {
    throw new Error('SCRIBED_MAX_STREAMS_PER_ACCOUNT must be 0 (no bound) .. 100000');
  }
  if (cfg.agentPort !== undefined && !(Number.isInteger(cfg.agentPort) && cfg.agentPort >= 0 && cfg.agentPort <= 65535)) {
    throw new Error(`SCRIBED_AGENT_PORT out of range: ${cfg.agentPort}`);
  }
  if (
    cfg.maxDeferredSeconds !== undefined &&
    !(Number.isInteger(cfg.maxDeferredSeconds) && cfg.maxDeferredSeconds >= 0 && cfg.maxDeferredSeconds <= 86_400)
  ) {
    throw new Error('SCRIBED_MAX_DEFERRED_SECONDS must be 0 (never defer) .. 86400');
  }
  if (!(Number.isInteger(cfg.drainNoticeMs) && cfg.drainNoticeMs >= 0 && cfg.drainNoticeMs <= 60_000))
    throw new Error('SCRIBED_DRAIN_NOTICE_MS must be 0..60000');
  if (!(Number.isInteger(cfg.drainGraceMs) && cfg.drainGraceMs >= 0 && cfg.drainGraceMs <= 86_400_000))
    throw new Error('SCRIBED_DRAIN_GRACE_MS must be 0 (no drain) .. 86400000');
  if (!(Number.isInteger(cfg.sessionIdleExpiryMs) && cfg.sessionIdleExpiryMs >= 0 && cfg.sessionIdleExpiryMs <= 30 * 86_400_000))
    throw new Error('--session-idle-expiry-ms / SCRIBED_SESSION_IDLE_EXPIRY_MS must be 0 (never) .. 2592000000 (30 days)');
  if (!(cfg.ticketTtlSeconds >= 5 && cfg.ticketTtlSeconds <= 600)) throw new Error('ticket TTL must be 5..600 s');
  if (!(cfg.headersTimeoutMs >= 100 && cfg.headersTimeoutMs <= 600_000)) throw new Error('SCRIBED_HEADERS_TIMEOUT_MS must be 100..600000');
  if (!(cfg.requestTimeoutMs >= cfg.headersTimeoutMs && cfg.requestTimeoutMs <= 86_400_000)) {
    throw new Error('SCRIBED_REQUEST_TIMEOUT_MS must be at least the headers timeout and at most 86400000');
  }
  if (!(cfg.idleTimeoutMs >= 100 && cfg.idleTimeoutMs <= 3_600_000)) throw new Error('SCRIBED_IDLE_TIMEOUT_MS must be 100..3600000');
  if (!(cfg.keepAliveTimeoutMs >= 100 && cfg.keepAliveTimeoutMs <= 3_600_000))
    throw new Error('SCRIBED_KEEP_ALIVE_TIMEOUT_MS must be 100..3600000');
  if (!(Number.isInteger(cfg.maxConnections) && cfg.maxConnections >= 1 && cfg.maxConnections <= 1_000_000))
    throw new Error('SCRIBED_MAX_CONNECTIONS must be 1..1000000');
  if (!(cfg.voiceDesignConcurrency >= 1 && cfg.voiceDesignConcurrency <= MAX_DESIGN_CONCURRENCY)) {
    throw new Error(`${DESIGN_CONCURRENCY_ENV} must be an integer 1..${MAX_DESIGN_CONCURRENCY}, got ${cfg.voiceDesignConcurrency}`);
  }
  if (!(cfg.arrangementRetryBaseMs >= 1 && cfg.arrangementRetryBaseMs <= MAX_ARRANGEMENT_RETRY_BASE_MS)) {
    throw new Error(`${ARRANGEMENT_RETRY_ENV} must be an integer 1..${MAX_ARRANGEMENT_RETRY_BASE_MS}, got ${cfg.arrangementRetryBaseMs}`);
  }
  if (!(cfg.webhookRetryBaseMs >= 10 && cfg.webhookRetryBaseMs <= 3_600_000)) {
    throw new Error(`SCRIBED_WEBHOOK_RETRY_BASE_MS must be an integer 10..3600000, got ${cfg.webhookRetryBaseMs}`);
  }
  cfg.callbackAllowCidrs = Object.freeze(callbackAllowCidrsNow(cfg));
  try {
    new OutboundPolicy({ allowPrivate: cfg.callbackAllowPrivate, allowCidrs: cfg.callbackAllowCidrs });
  } catch (err) {
    throw new Error(`--callback-allow-cidr / SCRIBED_CALLBACK_ALLOW_CIDRS / the allow-list file: ${(err as Error).message}`);
  }
  cfg.sharedStore = cfg.databaseUrl !== undefined;
  return Object.freeze(cfg);
}

/** `--public-url` as an origin (scheme, host, port); throws when it is not an http(s) URL
 * of an origin alone (a path would be dropped silently otherwise). */
export function publicOrigin(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  let u: URL;
  try {
    u = new URL(value.trim());
  } catch {
    throw new Error(`--public-url / SCRIBED_PUBLIC_URL must be an http or https URL such as https://scribed.example, got ${value}`);
  }
  if (
    (u.protocol !== 'http:' && u.protocol !== 'https:') ||
    u.username ||
    u.password ||
    u.search ||
    u.hash ||
    (u.pathname !== '/' && u.pathname !== '')
  ) {
    throw new Error(`--public-url / SCRIBED_PUBLIC_URL must be an http or https origin (scheme, host and port, no path), got ${value}`);
  }
  return u.origin;
}

/** The metrics token: SCRIBED_METRICS_TOKEN, or the first line of the file
 * SCRIBED_METRICS_TOKEN_FILE / --metrics-token-file names (kept out of `ps` and the env). */
export function metricsTokenFrom(token: string | undefined, file: string | undefined): string | undefined {
  if (token !== undefined && token.trim() !== '') return token.trim();
  if (file === undefined || file.trim() === '') return undefined;
  const text = fs.readFileSync(file.trim(), 'utf8').split('\n')[0]!.trim();
  if (text === '') throw new Error(`the metrics token file ${file} is empty`);
  return text;
}

/** The callback allow-list as it stands now: the fixed CIDRs (flags, environment) and the
 * allow-list file's, read again at each call (at start, and on SIGHUP: docs/operations.md,
 * "Changing settings without a restart"). Throws when the file cannot be read. */
export function callbackAllowCidrsNow(cfg: Pick<ServiceConfig, 'callbackAllowCidrsFixed' | 'callbackAllowCidrFile'>): string[] {
  const file = cfg.callbackAllowCidrFile;
  if (file === undefined) return [...cfg.callbackAllowCidrsFixed];
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(
      `the callback allow-list file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const fromFile = text.split('\n').flatMap((line) => splitCidrList(line.replace(/#.*$/, '')));
  return [...new Set([...cfg.callbackAllowCidrsFixed, ...fromFile])];
}

/** The store a configuration names (the server and the operator commands open the same). */
export function storeSettings(cfg: Readonly<ServiceConfig>): StoreSettings {
  return {
    dataDir: cfg.dataDir,
    databaseUrl: cfg.databaseUrl,
    databasePoolSize: cfg.databasePoolSize,
    databaseConnectTimeoutMs: cfg.databaseConnectTimeoutMs,
    databaseStatementTimeoutMs: cfg.databaseStatementTimeoutMs,
    databaseFailoverTimeoutMs: cfg.databaseFailoverTimeoutMs,
  };
}

/** Where the store is, for logs: never the URL's password. */
export function describeStore(cfg: Readonly<ServiceConfig>): string {
  if (!cfg.databaseUrl) return `sqlite:${path.join(cfg.dataDir, 'scribed.db')}`;
  try {
    return parsePostgresUrl(cfg.databaseUrl).display;
  } catch {
    return 'postgres (unparsable URL)';
  }
}

// ------------------------------------------------------------------ the other commands
// What the commands besides `serve` read from the environment: read here too, so that no
// module of src/ but this one (and the engine's own src/engine/environment.ts) reads
// process.env (eslint.config.js). Each returns undefined when the variable is unset or empty.

/** SCRIBED_LOG_LEVEL for the client commands (stream, rtp, gateway). */
export function logLevelFromEnv(): string | undefined {
  return envStr('SCRIBED_LOG_LEVEL');
}

/** SCRIBED_ACCESS_KEY: the client commands' access key when no --access-key-file is given. */
export function accessKeyFromEnv(): string | undefined {
  return envStr('SCRIBED_ACCESS_KEY');
}

/** SCRIBED_GATEWAY_TOKEN: the secret PBXs present to `scribed gateway`, when no file is given. */
export function gatewayTokenFromEnv(): string | undefined {
  return envStr('SCRIBED_GATEWAY_TOKEN');
}

/** SCRIBED_MODELS_DIR: where `scribed models` keeps installed models. */
export function modelsDirFromEnv(): string | undefined {
  const v = envStr('SCRIBED_MODELS_DIR');
  return v === undefined || v.trim() === '' ? undefined : v;
}
