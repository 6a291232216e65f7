// The composition root: assembles the running service from its parts (store, engine, metrics,
// sessions, HTTP) and owns every piece of background work the node runs. Each part is built
// once, here, and handed to what uses it: one recordings store (the keeper, the voice routes
// and the design jobs publish and delete through it, one at a time on one node), one set of
// server keys, and every worker (sessions, batch runner, retention sweeper, debit batcher, the
// routes' workers in src/server/route-workers.ts); routes start none of their own. stop()
// stops them in one order, written out below. Used by `scribed serve` and by integration tests
// that want a real listening server.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { loadConfig, storeSettings, type ConfigInput, type ServiceConfig } from './config.js';
import { createEngine } from './engine/pool.js';
import { recordCapacityMetrics, resolveCapacity } from './engine/calibration.js';
import { recordCapacityReport } from './server/capacity.js';
import { agentAnswer, startAgentListener, type AgentListener } from './server/agent-check.js';
import { markDrained, NodeDrain, readyAgainAfterDrain, type DrainEnd } from './server/drain.js';
import type { Engine } from './engine/types.js';
import { createLogger } from './obs/log.js';
import { createMetrics, type Metrics } from './obs/metrics.js';
import { SessionRegistry } from './session/registry.js';
import { SessionExpiry } from './session/session-expiry.js';
import { reloadCallbackAllowList, type AllowListReload } from './server/settings-reload.js';
import { OutboundPolicy } from './core/outbound-policy.js';
import { AudioSpoolDir } from './session/audio-spool.js';
import { DatabaseSpools } from './session/database-spool.js';
import { DebitBatcher } from './session/debit-batcher.js';
import { recoverSpooledSessions } from './session/spool-recovery.js';
import { buildApp } from './server/app.js';
import { siprecListen, siprecOf } from './server/siprec/plugin.js';
import { audiohookDrain } from './server/audiohook/registry.js';
import { openStore, type FailoverEvent } from './store/index.js';
import { installAnalyticsHooks } from './analytics/hooks.js';
import { acquireDataDirLock } from './store/data-dir-lock.js';
import { BatchRunner } from './batch/runner.js';
import { batchAudioStore } from './batch/audio-store.js';
import { RetentionSweeper } from './batch/retention-sweeper.js';
import { RecordingKeeper } from './recording/keeper.js';
import { LiveRecorder } from './recording/live-recorder.js';
import { recordingStoreFor } from './store/recordings.js';
import { serverKeysFor } from './store/server-key.js';
import { buildRouteWorkers, startRouteWorkers, stopRouteWorkers } from './server/route-workers.js';
import path from 'node:path';
import type { Store } from './store/store.js';
import { BacklogBudget, DEFAULT_MAX_DEFERRED_SECONDS } from './core/recognition-backlog.js';
import { RecognizerQueue } from './session/recognizer-queue.js';
import { RuleAlerts } from './session/rule-alerts.js';
import { PhraseSpotters } from './session/phrase-spotting.js';
import type { SessionContext } from './session/session-context.js';
import type { ServerEvent } from './core/protocol.js';

export interface Service {
  config: Readonly<ServiceConfig>;
  app: FastifyInstance;
  store: Store;
  engine: Engine;
  metrics: Metrics;
  log: Logger;
  sessions: SessionRegistry;
  batch: BatchRunner;
  /** Redacted recordings, through the node's one recordings store. */
  recordings: RecordingKeeper;
  /** Listen on config host/port (and the agent-check port when set); resolves to the bound address. */
  listen(): Promise<string>;
  /** The agent-check listener's port once listening with --agent-port; null without. */
  agentPort(): number | null;
  /** Drain before a stop (SIGTERM; src/server/drain.ts): no new sockets, live calls move to
   * other nodes or end, for at most the drain grace. Resolves when it is over; stop() follows. */
  drain(): Promise<DrainEnd>;
  /** End a drain now (a second SIGTERM). */
  cutDrain(): void;
  /** What POST /admin/drain runs (once): `scribed serve` gives the handler SIGTERM has, so the
   * route drains and then stops the process. Without one, the route drains only. */
  onDrainRequest(handler: () => void): void;
  /** Graceful stop: no new sockets, sessions finalized and persisted, engine and store closed. */
  stop(): Promise<void>;
  /** SIGHUP: read again what can change without a restart (the callback allow-list file);
   * null when the new list was refused and the old one kept (src/server/settings-reload.ts). */
  reload(): AllowListReload | null;
}

export async function createService(input: ConfigInput & { logger?: Logger; now?: () => Date } = {}): Promise<Service> {
  const config = loadConfig(input);
  const log = input.logger ?? createLogger({ level: config.logLevel });
  // Before anything in the data dir is read or written: a second server on the same dir
  // would otherwise pause and replay the first one's live sessions.
  const dirLock = acquireDataDirLock(config.dataDir);
  try {
    return await assemble(config, log, input.now, () => dirLock.release());
  } catch (err) {
    dirLock.release();
    throw err;
  }
}

async function assemble(
  config: Readonly<ServiceConfig>,
  log: Logger,
  now: (() => Date) | undefined,
  releaseDataDir: () => void,
): Promise<Service> {
  const metrics = createMetrics();
  const store = await openStore({
    ...storeSettings(config),
    onIdleError: (err) => log.warn({ err }, 'idle database connection failed; it is replaced'),
    onFailover: (e) => logFailover(log, metrics, e),
  });
  installAnalyticsHooks(metrics);

  const shared = config.sharedStore;
  if (!shared) {
    // One node: the data-dir lock proves the process that owned sessions before is gone.
    await store.clearOtherOwners(config.nodeId);
    // No socket survives a restart: sessions that were recording are paused, so clients resume.
    // (On a shared store other nodes' sessions are recording: a node that died leaves its
    // sessions to the lease loops and to clients' resumes, docs/scaling.md.)
    for (const s of await store.listSessionsByState('RECORDING')) {
      await store.setSessionState(s.id, 'PAUSED', 'PAUSED');
      log.info({ sessionId: s.id }, 'session paused at start-up (no socket survives a restart)');
    }
  }

  // Admission by capacity (no more streams than the node recognizes in real time): without
  // --max-decoders the pool is sized by what this node measures it can carry in real time
  // (src/engine/calibration.ts).
  const capacity = await resolveCapacity(config, log);
  let maxDecoders = capacity.maxDecoders;
  if (maxDecoders < config.batchMaxDecoders) {
    log.warn(
      `capacity: SCRIBED_BATCH_MAX_DECODERS ${config.batchMaxDecoders} exceeds the measured capacity ${maxDecoders}; --max-decoders raised to it`,
    );
    maxDecoders = config.batchMaxDecoders;
  }
  if (maxDecoders !== config.maxDecoders) config = Object.freeze({ ...config, maxDecoders });
  recordCapacityMetrics(metrics, { ...capacity, maxDecoders });

  const engine = createEngine({
    engine: config.engine,
    maxDecoders: config.maxDecoders,
    modelDir: config.modelDir,
    assetsDir: config.assetsDir,
    logger: log,
  });
  recordCapacityReport(engine, { ...capacity, maxDecoders });
  await engine.start();
  log.info({ engine: engine.info }, 'engine ready');

  // The spool of acknowledged audio: files in the data dir on one node, the shared store's
  // spool when nodes share PostgreSQL (another node must be able to replay it).
  const fileSpool = shared ? null : new AudioSpoolDir(config.dataDir, config.spoolFsyncMs, log);
  const spool = fileSpool ?? new DatabaseSpools({ store, windowMs: config.spoolFsyncMs, leaseMs: config.sessionLeaseMs, log });
  const ruleAlerts = new RuleAlerts({ store, metrics, log });
  // Sessions of accounts that spot phrases run a keyphrase decoder beside their recognizer.
  const spotting = new PhraseSpotters({ store, engine, metrics, log, spotted: ruleAlerts.spotted });
  // Recordings, design previews and server keys: in the store when nodes share PostgreSQL (any
  // node reads what another wrote), files in the data dir otherwise (docs/scaling.md). ONE
  // recordings store for the node: publishing and deleting take turns through it.
  const files = {
    recordings: recordingStoreFor(shared, store, config.dataDir, log, now),
    keys: serverKeysFor(shared, store, config.dataDir, now),
  };
  await files.recordings.start();
  // Redacted recordings (recordAudio, docs/recordings.md), kept through that one store.
  const recordings = new RecordingKeeper({ store, files: files.recordings, log, ...(now ? { now } : {}) });
  // Sessions' debits for their audio: one transaction a spool window for the whole node.
  const debits = new DebitBatcher({ store, windowMs: config.spoolFsyncMs, log });
  const sessionDeps = {
    spool,
    debits,
    recorders: {
      open: (s: { transcriptionId: string; accountId: string; rate: number; log: typeof log }) =>
        new LiveRecorder(recordings, s.transcriptionId, s.accountId, s.rate, s.log),
    },
    store,
    engine,
    metrics,
    log,
    maxSegmentSeconds: config.maxSegmentSeconds,
    maxGapSeconds: config.maxGapSeconds,
    maxFramePayloadBytes: config.maxFramePayloadBytes,
    pausedDecoderHoldMs: config.pausedDecoderHoldMs,
    decodeBatchMs: config.decodeBatchMs,
    // Deferred recognition: on one node, a busy node serves the socket and its audio waits;
    // behind a balancer (shared store) it refuses so the balancer tries another node.
    deferral: new RecognizerQueue(new BacklogBudget(config.maxDeferredSeconds ?? (shared ? 0 : DEFAULT_MAX_DEFERRED_SECONDS))),
    spotting,
    observeEvent: (session: SessionContext, event: ServerEvent, emit: (event: ServerEvent) => void) => {
      ruleAlerts.observe(session, event, emit);
      drain.observe(session.id, event);
    },
  };
  const drain = new NodeDrain({
    sessions: () => sessions,
    log,
    graceMs: config.drainGraceMs,
    // A segment ends within its bound (30 s) plus decoding; a short grace waits half of it.
    boundaryWaitMs: Math.min(config.maxSegmentSeconds * 1000 + 15_000, Math.floor(config.drainGraceMs / 2)),
    noticeMs: config.drainNoticeMs,
  });
  const sessions = new SessionRegistry(store, sessionDeps, { node: config.nodeId, leaseMs: config.sessionLeaseMs, shared, log });
  if (fileSpool) await recoverSpooledSessions({ store, sessions, spool: fileSpool, log });
  sessions.start();
  // Sessions with no socket and nothing stored for the expiry end (a draining node claims none).
  const expiry = new SessionExpiry(store, sessions, {
    idleMs: config.sessionIdleExpiryMs,
    node: config.nodeId,
    log,
    paused: () => drain.draining,
  });
  expiry.start();
  log.info({ node: config.nodeId, store: shared ? 'shared' : 'embedded' }, 'sessions ready');
  const batchDir = path.join(config.dataDir, 'batch');
  // Batch jobs run on any node of a shared store (claims with the session lease, audio in the
  // store); on one node, from files in the batch directory (docs/scaling.md).
  const batch = new BatchRunner({
    store,
    engine,
    metrics,
    log,
    dir: batchDir,
    audio: batchAudioStore({ shared, store, dir: batchDir }),
    node: config.nodeId,
    shared,
    leaseMs: config.sessionLeaseMs,
    maxDecoders: config.batchMaxDecoders,
    maxSegmentSeconds: config.maxSegmentSeconds,
    recordings,
  });
  await batch.start();
  // Rows past their account's retention are erased at start and then every few minutes.
  const retention = new RetentionSweeper({ store, log, audio: batch.audio, recordings, ...(now ? { now } : {}) });
  await retention.sweep().catch((err: unknown) => log.warn({ err }, 'retention sweep at start failed; tried again shortly'));
  retention.start();
  const clock = now ?? (() => new Date());
  let drainRequested = false;
  let drainHandler: (() => void) | null = null;
  // One outbound policy for the node's routes and workers, so a reload reaches them all.
  const outbound = new OutboundPolicy({ allowPrivate: config.callbackAllowPrivate, allowCidrs: config.callbackAllowCidrs });
  const workers = await buildRouteWorkers({ config, store, metrics, log, now: clock, files, outbound });
  const app = await buildApp({
    config,
    store,
    engine,
    metrics,
    log,
    sessions,
    batch: {
      runner: batch,
      dir: batchDir,
      maxUploadBytes: config.batchMaxUploadBytes,
      maxAudioSeconds: config.batchMaxAudioSeconds,
      maxConcurrentDecodes: config.batchMaxConcurrentDecodes,
    },
    now: clock,
    ruleAlerts,
    recordings,
    files,
    workers,
    draining: () => drain.draining,
    requestDrain: () => {
      const status = shared && config.drainGraceMs > 0 ? 'draining' : 'stopping';
      // After the answer is on its way: a stop closes the app this request is in.
      if (!drainRequested) {
        drainRequested = true;
        setImmediate(() => (drainHandler ? drainHandler() : void service.drain()));
      }
      return status;
    },
    outbound,
  });
  await startRouteWorkers(workers, { config, store });

  let stopping: Promise<void> | null = null;
  let agent: AgentListener | null = null;
  const service: Service = {
    config,
    app,
    store,
    engine,
    metrics,
    log,
    sessions,
    batch,
    recordings,
    async listen() {
      const address = await app.listen({ host: config.host, port: config.port });
      await siprecListen({ sessions, log });
      if (config.agentPort !== undefined) {
        const readyAgain = readyAgainAfterDrain(config.dataDir);
        const answer = () =>
          agentAnswer({ engine, sessions, store }, stopping !== null, {
            draining: drain.draining,
            readyAgain: !drain.draining && readyAgain(),
          });
        agent = await startAgentListener(config.host, config.agentPort, answer, log);
      }
      return address;
    },
    agentPort: () => agent?.port ?? null,
    drain() {
      // One node: nowhere to move a call to; the stop finalizes as before.
      if (!shared || config.drainGraceMs === 0) return Promise.resolve('off' as const);
      if (!drain.draining && config.agentPort !== undefined) markDrained(config.dataDir, log);
      // AudioHook clients move themselves once the balancer has taken the node out: Genesys
      // reconnects with continuedSessions, through the balancer, to another node.
      if (!drain.draining) setTimeout(() => audiohookDrain({ sessions }).reconnectAll(), config.drainNoticeMs).unref();
      return drain.start();
    },
    cutDrain: () => drain.cutShort(),
    onDrainRequest: (handler) => (drainHandler = handler),
    reload: () => {
      // The SIPREC listener's TLS certificate too (renewed without a restart; src/server/siprec/tls.ts).
      siprecOf({ sessions })?.transport.reloadTls();
      return reloadCallbackAllowList(config, outbound, log);
    },
    // The one shutdown order (docs/architecture.md, "One owner"), after drain() when `scribed
    // serve` drains first (nodes sharing a store: live calls move to other nodes):
    //  1. the batch runner stops taking segments, so decoders freed by sessions shutting down
    //     are not picked up by a job (its running segment finishes meanwhile);
    //  2. the agent check answers weight 0 and closes: HAProxy sends no new calls;
    //  3. the retention sweeper and the idle sessions' expiry stop (no erasure or expiry races
    //     the sessions' last writes);
    //  4. the app closes: no new request or socket; live sessions finalize, persist and close
    //     their sockets with 1012 (the websocket plugin's preClose, app.ts);
    //  5. the running batch segment has finished;
    //  6. the routes' workers stop (Deepgram callback sweep, arrangements, designs, webhook
    //     deliveries), each after its work in flight: what sessions and jobs wrote last is in
    //     the store for any node, or this one after a restart, to carry on;
    //  7. the debit batcher settles the debits still pending, without waiting for its window;
    //  8. the engine, then the store closes, and the data dir is released.
    stop() {
      stopping ??= (async () => {
        const batchStopped = batch.stop();
        await agent?.close();
        await retention.stop();
        await expiry.stop();
        await app.close();
        await batchStopped;
        await stopRouteWorkers(workers);
        await debits.drain();
        await engine.close();
        await store.close();
        releaseDataDir();
      })();
      return stopping;
    },
  };
  return service;
}

/** The PostgreSQL host selection's events (several hosts in --database-url): the log lines an
 * operator follows a failover by, and the counter that alerts on it. */
function logFailover(log: Logger, metrics: Metrics, e: FailoverEvent): void {
  if (e.kind === 'lost') log.warn({ host: e.host, reason: e.reason }, 'database primary lost: looking for the read-write host');
  else if (e.kind === 'kept') log.info({ host: e.host, searchMs: e.ms }, 'database primary unchanged');
  else if (e.kind === 'unavailable')
    log.error({ hosts: e.hosts, searchMs: e.ms }, 'database: no read-write host found; operations fail until one is');
  else if (e.from === null) log.info({ host: e.to, searchMs: e.ms }, 'database primary chosen');
  else {
    metrics.storeFailovers.inc();
    log.warn({ from: e.from, to: e.to, searchMs: e.ms }, 'database failover: pool moved to the new primary');
  }
}
