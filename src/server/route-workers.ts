// The background work behind the routes' resources: webhook deliveries, voice designs, music
// arrangements and Deepgram's parked callbacks. Built here, from the parts the composition
// root (service.ts) made once, and started and stopped by it with the rest of the node's work;
// the routes only hand these workers new work (AppContext.workers). Routes that started their
// own workers in their own hooks had their own copy of what the workers share (one recordings
// store per copy, so the store's one-at-a-time publish and delete did not hold between them).
import type { Logger } from 'pino';
import type { ServiceConfig } from '../config.js';
import type { OutboundPolicy } from '../core/outbound-policy.js';
import { webhookSecret } from '../core/webhook-endpoints.js';
import { ArrangementJobs } from '../music/arrangement-jobs.js';
import { ARRANGEMENT_MAX_ATTEMPTS } from '../music/arrangement-retry.js';
import type { Metrics } from '../obs/metrics.js';
import { GuardedTransport, systemResolver } from '../outbound/guarded-transport.js';
import type { Store } from '../store/store.js';
import { DesignJobs } from '../voices/design-jobs.js';
import { WebhookWorker } from '../webhooks/delivery-worker.js';
import { callbackPolicy, type RouteWorkers } from './context.js';
import { CallbackSweeper } from './facades/deepgram/callback.js';
import { designView } from './routes/voice-design.js';
import type { VoiceFiles } from './voice-files.js';

/** How often each node looks for design work nobody holds, when nodes share the store. */
export const DESIGN_POLL_MS = 1000;
/** How often each node looks for arrangement work nobody holds, when nodes share the store. */
const ARRANGEMENT_POLL_MS = 1000;

/** Webhook delivery bounds (docs/webhooks.md). */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 10_000;
const WEBHOOK_PER_ENDPOINT_IN_FLIGHT = 4;
const WEBHOOK_NODE_IN_FLIGHT = 32;
const WEBHOOK_POLL_MS = 250;
const WEBHOOK_STATS_MS = 5_000;
/** How long the delivery log keeps finished deliveries. */
const WEBHOOK_RETENTION_MS = 30 * 24 * 3600_000;

export interface RouteWorkerParts {
  config: Readonly<ServiceConfig>;
  store: Store;
  metrics: Metrics;
  log: Logger;
  now: () => Date;
  /** The node's one recordings store and server keys. */
  files: VoiceFiles;
  /** The node's one outbound policy (its allow-list reloads on SIGHUP); absent: the config's. */
  outbound?: OutboundPolicy;
}

/** The workers, with what the routes may call on them and how the owner starts and stops them. */
export interface BuiltRouteWorkers extends RouteWorkers {
  webhooks: WebhookWorker;
  designs: DesignJobs;
  arrangements: ArrangementJobs;
  deepgramCallbacks: CallbackSweeper;
}

export async function buildRouteWorkers(p: RouteWorkerParts): Promise<BuiltRouteWorkers> {
  const { config, store, metrics, log, now } = p;
  const shared = config.sharedStore;
  // The operator's callback destinations (docs/security.md), for every request sent on a
  // user's behalf; the routes check literal hosts with the same policy at create time.
  const policy = callbackPolicy(p);
  const transport = () => new GuardedTransport(policy, config.callbackResolver ?? systemResolver);

  // Every node holds the same key (store/server-key.ts), so any node signs any delivery.
  const webhookKey = await p.files.keys.load('webhook-signing');
  const webhooks = new WebhookWorker({
    store,
    secretOf: (endpointId, generation) => webhookSecret(webhookKey, endpointId, generation),
    transport: transport(),
    log: log.child({ component: 'webhooks' }),
    node: config.nodeId,
    now,
    retryBaseMs: config.webhookRetryBaseMs,
    // A claim outlives the longest attempt, so a live node never loses one mid-attempt.
    leaseMs: Math.max(config.sessionLeaseMs, WEBHOOK_ATTEMPT_TIMEOUT_MS + 5_000),
    timeoutMs: WEBHOOK_ATTEMPT_TIMEOUT_MS,
    perEndpoint: WEBHOOK_PER_ENDPOINT_IN_FLIGHT,
    maxInFlight: WEBHOOK_NODE_IN_FLIGHT,
    pollMs: WEBHOOK_POLL_MS,
    statsMs: WEBHOOK_STATS_MS,
    retentionMs: WEBHOOK_RETENTION_MS,
    onAttempt: (verdict, seconds) => {
      metrics.webhookDeliveries.inc({ outcome: verdict });
      metrics.webhookAttemptSeconds.observe(seconds);
    },
    onStats: (depth, oldest) => {
      metrics.webhookOutboxDepth.set(depth);
      metrics.webhookOutboxOldestSeconds.set(oldest);
    },
  });

  const designs = new DesignJobs({
    store,
    recordings: p.files.recordings,
    log,
    serverKey: await p.files.keys.load('callback-signing'),
    now,
    callbackBaseDelayMs: config.callbackBaseDelayMs,
    callbackMaxAttempts: config.callbackMaxAttempts,
    view: designView,
    onAttempt: (outcome) => metrics.callbackDeliveries.inc({ outcome }),
    transport: transport(),
    maxConcurrentSyntheses: config.voiceDesignConcurrency,
    node: config.nodeId,
    leaseMs: config.sessionLeaseMs,
    // Nodes sharing PostgreSQL take up each other's designs; one node works its own.
    pollMs: shared ? DESIGN_POLL_MS : null,
  });

  const arrangements = new ArrangementJobs(
    store,
    log,
    {
      delayMs: config.arrangementJobDelayMs,
      retryBaseMs: config.arrangementRetryBaseMs,
      maxAttempts: ARRANGEMENT_MAX_ATTEMPTS,
      // Nodes sharing PostgreSQL take up each other's jobs (docs/scaling.md).
      ...(shared ? { shared: { node: config.nodeId, leaseMs: config.sessionLeaseMs, pollMs: ARRANGEMENT_POLL_MS } } : {}),
    },
    now,
  );

  const deepgramCallbacks = new CallbackSweeper({ store, now }, log.child({ component: 'deepgram-callbacks' }));
  return { webhooks, designs, arrangements, deepgramCallbacks };
}

/** Start them all (once the routes are built, before the server listens). */
export async function startRouteWorkers(w: BuiltRouteWorkers, p: Pick<RouteWorkerParts, 'config' | 'store'>): Promise<void> {
  // The embedded store has one node: the data-dir lock proves any other claimant is gone.
  if (!p.config.sharedStore) await p.store.clearOtherWebhookClaims(p.config.nodeId);
  w.webhooks.start();
  await w.designs.resume();
  await w.arrangements.resume();
  w.deepgramCallbacks.start();
}

/** Stop them all: each stops taking work and waits for what it runs. */
export async function stopRouteWorkers(w: BuiltRouteWorkers): Promise<void> {
  await w.deepgramCallbacks.close();
  await w.arrangements.close();
  await w.designs.close();
  await w.webhooks.close();
}
